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
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

from nmt import events
from nmt.config_sections import ModelConfig
from nmt.errors import UserError

FOLDER = "tb"


def require() -> None:
    """Fail in one line, naming the way out, when TensorBoard cannot be loaded.

    Called before the run directory is claimed, so a missing package costs nothing to fix.
    """
    try:
        import torch.utils.tensorboard  # noqa: F401  (imports the tensorboard package)
    except ImportError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"train.tensorboard is on but TensorBoard cannot be loaded ({reason}): "
                        f"pip install tensorboard, or turn it off with --set train.tensorboard=false") from None


def has_attention(model: ModelConfig) -> bool:
    """Whether a validation heat map shows anything: a uniform energy (preset none) attends
    equally to every source token by design, so its map would be a flat square."""
    return model.arch == "transformer" or model.attention.axes()["energy"] != "uniform"


class Board:
    """Writes the events of one run directory to ``RUN/tb`` (opened at the run's start event)."""

    def __init__(self, run_dir: Path, attention_image: bool = True) -> None:
        require()  # also for trainers built without run_training (scripts/bench_time_to_quality.py)
        self.run_dir = run_dir
        self.attention_image = attention_image  # off when the model's heat map is uniform
        self.writer: Optional[Any] = None  # torch.utils.tensorboard.SummaryWriter, once started

    def write(self, event: events.Event) -> None:
        """Mirror one event; a start event (re)opens the stream, a stop event flushes it."""
        if isinstance(event, events.Start):
            self._open(event.step)
        if self.writer is None:
            return
        if isinstance(event, events.Train):
            self._train(event)
        elif isinstance(event, events.Valid):
            self._valid(event)
        elif isinstance(event, events.Stop):
            self.writer.flush()

    def close(self) -> None:
        """Flush and close the event file (the run's end; a restart opens a new one)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def _open(self, step: int) -> None:
        from torch.utils.tensorboard import SummaryWriter  # here, not at the top: see require()

        self.close()
        # purge_step: drop what a crashed process logged after the checkpoint this run resumes from
        self.writer = SummaryWriter(str(self.run_dir / FOLDER), purge_step=step + 1 if step else None)

    def _train(self, e: events.Train) -> None:
        w = self.writer
        w.add_scalar("train/loss", e.loss, e.step)
        w.add_scalar("train/ppl", math.exp(min(e.loss, 50.0)), e.step)  # of the label-smoothed loss
        w.add_scalar("train/lr", e.lr, e.step)
        w.add_scalar("train/teacher_forcing", e.tf, e.step)
        w.add_scalar("train/tokens_per_s", e.tok_s, e.step)
        if e.grad_norm is not None:
            w.add_scalar("train/grad_norm", e.grad_norm, e.step)

    def _valid(self, e: events.Valid) -> None:
        w = self.writer
        for name in ("loss", "ppl", "bleu", "chrf"):
            w.add_scalar(f"valid/{name}", getattr(e, name), e.step)
        if e.samples:
            sample = e.samples[0]
            w.add_text("valid/sample", f"src: {sample['src']}  \nref: {sample['ref']}  \nhyp: {sample['hyp']}", e.step)
        heat_map = self.run_dir / "attention" / f"step{e.step:07d}.png"  # drawn by validation, if any
        if self.attention_image and heat_map.is_file():
            from matplotlib import image

            w.add_image("valid/attention", image.imread(heat_map)[..., :3], e.step, dataformats="HWC")
