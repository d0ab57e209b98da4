"""``nmt.check_attention``: the checks nmt's own attentions pass, offered to a user's energy.

Each check builds a small :class:`~nmt.model.attention.Attention` around the energy (the maps its
class's ``defaults`` name, else linear query and key maps; one head and two where the sizes allow)
and states one property the rest of nmt relies on.  The first that fails raises one
:class:`~nmt.util.registry.PluginError` naming the energy and the property; ``nmt train`` runs
them before training a registered energy.
"""

from __future__ import annotations

from typing import Union

import torch

from nmt.config.attention_space import ATTENTIONS, attention_problem
from nmt.model.attention import Attention
from nmt.model.energies import Energy
from nmt.util.registry import PluginError, origin_of

B, T, S, SIZE = 3, 4, 6, 8
LENGTHS = torch.tensor([6, 4, 1])  # real keys per sentence: full, padded, a single one
TOLERANCE = 1e-5


def _name(energy: Union[str, type[Energy]]) -> str:
    """The registered name of ``energy`` (a class is registered under its import path if it has none)."""
    if isinstance(energy, str):
        ATTENTIONS.get(energy)
        return energy
    if not (isinstance(energy, type) and issubclass(energy, Energy)):
        raise PluginError(f"check_attention takes a subclass of nmt.Energy or its registered name, not {energy!r}")
    name = ATTENTIONS.name_of(energy)
    if name is None:
        name = origin_of(energy)
        ATTENTIONS.register(name, energy)
    return name


def _attentions(name: str) -> list[Attention]:
    """The energy in the attentions checked: one head, and two where its sizes split."""
    cls = ATTENTIONS.get(name).target
    defaults = getattr(cls, "defaults", {}) or {}
    reads_q, reads_k = getattr(cls, "reads_query", True), getattr(cls, "reads_keys", True)
    axes = {
        "query_map": defaults.get("query_map", "linear" if reads_q else "identity"),
        "key_map": defaults.get("key_map", "linear" if reads_k else "identity"),
        "value_map": defaults.get("value_map", "identity"),
        "out_proj": defaults.get("out_proj", False),
    }
    built = []
    for heads in (1, 2):
        point = dict(axes, energy=name, heads=heads)
        if attention_problem(point, SIZE, SIZE, None) is None:
            built.append(Attention(SIZE, SIZE, **point, max_len=S))
    if not built:
        raise PluginError(
            f"attention {name}: no attention of size {SIZE} can hold it ({attention_problem(point, SIZE, SIZE, None)})"
        )
    return built


def check_attention(energy: Union[str, type[Energy]], seed: int = 0) -> list[str]:
    """Run the attention checks on ``energy`` (a subclass of :class:`nmt.Energy`, or a registered
    name); returns the properties checked, raises one PluginError at the first that fails."""
    name = _name(energy)
    heads: dict[str, list[str]] = {}
    for att in _attentions(name):
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            for prop in _check(name, att):
                heads.setdefault(prop, []).append(str(att.heads))
    return [f"{prop} (heads {', '.join(h)})" for prop, h in heads.items()]


def _fail(name: str, att: Attention, what: str) -> PluginError:
    return PluginError(f"attention {name} (heads={att.heads}) fails a check: {what}")


def _check(name: str, att: Attention) -> list[str]:
    memory = torch.randn(B, S, SIZE)
    query = torch.randn(B, T, SIZE)
    mask = torch.arange(S) < LENGTHS.unsqueeze(1)  # (B, S)
    keys, values = att.project_keys(memory), att.project_values(memory)
    scores = att.energy(att.project_query(query), keys)
    if tuple(scores.shape) != (B, att.heads, T, S):
        raise _fail(
            name, att, f"scores have shape {tuple(scores.shape)}, expected (B, h, T, S) = {(B, att.heads, T, S)}"
        )
    if not torch.isfinite(scores).all():
        raise _fail(name, att, "scores are not all finite on random inputs")
    context, weights = att(query, keys, values, mask)
    if tuple(weights.shape) != (B, T, S) or not torch.isfinite(context).all():
        raise _fail(
            name, att, f"weights of shape {tuple(weights.shape)} (expected {(B, T, S)}) or a non-finite context"
        )
    if weights.masked_select(~mask.unsqueeze(1).expand_as(weights)).abs().max() > 0:
        raise _fail(name, att, "a padded key gets weight")
    if (weights.sum(-1) - 1).abs().max() > TOLERANCE:
        raise _fail(name, att, "a row of weights does not sum to 1")
    passed = ["scores (B, h, T, S), finite", "padded keys get weight 0", "rows sum to 1"]

    alone, _ = att(query[1:2], att.project_keys(memory[1:2, :4]), att.project_values(memory[1:2, :4]), None)
    if not torch.allclose(alone[0], context[1], atol=TOLERANCE):
        raise _fail(name, att, "a sentence's context changes with the padding or the other sentences of its batch")
    passed.append("a sentence's context ignores its padding and its batch")

    steps = torch.stack([att(query[:, t], keys, values, mask)[0] for t in range(T)], 1)  # decoding, one query a step
    if not torch.allclose(steps, context, atol=TOLERANCE):
        raise _fail(name, att, "queries scored one at a time (decoding) differ from all at once (training)")
    passed.append("one query at a time equals all at once")

    own = list(att.score.parameters())
    if not any(p.requires_grad for p in att.parameters()):
        return [*passed, "gradients (nothing to learn: no parameters)"]
    context.pow(2).sum().backward()
    if any(p.grad is None or not torch.isfinite(p.grad).all() for p in own):
        raise _fail(name, att, "a parameter of the energy gets no finite gradient")
    if own and all(p.grad is not None and p.grad.abs().max() == 0 for p in own):
        raise _fail(name, att, "every parameter of the energy gets a zero gradient")
    passed.append("gradients reach the energy's parameters" if own else "gradients (the energy has no parameters)")
    return passed
