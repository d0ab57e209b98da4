"""The progress bar of one training run: updates done of those planned, and the latest loss, learning
rate, speed and epoch.

One bar per run, whatever the number of epochs: in a notebook a class sees one line per model it
trains, not one redrawn per epoch.  A small reporter, as Sockeye's Speedometer is: the trainer tells
it what each update did and it decides how to show it (a tqdm bar on a terminal, nothing when progress
is off or on ranks other than 0).  What a run keeps goes to metrics.jsonl, never only here.
"""

from __future__ import annotations

from typing import Optional

from tqdm import tqdm


class RunProgress:
    """A bar over a run's ``planned`` updates, starting at ``done`` (a resumed run)."""

    def __init__(self, planned: int, done: int = 0, enabled: bool = True) -> None:
        self.bar = tqdm(
            total=max(planned, done),
            initial=done,
            desc="training",
            disable=not enabled,
            unit="update",
            dynamic_ncols=True,
            leave=False,
        )

    def update(self, step: int, epoch: int, loss: Optional[float], lr: float, tokens_per_s: float) -> None:
        """The run stands at update ``step`` in ``epoch``; show the update's loss (None: skipped, so
        the count stays), learning rate and speed."""
        if step > self.bar.total:  # a time budget's run may train past the epochs' estimate
            self.bar.total = step
        self.bar.update(step - self.bar.n)
        if loss is not None:
            self.bar.set_postfix(epoch=epoch, loss=f"{loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{tokens_per_s:.0f}")

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
