"""Several training processes (DistributedDataParallel): process group, rank helpers, re-launch.

``torchrun --nproc_per_node N -m nmt train ...`` starts N copies of the trainer and sets
``RANK``, ``LOCAL_RANK`` and ``WORLD_SIZE`` in each; :func:`process_group` reads them and
joins the group (NCCL on CUDA, one GPU per local rank; Gloo on CPU).  Without those variables
everything here is a no-op for one process, so the trainer has a single code path.

Division of labour: every rank computes gradients on its own share of each update's batches
(:func:`shard`) and DDP all-reduces them; rank 0 alone writes files (run directory, metrics,
checkpoints) and validates.  Anything that decides control flow (a non-finite loss, a stop
signal, the time budget, a validation score) is agreed through a collective, so all ranks
always take the same branch and meet at the same collectives.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, NoReturn, Optional, TypeVar

import torch
import torch.distributed as dist
from torch import nn

from nmt.util import runtime, torchrun
from nmt.util.errors import UserError

log = logging.getLogger(__name__)

T = TypeVar("T")

# Rank 0 validates while the others wait in the next collective; allow long validations.
TIMEOUT = timedelta(hours=1)


class RankZeroFailed(UserError):
    """Raised on ranks > 0 when rank 0 failed in work it does for everyone (it reports the error)."""


def shard(group: Sequence[T], rank: int, world_size: int) -> list[T]:
    """Rank ``rank``'s share of one update's global batches: items rank, rank + W, ...

    Strided, so every rank gets a share while the group has at least W batches, and the
    union over ranks is ``group`` exactly (what one process with W-fold accumulation sees).
    """
    return list(group[rank::world_size])


@dataclass(frozen=True)
class Context:
    """Where this process stands: rank, world size, device; collectives that are no-ops alone."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")
    backend: Optional[str] = None  # None: one process, no process group

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    def _reduce(self, values: Sequence[float], op: dist.ReduceOp.RedOpType) -> list[float]:
        if not self.enabled:
            return [float(v) for v in values]
        tensor = torch.tensor(list(values), dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor, op=op)
        return tensor.tolist()

    def all_sum(self, values: Sequence[float]) -> list[float]:
        """Element-wise sums over ranks (identical on every rank)."""
        return self._reduce(values, dist.ReduceOp.SUM)

    def all_max(self, values: Sequence[float]) -> list[float]:
        """Element-wise maxima over ranks; for flags (0/1), "any rank"."""
        return self._reduce(values, dist.ReduceOp.MAX)

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj`` (picklable), in rank order, on every rank."""
        if not self.enabled:
            return [obj]
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def on_main(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on rank 0 only and hand its result to every rank.

        An exception on rank 0 is raised there, and as :class:`RankZeroFailed` on the other
        ranks, instead of leaving them waiting for a rank that is gone.
        """
        if not self.enabled:
            return fn()
        box: list[Any] = [None]
        if self.is_main:
            try:
                box[0] = (True, fn())
            except Exception as exc:
                dist.broadcast_object_list([(False, f"{type(exc).__name__}: {exc}")], src=0)
                raise
        dist.broadcast_object_list(box, src=0)
        ok, value = box[0]
        if not ok:
            raise RankZeroFailed(f"rank 0 failed: {value}")
        return value

    def main_first(self, fn: Callable[[], T]) -> T:
        """Rank 0 runs ``fn`` first (e.g. prepares a corpus), then the other ranks run it too."""
        done: list[T] = []
        self.on_main(lambda: done.append(fn()))
        return done[0] if done else fn()

    def wrap(self, model: nn.Module) -> nn.Module:
        """The module that training forwards go through: DDP across ranks, else ``model`` itself.

        The model has no buffers and uses every parameter in each forward (checked in
        tests/integration/test_distributed.py), so DDP needs neither buffer broadcasts nor the per-step
        search for unused parameters.
        """
        if not self.enabled:
            return model
        ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)

    def no_sync(self, model: nn.Module, sync: bool) -> contextlib.AbstractContextManager:
        """Skip DDP's gradient all-reduce in this forward/backward unless ``sync`` (accumulation)."""
        if sync or not isinstance(model, nn.parallel.DistributedDataParallel):
            return contextlib.nullcontext()
        return model.no_sync()


def launched_by_torchrun() -> bool:
    return "WORLD_SIZE" in os.environ and "RANK" in os.environ


def is_main_process() -> bool:
    """True in a single process and on global rank 0 under torchrun (who prints summaries)."""
    return int(os.environ.get("RANK", "0")) == 0


@contextlib.contextmanager
def process_group(device_name: str) -> Iterator[Context]:
    """The process context for a run; joins (and finally leaves) the group under torchrun.

    ``device_name`` is ``train.device``; under torchrun a CUDA device becomes
    ``cuda:LOCAL_RANK``.  Ranks > 0 log warnings and errors only, and first wait for
    ``MASTER_ADDR:MASTER_PORT`` for ``NMT_RENDEZVOUS_TIMEOUT`` seconds at most
    (:func:`nmt.util.torchrun.wait_for_master`).
    """
    world_size = torchrun.world_size()
    if world_size <= 1:
        yield Context(device=runtime.select_device(device_name))
        return
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    device = runtime.select_device(device_name, local_rank=local_rank)
    backend = "nccl" if device.type == "cuda" else "gloo"
    if rank > 0:  # rank 0 (or torchrun's agent) keeps the store; say so while it is not there, and give up
        torchrun.wait_for_master(rank, world_size, torchrun.rendezvous_timeout())
    dist.init_process_group(backend, rank=rank, world_size=world_size, timeout=TIMEOUT)
    package_log = logging.getLogger("nmt")
    level = package_log.level
    if rank > 0:
        package_log.setLevel(logging.WARNING)
    try:
        yield Context(rank, world_size, local_rank, device, backend)
        # Leave together: a rank tearing its Gloo connections down while a peer is still
        # finishing its last collective can abort that peer ("terminate called ...").
        dist.barrier()
    finally:
        package_log.setLevel(level)
        dist.destroy_process_group()


def end_rank(code: int) -> NoReturn:
    """End this worker of a multi-process run now, without the interpreter's teardown.

    Once DDP has wrapped a model, torch (2.13) keeps the Gloo backend alive after
    ``destroy_process_group``: its worker and socket threads (``pt_gloo_runloop``,
    ``gloo_tcp_loop``) still run, so they would meet the interpreter while it shuts down, which
    can abort a process that has already finished and saved ("terminate called without an
    active exception", SIGABRT; pytorch/pytorch#38228).  Every file of the run is closed by
    now; logging and the standard streams are flushed here, then the process ends.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed or gone: nothing left to save
            stream.flush()
    os._exit(code)


def torchrun_argv(nproc: int, nmt_args: Sequence[str]) -> list[str]:
    """The command that runs ``nmt <nmt_args>`` in ``nproc`` processes on this machine.

    ``--standalone`` gives a private rendezvous on a free local port, so several jobs can
    share a machine.
    """
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        str(nproc),
        "-m",
        "nmt",
        *nmt_args,
    ]


def relaunch(nproc: int, nmt_args: Sequence[str]) -> NoReturn:
    """Replace this process by torchrun running ``nmt <nmt_args>`` in ``nproc`` processes.

    Replacing (exec) rather than waiting on a child leaves signal handling to torchrun: a
    Ctrl-C reaches it, and it forwards one SIGINT to every worker, which stop together and
    save (within torchrun's ``--shutdown_timeout``, 30 s by default).
    """
    if launched_by_torchrun():
        raise UserError("--nproc starts torchrun itself; under torchrun, leave it out")
    argv = torchrun_argv(nproc, nmt_args)
    log.info("running: %s", " ".join(argv))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)
