"""TensorBoard view of a run: every metrics.jsonl event, also as TensorBoard scalars and images.

``metrics.jsonl`` stays the record (the reports and scripts read it); this module mirrors
the same typed events into ``runs/<name>/tb/`` for people who watch runs in TensorBoard
(``tensorboard --logdir runs``).  The trainer hands it each event it records, on rank 0
only.  A resumed run opens the folder with ``purge_step`` set just past the resumed step,
so the updates a crashed process logged after its last checkpoint are dropped and the
stream goes on without duplicated steps.

``torch.utils.tensorboard`` is imported only when the option is on, so ``train.tensorboard:
false`` runs where the package is missing (the GPU benchmark machine); with it on, a missing
package is a one-line user error before the run directory is touched.

The writer writes from its own thread; a failed write there (a full disk) would print that
thread's traceback and surface later in the trainer as an internal error.  The board keeps
that thread's exceptions from the default hook and raises them, as one user error, at the
next call the trainer makes (see :meth:`Board._guard`).
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from nmt.config.model_sections import ModelConfig
from nmt.run import events
from nmt.run.paths import RunPaths
from nmt.util.errors import UserError
from nmt.util.fileio import DiskFullError, is_disk_full

if TYPE_CHECKING:  # imported when the option is on only, see require()
    from torch.utils.tensorboard import SummaryWriter

log = logging.getLogger(__name__)

EVENT_FILE = re.compile(r"events\.out\.tfevents\.(\d{10})\.")
LONGEST_WAIT_S = 2.0  # a clock set back by more than this is not worth waiting for


def wait_for_a_later_file_name(folder: Path) -> None:
    """Wait, if needed, until a new event file's name sorts after every one already in ``folder``.

    TensorBoard reads a folder's event files in the order of their names, which start with the
    whole second the file was opened, then the host, the process id and a per-process counter.
    A run resumed within the same second as the last one (the tests do; so may a script) would
    sort by pid or by a counter compared as text ("10" < "9"), so the resumed stream could be
    read before the one it purges.  Opening the file in a later second keeps the write order.
    """
    seconds = [int(m.group(1)) for f in folder.glob("events.out.tfevents.*") if (m := EVENT_FILE.match(f.name))]
    if not seconds:
        return
    wait = max(seconds) + 1 - time.time()
    if 0 < wait <= LONGEST_WAIT_S:
        time.sleep(wait)


ExceptHook = Callable[[threading.ExceptHookArgs], object]
"""What ``threading.excepthook`` holds."""


def require() -> None:
    """Fail in one line, naming the way out, when TensorBoard cannot be loaded.

    Called before the run directory is claimed, so a missing package costs nothing to fix.
    """
    try:
        import torch.utils.tensorboard  # noqa: F401  (imports the tensorboard package)
    except ImportError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(
            f"train.tensorboard is on but TensorBoard cannot be loaded ({reason}): "
            f"pip install tensorboard, or turn it off with --set train.tensorboard=false"
        ) from None


def has_attention(model: ModelConfig) -> bool:
    """Whether a validation heat map shows anything: a uniform energy (preset none) attends
    equally to every source token by design, so its map would be a flat square."""
    return model.arch == "transformer" or model.attention.axes()["energy"] != "uniform"


def is_writer_thread(thread: Optional[threading.Thread]) -> bool:
    """Whether ``thread`` is one of the tensorboard package's own (its event file writer)."""
    return thread is not None and type(thread).__module__.split(".")[0] == "tensorboard"


class Board:
    """Writes the events of one run directory to ``RUN/tb`` (opened at the run's start event)."""

    def __init__(self, run_dir: Path, attention_image: bool = True) -> None:
        require()  # also for trainers built without run_training (scripts/bench_time_to_quality.py)
        self.run_dir = run_dir
        self.attention_image = attention_image  # off when the model's heat map is uniform
        self.writer: Optional[SummaryWriter] = None  # once started
        self.failure: Optional[BaseException] = None  # what the writer's thread raised, not yet reported
        self._hook: Optional[ExceptHook] = None  # our threading.excepthook while open
        self._previous_hook: Optional[ExceptHook] = None  # the one it forwards to

    def write(self, event: events.Event) -> None:
        """Mirror one event; a start event (re)opens the stream, a stop event flushes it."""
        with self._guard():
            if isinstance(event, events.Start):
                self._open(event.step)
            if self.writer is None:
                return
            if isinstance(event, events.Train):
                self._train(self.writer, event)
            elif isinstance(event, events.Valid):
                self._valid(self.writer, event)
            elif isinstance(event, events.Stop):
                self.writer.flush()

    def close(self, quiet: bool = False) -> None:
        """Flush and close the event file (the run's end; a restart opens a new one).

        ``quiet``: the run already failed; an error here is logged, not raised, so it cannot
        hide the first one.
        """
        writer, self.writer = self.writer, None
        try:
            with self._guard():
                if writer is not None:
                    writer.close()
        except Exception as exc:
            if not quiet:
                raise
            log.debug("TensorBoard writer failed while closing: %s", exc)
        finally:
            self._release_hook()
            self.failure = None

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Report a failed write, in this call or earlier in the writer's thread, as one user error."""
        try:
            yield
        except Exception as exc:  # tensorboard re-raises its thread's error here, or fails itself
            error = self._error(exc)
            if error is exc:
                raise
            self.failure = None  # reported now
            raise error from None
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise self._error(failure) from None

    def _error(self, exc: BaseException) -> BaseException:
        """The user error for a failed write; anything but a write error is returned as it is (a bug)."""
        folder = RunPaths(self.run_dir).tensorboard
        if isinstance(exc, UserError):  # already reported as one (a nested call)
            return exc
        if is_disk_full(exc, folder):
            return DiskFullError(
                f"disk full: no space left on device while writing TensorBoard events to {folder} "
                f"(earlier checkpoints are intact); free space and resume with nmt train --resume "
                f"{self.run_dir}, or add --set train.tensorboard=false"
            )
        if isinstance(exc, OSError):
            return UserError(f"cannot write TensorBoard events to {folder}: {exc.strerror or exc}")
        return exc

    def _catch_thread_errors(self) -> None:
        """Keep the writer thread's exceptions for :meth:`_guard` instead of printing a traceback."""
        if self._hook is not None:
            return
        previous = threading.excepthook

        def hook(args: threading.ExceptHookArgs) -> None:
            if self._hook is hook and is_writer_thread(args.thread):
                self.failure = args.exc_value
            else:
                previous(args)

        self._hook, self._previous_hook = hook, previous
        threading.excepthook = hook

    def _release_hook(self) -> None:
        """Give ``threading.excepthook`` back (if another hook was set on top, ours now only forwards)."""
        if self._previous_hook is not None and threading.excepthook is self._hook:
            threading.excepthook = self._previous_hook
        self._hook = self._previous_hook = None

    def _open(self, step: int) -> None:
        from torch.utils.tensorboard import SummaryWriter  # here, not at the top: see require()

        self.close()
        wait_for_a_later_file_name(RunPaths(self.run_dir).tensorboard)
        self._catch_thread_errors()  # before the writer's thread starts: its first write may fail
        # purge_step: drop what a crashed process logged after the checkpoint this run resumes from
        self.writer = SummaryWriter(str(RunPaths(self.run_dir).tensorboard), purge_step=step + 1 if step else None)

    @staticmethod
    def _train(w: SummaryWriter, e: events.Train) -> None:
        w.add_scalar("train/loss", e.loss, e.step)
        w.add_scalar("train/ppl", math.exp(min(e.loss, 50.0)), e.step)  # of the label-smoothed loss
        w.add_scalar("train/lr", e.lr, e.step)
        w.add_scalar("train/teacher_forcing", e.tf, e.step)
        w.add_scalar("train/tokens_per_s", e.tok_s, e.step)
        if e.grad_norm is not None:
            w.add_scalar("train/grad_norm", e.grad_norm, e.step)

    def _valid(self, w: SummaryWriter, e: events.Valid) -> None:
        for name in ("loss", "ppl", "bleu", "chrf"):
            w.add_scalar(f"valid/{name}", getattr(e, name), e.step)
        if e.length_ratio is not None:
            w.add_scalar("valid/length_ratio", e.length_ratio, e.step)
        if e.samples:
            sample = e.samples[0]
            w.add_text("valid/sample", f"src: {sample['src']}  \nref: {sample['ref']}  \nhyp: {sample['hyp']}", e.step)
        heat_map = RunPaths(self.run_dir).attention_map(e.step)  # drawn by validation, if any
        if self.attention_image and heat_map.is_file():
            from matplotlib import image

            w.add_image("valid/attention", image.imread(heat_map)[..., :3], e.step, dataformats="HWC")
