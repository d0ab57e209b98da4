"""The few array operations the searches need, for torch tensors and for numpy arrays.

Greedy and beam search are written once, against :class:`ArrayOps`, and run on whatever
arrays the model gives: :func:`ops_for` picks numpy for a ``numpy.ndarray`` and torch for
anything else.  So an exported model (ONNX Runtime hands back numpy arrays) is searched by
the same code as a checkpoint, and without importing torch: the torch operations live in
:mod:`nmt.decode.arrays_torch`, imported the first time a tensor is searched.

Only what differs between the libraries goes through here (creating arrays, top-k, gather,
joining, sorting, in-place scatter).  What both spell alike stays plain Python on the
arrays: indexing and slicing, ``x[:, None]``, ``reshape``, ``shape``, arithmetic,
comparisons, ``~ & |``, ``sum``, ``all``, ``any``, ``max``, ``tolist``.

Ties in :meth:`ArrayOps.topk` and :meth:`ArrayOps.argmax`: numpy always takes the lower
index first.  torch promises no order among equal values (on CPU its top-k returns tied
entries in an order of its own), so the two agree exactly whenever the values differ,
which is all that decides a search's output: equal finite scores are improbable, and the
-inf entries (forbidden tokens, empty slots) never become a finished hypothesis.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from contextlib import AbstractContextManager
from functools import cache
from typing import Any, Literal, Optional, Protocol

import numpy as np

Array = Any
"""A ``torch.Tensor`` or a ``numpy.ndarray``; one search uses one kind throughout."""

DType = Literal["long", "float", "bool"]
"""Element types the searches create: int64 ids, float32 scores, masks."""


class ArrayOps(Protocol):
    """Operations on one library's arrays; the searches call these and plain operators only."""

    def inference(self) -> AbstractContextManager[Any]:
        """A context for a whole search (torch: ``inference_mode``; numpy: nothing)."""
        ...

    def full(self, shape: tuple[int, ...], value: float, dtype: DType, like: Array) -> Array:
        """A new array of ``shape`` filled with ``value``, where ``like`` lives (its device)."""
        ...

    def arange(self, n: int, like: Array) -> Array:
        """0, 1, ..., n - 1 as int64, where ``like`` lives."""
        ...

    def to_float(self, x: Array) -> Array:
        """``x`` as float32 (itself when it already is, and may be written in place)."""
        ...

    def to_long(self, x: Array) -> Array: ...

    def copy(self, x: Array) -> Array: ...

    def floor(self, x: Array) -> Array: ...

    def log(self, x: Array) -> Array: ...

    def isfinite(self, x: Array) -> Array: ...

    def clip(self, x: Array, low: Optional[float], high: Optional[float]) -> Array:
        """``x`` limited to [low, high]; a None bound is left open."""
        ...

    def lowest(self, x: Array) -> float:
        """The most negative finite value of ``x``'s float type."""
        ...

    def logsumexp(self, x: Array) -> Array:
        """log sum exp over the last axis, kept as a length-1 axis: (..., V) -> (..., 1)."""
        ...

    def masked_fill(self, x: Array, mask: Array, value: float) -> Array:
        """A copy of ``x`` holding ``value`` where ``mask`` (broadcast to ``x``) is True."""
        ...

    def topk(self, x: Array, k: int) -> tuple[Array, Array]:
        """The ``k`` largest values along the last axis and their indices, largest first."""
        ...

    def take_along(self, x: Array, idx: Array, axis: int) -> Array:
        """``x`` gathered along ``axis`` at ``idx``, whose other axes broadcast against ``x``'s."""
        ...

    def rows(self, x: Array, idx: Array) -> Array:
        """Rows ``idx`` (m,) of ``x``, along its first axis."""
        ...

    def cat(self, parts: Sequence[Array], axis: int) -> Array: ...

    def stack(self, parts: Sequence[Array], axis: int) -> Array: ...

    def repeat(self, x: Array, k: int, axis: int = 0) -> Array:
        """Each entry ``k`` times in a row along ``axis``: [a, b] -> [a, a, b, b]."""
        ...

    def nonzero(self, mask: Array) -> Array:
        """The indices (m,) where a 1-D ``mask`` is True, in increasing order."""
        ...

    def argsort(self, x: Array, axis: int = -1, descending: bool = False) -> Array: ...

    def argmax(self, x: Array) -> Array:
        """The index of the largest value along the last axis."""
        ...

    def windows(self, x: Array, n: int) -> Array:
        """Every run of ``n`` consecutive entries along axis 1: (N, t) -> (N, t - n + 1, n)."""
        ...

    def scatter_fill_(self, x: Array, idx: Array, value: float) -> Array:
        """Write ``value`` into ``x`` (N, V) at columns ``idx`` (N, m) of each row, in place; returns ``x``."""
        ...

    def host(self, x: Array) -> Array:
        """``x`` in host memory, for reading out results (numpy: ``x`` itself)."""
        ...

    def waits(self, x: Array) -> bool:
        """True where reading ``x``'s values on the host waits for a device (a GPU tensor), so a
        search should read them as seldom as it can; False for numpy and CPU tensors."""
        ...

    def where(self, mask: Array, x: Array, y: Array) -> Array:
        """``x`` where ``mask`` is True, else ``y`` (the three broadcast together)."""
        ...


_NUMPY_TYPES = {"long": np.int64, "float": np.float32, "bool": np.bool_}


class NumpyOps:
    """:class:`ArrayOps` on numpy arrays: float32 scores and int64 ids, as torch keeps them."""

    def inference(self) -> AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def full(self, shape: tuple[int, ...], value: float, dtype: DType, like: Array) -> Array:
        return np.full(shape, value, dtype=_NUMPY_TYPES[dtype])

    def arange(self, n: int, like: Array) -> Array:
        return np.arange(n, dtype=np.int64)

    def to_float(self, x: Array) -> Array:
        return x.astype(np.float32, copy=not x.flags.writeable)  # searches restrict logits in place

    def to_long(self, x: Array) -> Array:
        return x.astype(np.int64)

    def copy(self, x: Array) -> Array:
        return x.copy()

    def floor(self, x: Array) -> Array:
        return np.floor(x)

    def log(self, x: Array) -> Array:
        return np.log(x)

    def isfinite(self, x: Array) -> Array:
        return np.isfinite(x)

    def clip(self, x: Array, low: Optional[float], high: Optional[float]) -> Array:
        return np.clip(x, low, high)

    def lowest(self, x: Array) -> float:
        return float(np.finfo(x.dtype).min)

    def logsumexp(self, x: Array) -> Array:
        top = x.max(axis=-1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0).astype(x.dtype)  # a row of -inf stays -inf
        shifted = np.subtract(x, top)
        return top + np.log(np.exp(shifted, out=shifted).sum(axis=-1, keepdims=True))

    def masked_fill(self, x: Array, mask: Array, value: float) -> Array:
        out = x.copy()
        np.copyto(out, value, where=mask)
        return out

    def topk(self, x: Array, k: int) -> tuple[Array, Array]:
        """Ties go to the lower index, also at the k-th place (see the module docstring).

        A full sort of a (rows, vocabulary) array per step would cost O(V log V) a row, so
        the k-th largest value of each row is found by partitioning (O(V)), the entries at
        or above it are taken in index order, and only those k are sorted.  Where more
        entries than fit equal the k-th largest value (a row of -inf, say), the lowest
        indices among the tied ones fill the places left.
        """
        V = x.shape[-1]
        flat = x.reshape(-1, V)  # (N, V)
        if k >= V:
            idx = np.argsort(-flat, axis=-1, kind="stable")
        else:
            kth = np.partition(flat, V - k, axis=-1)[:, V - k : V - k + 1]  # (N, 1) the k-th largest value
            keep = flat >= kth  # (N, V) at least k per row
            crowded = np.flatnonzero(keep.sum(-1) > k)  # rows where the k-th place is a tie
            if len(crowded):
                part, bar = flat[crowded], kth[crowded]
                above, tied = part > bar, part == bar
                room = k - above.sum(-1, keepdims=True)  # places left for tied entries
                keep[crowded] = above | (tied & (np.cumsum(tied, axis=-1) <= room))
            idx = (np.flatnonzero(keep) % V).reshape(-1, k)  # (N, k) exactly k per row, lower index first
            order = np.argsort(-np.take_along_axis(flat, idx, -1), axis=-1, kind="stable")
            idx = np.take_along_axis(idx, order, -1)
        idx = idx.reshape(*x.shape[:-1], idx.shape[-1])
        return np.take_along_axis(x, idx, -1), idx

    def take_along(self, x: Array, idx: Array, axis: int) -> Array:
        return np.take_along_axis(x, idx, axis)

    def rows(self, x: Array, idx: Array) -> Array:
        return x[idx]

    def cat(self, parts: Sequence[Array], axis: int) -> Array:
        return np.concatenate(parts, axis)

    def stack(self, parts: Sequence[Array], axis: int) -> Array:
        return np.stack(parts, axis)

    def repeat(self, x: Array, k: int, axis: int = 0) -> Array:
        return np.repeat(x, k, axis)

    def nonzero(self, mask: Array) -> Array:
        return np.flatnonzero(mask)

    def argsort(self, x: Array, axis: int = -1, descending: bool = False) -> Array:
        return np.argsort(-x if descending else x, axis=axis, kind="stable")

    def argmax(self, x: Array) -> Array:
        return x.argmax(axis=-1)

    def windows(self, x: Array, n: int) -> Array:
        return np.lib.stride_tricks.sliding_window_view(x, n, axis=1)

    def scatter_fill_(self, x: Array, idx: Array, value: float) -> Array:
        np.put_along_axis(x, idx, value, axis=1)
        return x

    def host(self, x: Array) -> Array:
        return x

    def waits(self, x: Array) -> bool:
        return False

    def where(self, mask: Array, x: Array, y: Array) -> Array:
        return np.where(mask, x, y)


_NUMPY = NumpyOps()


@cache
def _torch_ops() -> ArrayOps:
    from nmt.decode.arrays_torch import TorchOps  # the first tensor searched loads torch

    return TorchOps()


def ops_for(x: Array) -> ArrayOps:
    """The operations for ``x``'s library: numpy for a ``numpy.ndarray``, else torch."""
    return _NUMPY if isinstance(x, np.ndarray) else _torch_ops()
