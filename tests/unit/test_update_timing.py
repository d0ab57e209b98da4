"""Seconds per training update on real batches (nmt.training.timing), on the toy corpus with tiny models."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from conftest import TOY_TRANSFORMER
from nmt import config as config_mod
from nmt.data.dataset import load_split
from nmt.data.pipeline import Corpus
from nmt.data.prepare import load_prepared
from nmt.training import timing

CPU = torch.device("cpu")
TINY_RNN = ["model.emb_size=16", "model.hidden_size=16", "train.max_tokens=60"]
TINY_TRANSFORMER = [f"{k.replace('__', '.')}={v}" for k, v in TOY_TRANSFORMER.items()] + ["train.max_tokens=60"]


@pytest.fixture()
def corpus(toy_prepared: Path, tmp_path: Path) -> Corpus:
    """The toy corpus's training split (its id cache in tmp_path, so the shared folder stays as it is)."""
    manifest, src_tok, tgt_tok = load_prepared(toy_prepared)
    train = load_split(toy_prepared, "train", "de", "en", src_tok, tgt_tok, cache_dir=tmp_path)
    return Corpus(toy_prepared, manifest, src_tok, tgt_tok, {"train": train})


def count_optimizer_steps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one at each optimizer step the timing takes (its apply_gradients, wrapped)."""
    steps: list[int] = []
    apply = timing.apply_gradients

    def counted(*args, **kwargs):
        steps.append(1)
        return apply(*args, **kwargs)

    monkeypatch.setattr(timing, "apply_gradients", counted)
    return steps


@pytest.mark.parametrize("overrides", [TINY_RNN, TINY_TRANSFORMER], ids=["rnn", "transformer"])
def test_the_updates_asked_are_timed_after_the_warmup(corpus, monkeypatch, overrides):
    steps = count_optimizer_steps(monkeypatch)
    cfg = config_mod.load(None, overrides)
    result = timing.time_updates(cfg, corpus, updates=3, warmup=2, device=CPU, amp=None)
    assert len(steps) == 5 and result.updates == 3 and result.warmup == 2  # one optimizer step per update
    assert result.seconds > 0 and result.seconds_per_update == pytest.approx(result.seconds / 3)
    assert result.tokens > 0 and result.tokens_per_second > 0 and result.params > 0
    assert math.isfinite(result.loss_first) and math.isfinite(result.loss_last)
    assert result.threads == torch.get_num_threads() and result.peak_gpu_mb is None


def test_accumulated_updates_take_the_same_batches_and_the_same_start(corpus):
    cfg = config_mod.load(None, TINY_RNN)
    one = timing.time_updates(cfg, corpus, updates=4, warmup=0, device=CPU, amp=None)
    two = timing.time_updates(cfg, corpus, updates=2, warmup=0, device=CPU, amp=None, batches_per_update=2)
    again = timing.time_updates(cfg, corpus, updates=4, warmup=0, device=CPU, amp=None)
    assert one.tokens == two.tokens  # four batches either way, the first of epoch 0's order
    assert one.loss_first == again.loss_first and one.loss_last == again.loss_last  # seeded: the same model


def test_same_batches_warms_up_on_the_batches_then_timed(corpus, monkeypatch):
    """The GPU report's untimed pass: the warm-up runs over the timed updates' own batches (cycled),
    so the timed updates are the first of epoch 0's order, as with no warm-up at all."""
    cfg = config_mod.load(None, TINY_RNN)
    cold = timing.time_updates(cfg, corpus, updates=3, warmup=0, device=CPU, amp=None)
    steps = count_optimizer_steps(monkeypatch)
    warm = timing.time_updates(cfg, corpus, updates=3, warmup=5, device=CPU, amp=None, same_batches=True)
    assert len(steps) == 8 and warm.tokens == cold.tokens
    assert warm.loss_first == cold.loss_first  # the warm-up's first update is the first timed batch
    assert warm.warmup_seconds > 0 and cold.warmup_seconds >= 0 and warm.warmup_peak_gpu_mb is None


def test_nothing_to_time_is_refused(corpus):
    cfg = config_mod.load(None, TINY_RNN)
    with pytest.raises(ValueError):
        timing.time_updates(cfg, corpus, updates=0, warmup=1, device=CPU, amp=None)
