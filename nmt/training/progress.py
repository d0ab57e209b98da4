"""The progress bar of one training epoch: batches done, and the latest loss, learning rate and speed.

A small reporter, as Sockeye's Speedometer is: the trainer tells it what each update did and
it decides how to show it (a tqdm bar on a terminal, nothing when progress is off or on
ranks other than 0).  What a run keeps goes to metrics.jsonl, never only here.
"""

from __future__ import annotations

from typing import Optional

from tqdm import tqdm


class EpochProgress:
    """A bar over one epoch's ``total`` global batches, starting at ``done`` (a resumed epoch)."""

    def __init__(self, epoch: int, total: int, done: int = 0, enabled: bool = True) -> None:
        self.bar = tqdm(
            total=total,
            initial=done,
            desc=f"epoch {epoch}",
            disable=not enabled,
            unit="batch",
            dynamic_ncols=True,
            leave=False,
        )

    def update(self, batches: int, loss: Optional[float], lr: float, tokens_per_s: float) -> None:
        """Count ``batches`` more; show the update's loss (None: skipped), learning rate and speed."""
        self.bar.update(batches)
        if loss is not None:
            self.bar.set_postfix(loss=f"{loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{tokens_per_s:.0f}")

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> EpochProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
