"""Stop signals during training (nmt.training.signals) and the epoch's progress reporter."""

from __future__ import annotations

import signal

import pytest

from nmt.training.progress import RunProgress
from nmt.training.signals import STOP_SIGNALS, StopSignals


@pytest.mark.parametrize("signum", STOP_SIGNALS)
def test_the_first_signal_is_recorded_not_fatal_and_a_second_would_abort(signum):
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    with StopSignals() as signals:
        assert signals.received == 0
        signal.raise_signal(signum)  # runs the handler before it returns
        assert signals.received == signum
        assert signal.getsignal(signum) is signal.SIG_DFL  # again: the default, which ends the process
    assert {s: signal.getsignal(s) for s in STOP_SIGNALS} == before


def test_leaving_the_block_by_an_error_restores_the_handlers():
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    with pytest.raises(RuntimeError), StopSignals():
        assert signal.getsignal(signal.SIGTERM) != before[signal.SIGTERM]
        raise RuntimeError("boom")
    assert {s: signal.getsignal(s) for s in STOP_SIGNALS} == before


def test_one_progress_bar_counts_the_runs_updates_from_where_it_stands():
    """One bar per run (not per epoch), resumed where the run stopped; a skipped update (loss None)
    leaves the count, and a time budget's run past the epochs' estimate grows the total."""
    with RunProgress(planned=10, done=4, enabled=True) as bar:
        bar.update(5, epoch=1, loss=1.5, lr=1e-3, tokens_per_s=100.0)
        bar.update(5, epoch=2, loss=None, lr=1e-3, tokens_per_s=0.0)  # skipped: the step stays
        assert (bar.bar.n, bar.bar.total) == (5, 10)
        bar.update(12, epoch=3, loss=1.2, lr=1e-3, tokens_per_s=90.0)
        assert (bar.bar.n, bar.bar.total) == (12, 12)
