"""Energies: what scores mapped queries against mapped keys, nmt's own and a user's alike.

An energy is an :class:`Energy` module registered under a name (:func:`register_attention`);
``model.attention.energy`` (or ``type``) names it.  nmt's seven energies below are registered by this
module through the same call a user makes (coverage, local_p and local_m by their own modules), so
every attention test runs the seam.
Each scores queries (B, h, T, D_q) against keys (B, h, S, D_k) as (B, h, T, S); the pooling
(masked softmax, weighted sum of values) is :class:`nmt.model.attention.Attention`'s.

Shapes: B batch, h heads, T queries, S keys, D size per head, A = h D the mapped size.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, NamedTuple, Optional

import torch
from pydantic import BaseModel
from torch import Tensor, nn

from nmt.config.attention_space import ATTENTIONS, register_attention

__all__ = [
    "ATTENTIONS",
    "AdditiveEnergy",
    "BilinearEnergy",
    "DotEnergy",
    "Energy",
    "GaussianEnergy",
    "LocationEnergy",
    "ScaledDotEnergy",
    "ScoreContext",
    "UniformEnergy",
    "additive_energy",
    "dot_energy",
    "energy_class",
    "gaussian_energy",
    "merge_heads",
    "register_attention",
    "scaled_dot_energy",
    "split_heads",
]


# ---------------------------------------------------------------- the equations, as functions


def dot_energy(q: Tensor, k: Tensor) -> Tensor:
    """Dot product q^T k (Luong et al. 2015); also bilinear q^T W k once the keys are W k."""
    return q @ k.transpose(-1, -2)


def scaled_dot_energy(q: Tensor, k: Tensor) -> Tensor:
    """Scaled dot product q^T k / sqrt(D) (Vaswani et al. 2017); keeps the variance near 1."""
    return dot_energy(q, k) / math.sqrt(q.size(-1))


def additive_energy(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Additive ("mlp", "concat") energy v^T tanh(q + k), one v per head.

    q (..., T, D), k (..., S, D), v (D,) or (h, D) when the leading axes are (B, h).
    With q = W s and k = U h + b this is Bahdanau et al. (2015); Luong's concat
    v^T tanh(W [s; h]) is the same function, since W [s; h] = W_s s + W_h h.
    """
    hidden = torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3))  # (..., T, S, D)
    if v.dim() == 2:  # (h, D) -> (h, 1, D, 1): broadcasts over B and T
        return (hidden @ v.view(v.size(0), 1, -1, 1)).squeeze(-1)
    return hidden @ v


def gaussian_energy(q: Tensor, k: Tensor) -> Tensor:
    """Gaussian kernel score -||q - k||^2 / 2 (Nadaraya-Watson kernel regression).

    Expanded as q.k - |q|^2/2 - |k|^2/2: one matrix product, no (..., T, S, D) tensor.
    """
    qq = q.pow(2).sum(-1, keepdim=True)  # (..., T, 1)
    kk = k.pow(2).sum(-1).unsqueeze(-2)  # (..., 1, S)
    return dot_energy(q, k) - 0.5 * (qq + kk)


def split_heads(x: Tensor, heads: int) -> Tensor:
    """(B, N, h*D) -> (B, h, N, D)."""
    return x.view(x.size(0), x.size(1), heads, -1).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """(B, h, N, D) -> (B, N, h*D)."""
    return x.transpose(1, 2).reshape(x.size(0), x.size(2), -1)


# ---------------------------------------------------------------- the module an energy is


class ScoreContext(NamedTuple):
    """What an energy with ``reads_context`` gets besides the queries and keys (its third argument).

    ``state`` is the attention's own state across decoder steps (``stateful`` energies): what
    :meth:`Energy.init_state` made for the sentence and :meth:`Energy.next_state` updated at every step
    since, one row per sentence (or hypothesis: beam search reorders it with the decoder state).
    """

    mask: Tensor  # (B, S) True at real keys, or (B, T, S) per query
    lengths: Tensor  # (B,) real keys per sentence (float, for position arithmetic)
    state: Optional[Tensor]  # (B, ...) the attention's own state; None for a stateless energy


class Energy(nn.Module):
    """Scores of queries against keys: subclass it, write :meth:`forward`, register the class.

    ``query_size`` and ``key_size`` are the mapped sizes A_q, A_k (before the split into
    ``heads``); forward sees one D = A/h slice per head.  Class attributes tell the attention
    what the energy reads, so that a config it cannot work with is refused at load:

    - ``reads_query`` / ``reads_keys``: False where the scores ignore one side (a linear map
      on that side would be an unused parameter);
    - ``same_size``: the energy compares query and key element by element (A_q = A_k);
    - ``defaults``: the axes a config gets when its ``model.attention.type`` names this energy
      (e.g. ``{"query_map": "linear", "key_map": "linear"}``); unnamed axes are ``custom``'s.
    - ``Params``: a pydantic model of the energy's own options (``rank: int = 8``), read from
      ``model.attention.params`` (or ``model.transformer.params``), validated with the config and
      passed to ``__init__`` as ``params``; None (the default) for an energy without options.

    - ``reads_context``: forward takes a third argument, a :class:`ScoreContext` (the mask, the
      sentences' lengths and the attention's own state), and :meth:`window` may narrow the keys a
      query sees (Luong et al.'s local attention);
    - ``stateful``: the energy keeps a state across decoder steps (coverage: the sum of earlier
      weights), made by :meth:`init_state` per sentence and advanced by :meth:`next_state` after
      every step.  nmt carries it in the decoder state, so beam search, batched decoding, ensembles
      and ONNX exports reorder and pass it like the RNN's own; nothing may be kept on the module.
      A stateful energy runs in the RNN decoder's cross-attention only (one query per step).

    Linear layers inside it are Xavier-initialized like every other (``nmt.model.build.init_weights``);
    other parameters keep what ``__init__`` gives them.
    """

    reads_query: ClassVar[bool] = True
    reads_keys: ClassVar[bool] = True
    same_size: ClassVar[bool] = True
    defaults: ClassVar[dict[str, Any]] = {}
    Params: ClassVar[Optional[type[BaseModel]]] = None  # the energy's own options (model.attention.params)
    options: ClassVar[tuple[str, ...]] = ()  # nmt's own energies: attention options they take
    key_bias: ClassVar[bool] = False  # the key map carries the bias (the additive energy's b)
    reads_context: ClassVar[bool] = False  # forward(q, k, context) with a ScoreContext
    stateful: ClassVar[bool] = False  # init_state / next_state carry a state across decoder steps

    def __init__(self, query_size: int, key_size: int, heads: int = 1) -> None:
        super().__init__()
        self.query_size, self.key_size, self.heads = query_size, key_size, heads

    def prepare_keys(self, keys: Tensor) -> Tensor:
        """Mapped keys (B, S, A_k), once per batch: work on the keys alone belongs here (the bilinear W k)."""
        return keys

    def forward(self, q: Tensor, k: Tensor) -> Tensor:  # pragma: no cover - every energy defines it
        """Queries (B, h, T, D_q) and keys (B, h, S, D_k) -> scores (B, h, T, S)
        (``reads_context``: ``forward(q, k, context)``)."""
        raise NotImplementedError(f"{type(self).__name__} must define forward(q, k)")

    def window(self, q: Tensor, context: ScoreContext) -> Optional[Tensor]:
        """``reads_context``: the keys each query may see, (B, T, S) bool, or None for all (local attention)."""
        return None

    def init_state(self, mask: Tensor) -> Tensor:
        """``stateful``: the state before the first step of sentences with real keys ``mask`` (B, S): (B, ...)."""
        raise NotImplementedError(f"{type(self).__name__} is stateful and must define init_state(mask)")

    def next_state(self, state: Tensor, weights: Tensor, context: ScoreContext) -> Tensor:
        """``stateful``: the state after a step whose weights (mean over heads) were ``weights`` (B, S)."""
        raise NotImplementedError(f"{type(self).__name__} is stateful and must define next_state(state, weights, ...)")

    def reach(self, length: int, device: torch.device) -> Optional[Tensor]:
        """Key positions (S,) this energy can score, None for all (the location energy's table ends)."""
        return None

    def after_init(self) -> None:
        """Called after the Xavier initialization of the Linear layers inside (to rescale them)."""


def energy_class(name: str) -> type[Energy]:
    """The Energy class registered as ``name`` (import path names import if allowed)."""
    target = ATTENTIONS.get(name).target
    if not (isinstance(target, type) and issubclass(target, Energy)):
        raise TypeError(f"attention {name!r} is {target!r}, not a subclass of nmt.Energy")
    return target


# ---------------------------------------------------------------- nmt's own, registered as a user's


@register_attention("uniform")
class UniformEnergy(Energy):
    """No attention: equal scores, so the context is the mean of the real positions."""

    reads_query = reads_keys = same_size = False

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return q.new_zeros(q.size(0), q.size(1), q.size(2), k.size(2))


@register_attention("dot")
class DotEnergy(Energy):
    """q^T k (Luong et al. 2015); with ``learn_scale`` times a learned e^s per head."""

    options = ("learn_scale",)
    equation = staticmethod(dot_energy)

    def __init__(self, query_size: int, key_size: int, heads: int = 1, learn_scale: bool = False) -> None:
        super().__init__(query_size, key_size, heads)
        self.log_scale = nn.Parameter(torch.zeros(heads)) if learn_scale else None  # s, (h,), from 0

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        scores = self.equation(q, k)
        if self.log_scale is None:
            return scores
        return scores.float() * self.log_scale.exp().view(1, -1, 1, 1)  # float32, as the softmax runs


@register_attention("scaled_dot")
class ScaledDotEnergy(DotEnergy):
    """q^T k / sqrt(D) (Vaswani et al. 2017); with ``learn_scale`` times a learned e^s per head."""

    equation = staticmethod(scaled_dot_energy)


@register_attention("bilinear")
class BilinearEnergy(Energy):
    """q^T W k (Luong's general), W applied to the keys once per batch.

    ``scale_bilinear``: W = W' / sqrt(D), the same map moved sqrt(D) times slower by Adam, so the
    scores do not outgrow the softmax; ``bilinear_start`` says where W starts (docs/attention_diagnosis.md).
    """

    same_size = False
    options = ("scale_bilinear", "bilinear_start")

    def __init__(
        self,
        query_size: int,
        key_size: int,
        heads: int = 1,
        scale_bilinear: bool = False,
        bilinear_start: str = "xavier",
    ) -> None:
        super().__init__(query_size, key_size, heads)
        if bilinear_start not in ("xavier", "scaled"):
            raise ValueError(f"unknown bilinear_start {bilinear_start!r}; valid options: xavier, scaled")
        self.bilinear = nn.Linear(key_size, query_size, bias=False)  # W
        self.bilinear_gain = (query_size // heads) ** -0.5 if scale_bilinear else 1.0
        self.bilinear_init_gain = 1.0 / self.bilinear_gain if bilinear_start == "xavier" else 1.0

    def prepare_keys(self, keys: Tensor) -> Tensor:
        return self.bilinear(keys) * self.bilinear_gain

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return dot_energy(q, k)

    def after_init(self) -> None:
        with torch.no_grad():
            self.bilinear.weight.mul_(self.bilinear_init_gain)


@register_attention("mlp")
class AdditiveEnergy(Energy):
    """v^T tanh(q + k): Bahdanau et al. (2015) with q = W s, k = U h + b; one v per head."""

    key_bias = True

    def __init__(self, query_size: int, key_size: int, heads: int = 1) -> None:
        super().__init__(query_size, key_size, heads)
        bound = query_size**-0.5
        self.v = nn.Parameter(torch.empty(query_size).uniform_(-bound, bound))  # uniform in +-A^-1/2

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        v = self.v if self.heads == 1 else self.v.view(self.heads, -1)
        return additive_energy(q, k, v.to(q.dtype))


@register_attention("gaussian")
class GaussianEnergy(Energy):
    """-||q - k||^2 / 2, the Gaussian kernel (``scale_gaussian`` scales the maps, in the attention)."""

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return gaussian_energy(q, k)


@register_attention("location")
class LocationEnergy(Energy):
    """softmax(W_a q) over absolute positions 0..max_len-1 (Luong et al. 2015): the query alone."""

    reads_keys = same_size = False
    options = ("max_len",)

    def __init__(self, query_size: int, key_size: int, heads: int = 1, max_len: int = 256) -> None:
        super().__init__(query_size, key_size, heads)
        self.max_len = max_len
        self.location = nn.Linear(query_size, heads * max_len, bias=False)  # W_a

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        B, h, T, S = q.size(0), self.heads, q.size(2), k.size(2)
        scores = self.location(merge_heads(q)).view(B, T, h, self.max_len).transpose(1, 2)  # (B, h, T, L)
        if self.max_len >= S:
            return scores[..., :S]
        return torch.cat([scores, scores.new_zeros(B, h, T, S - self.max_len)], -1)  # masked by reach()

    def reach(self, length: int, device: torch.device) -> Optional[Tensor]:
        if self.max_len >= length:
            return None
        return torch.arange(length, device=device) < self.max_len
