"""The torch side of :mod:`nmt.decode.arrays`: the operations the searches need, on tensors.

Imported only when a search first meets a tensor (:func:`nmt.decode.arrays.ops_for`), so
searching numpy arrays never loads torch.  Every operation is the tensor call the searches
made before they were written against :class:`~nmt.decode.arrays.ArrayOps`: on a GPU they
add no copy and no wait for the device.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Optional

import torch
from torch import Tensor

_TYPES = {"long": torch.long, "float": torch.float32, "bool": torch.bool}


class TorchOps:
    """:class:`~nmt.decode.arrays.ArrayOps` on tensors; new tensors go to the device of ``like``."""

    def inference(self) -> AbstractContextManager[Any]:
        return torch.inference_mode()

    def full(self, shape: tuple[int, ...], value: float, dtype: str, like: Tensor) -> Tensor:
        return torch.full(shape, value, dtype=_TYPES[dtype], device=like.device)

    def arange(self, n: int, like: Tensor) -> Tensor:
        return torch.arange(n, device=like.device)

    def to_float(self, x: Tensor) -> Tensor:
        return x.float()

    def to_long(self, x: Tensor) -> Tensor:
        return x.long()

    def copy(self, x: Tensor) -> Tensor:
        return x.clone()

    def floor(self, x: Tensor) -> Tensor:
        return x.floor()

    def log(self, x: Tensor) -> Tensor:
        return x.log()

    def isfinite(self, x: Tensor) -> Tensor:
        return torch.isfinite(x)

    def clip(self, x: Tensor, low: Optional[float], high: Optional[float]) -> Tensor:
        return x.clamp(low, high)

    def lowest(self, x: Tensor) -> float:
        return torch.finfo(x.dtype).min

    def logsumexp(self, x: Tensor) -> Tensor:
        return torch.logsumexp(x, dim=-1, keepdim=True)

    def masked_fill(self, x: Tensor, mask: Tensor, value: float) -> Tensor:
        return x.masked_fill(mask, value)

    def topk(self, x: Tensor, k: int) -> tuple[Tensor, Tensor]:
        values, indices = x.topk(k, dim=-1)
        return values, indices

    def take_along(self, x: Tensor, idx: Tensor, axis: int) -> Tensor:
        shape = list(x.shape)
        shape[axis] = idx.size(axis)
        if list(idx.shape) != shape:  # gather wants the index at full size: broadcast it (a view)
            idx = idx.expand(shape)
        return x.gather(axis, idx)

    def rows(self, x: Tensor, idx: Tensor) -> Tensor:
        return x.index_select(0, idx)

    def cat(self, parts: Sequence[Tensor], axis: int) -> Tensor:
        return torch.cat(list(parts), axis)

    def stack(self, parts: Sequence[Tensor], axis: int) -> Tensor:
        return torch.stack(list(parts), axis)

    def repeat(self, x: Tensor, k: int, axis: int = 0) -> Tensor:
        return x.repeat_interleave(k, dim=axis)

    def nonzero(self, mask: Tensor) -> Tensor:
        return mask.nonzero().squeeze(1)

    def argsort(self, x: Tensor, axis: int = -1, descending: bool = False) -> Tensor:
        return x.argsort(dim=axis, descending=descending)

    def argmax(self, x: Tensor) -> Tensor:
        return x.max(dim=-1).indices

    def windows(self, x: Tensor, n: int) -> Tensor:
        return x.unfold(1, n, 1)

    def scatter_fill_(self, x: Tensor, idx: Tensor, value: float) -> Tensor:
        return x.scatter_(1, idx, value)

    def host(self, x: Tensor) -> Tensor:
        return x.cpu()

    def waits(self, x: Tensor) -> bool:
        return x.device.type != "cpu"

    def where(self, mask: Tensor, x: Tensor, y: Tensor) -> Tensor:
        return torch.where(mask, x, y)
