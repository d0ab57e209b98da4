"""``nmt.check_attention``: the checks nmt's own attentions pass, offered to a user's energy.

Each check builds a small :class:`~nmt.model.attention.Attention` around the energy (the maps its
class's ``defaults`` name, else linear query and key maps; one head and two where the sizes allow)
and states one property the rest of nmt relies on, at several numbers of queries and keys (an
energy that is right for short sentences only would otherwise pass and crash in training), with
the padded states zero (as nmt's encoders leave them) and random, in evaluation mode (dropout inside
a score is a training-time design, not a fault).  The first that fails raises one :class:`~nmt.util.registry.PluginError` naming the energy and the
property; so does an energy that cannot be built, raises, or returns something other than
floating-point scores.  ``nmt train`` runs them before training a registered energy.

A ``NotImplementedError`` from the energy passes through unchanged: it is how a forward not yet
written says so (notebook 07 stops at the student's line with it); ``nmt train`` reports it in one
line too (:func:`nmt.training.user_code.check_user_code`).
"""

from __future__ import annotations

from typing import Any, Optional, Union

import torch
from torch import Tensor

from nmt.config.attention_space import ATTENTIONS, attention_problem
from nmt.model.attention import Attention
from nmt.model.energies import Energy
from nmt.util.errors import shorten
from nmt.util.registry import PluginError

B, SIZE = 3, 8
SHAPES = ((4, 6), (7, 3), (12, 40))
"""(T queries, S keys) the checks run at: more queries than keys and fewer, short and long."""
PADDING = ("zeros", "random")
"""What the attended states hold at padded positions: zeros, as nmt's encoders leave them (an energy that
divides by a key's norm meets them in training), and random values (nothing may depend on them)."""
TOLERANCE = 1e-5
SIGNATURE = "(query_size, key_size, heads=1)"
"""How nmt builds an energy: ``cls(query_size, key_size, heads)``."""


def _name(energy: Union[str, type[Energy]]) -> str:
    """The registered name of ``energy`` (a class is registered under its import path if it has none)."""
    if isinstance(energy, str):
        ATTENTIONS.get(energy)
        return energy
    if not (isinstance(energy, type) and issubclass(energy, Energy)):
        raise PluginError(f"check_attention takes a subclass of nmt.Energy or its registered name, not {energy!r}")
    return ATTENTIONS.name_for(energy)


def raised(exc: BaseException) -> str:
    """``Type: first line of the message`` of an exception from a user's code, short enough for one line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return shorten(f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__, 240)


def _built(name: str, heads: int, axes: dict[str, Any], params: Optional[dict[str, Any]] = None) -> Attention:
    """The attention around energy ``name``; an energy whose ``__init__`` fails is one PluginError."""
    try:
        return Attention(SIZE, SIZE, **axes, energy=name, heads=heads, max_len=max(s for _, s in SHAPES), params=params)
    except NotImplementedError:
        raise
    except Exception as exc:
        hint = f"; an energy's __init__ takes {SIGNATURE}" if isinstance(exc, TypeError) else ""
        raise PluginError(f"attention {name} cannot be built with {heads} head(s): {raised(exc)}{hint}") from exc


def _attentions(name: str, params: Optional[dict[str, Any]] = None) -> list[Attention]:
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
    built, problem = [], None
    for heads in (1, 2):
        problem = attention_problem(dict(axes, energy=name, heads=heads), SIZE, SIZE, None)
        if problem is None:
            built.append(_built(name, heads, axes, params).eval())  # dropout inside a score is for training only
    if not built:
        raise PluginError(f"attention {name}: no attention of size {SIZE} can hold it ({problem})")
    return built


def check_attention(
    energy: Union[str, type[Energy]], seed: int = 0, params: Optional[dict[str, Any]] = None
) -> list[str]:
    """Run the attention checks on ``energy`` (a subclass of :class:`nmt.Energy`, or a registered
    name); returns the properties checked, raises one PluginError at the first that fails, and then
    unregisters the name, so a config or ``nmt variants`` no longer offers it."""
    name = _name(energy)
    try:
        return _check_all(name, seed, params)
    except PluginError:
        ATTENTIONS.unregister(name)
        raise


def _check_all(name: str, seed: int, params: Optional[dict[str, Any]]) -> list[str]:
    heads: dict[str, list[str]] = {}
    for att in _attentions(name, params):
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            passed: dict[str, None] = {}
            for (T, S), pad in ((shape, pad) for shape in SHAPES for pad in PADDING):
                try:
                    passed.update(dict.fromkeys(_check(name, att, T, S, pad)))
                except (PluginError, NotImplementedError):
                    raise
                except Exception as exc:  # the user's forward (or what nmt does with what it returned)
                    raise _fail(name, att, f"with {T} queries and {S} keys it raised {raised(exc)}") from exc
            for prop in passed:
                heads.setdefault(prop, []).append(str(att.heads))
    return [f"{prop} (heads {', '.join(h)})" for prop, h in heads.items()]


def _fail(name: str, att: Attention, what: str) -> PluginError:
    return PluginError(f"attention {name} (heads={att.heads}) fails a check: {what}")


def _scores(name: str, att: Attention, query: Tensor, keys: Tensor, mask: Tensor) -> Tensor:
    """The energy's scores of ``query`` (B, T, A) against ``keys`` (B, S, A): a floating-point tensor
    of shape (B, h, T, S), finite, or one PluginError saying what came back instead."""
    (B, T, _), S = query.shape, keys.size(1)
    scores = att.energy(att.project_query(query), keys, mask)
    if not isinstance(scores, Tensor):
        raise _fail(name, att, f"forward returned a {type(scores).__name__}, not a tensor of scores")
    if not scores.is_floating_point():
        raise _fail(name, att, f"forward returned {scores.dtype} scores; return floating-point ones")
    if tuple(scores.shape) != (B, att.heads, T, S):
        raise _fail(
            name, att, f"scores have shape {tuple(scores.shape)}, expected (B, h, T, S) = {(B, att.heads, T, S)}"
        )
    if not torch.isfinite(scores).all():
        raise _fail(name, att, f"scores are not all finite on random inputs ({T} queries, {S} keys)")
    return scores


def _check(name: str, att: Attention, T: int, S: int, pad: str) -> list[str]:
    """The properties of ``att`` at ``T`` queries and ``S`` keys, padded positions of the attended
    states ``pad`` ("zeros" as nmt's encoders leave them, or "random"); the first that fails is a PluginError."""
    lengths = torch.tensor([S, max(S - 2, 1), 1])  # real keys per sentence: full, padded, a single one
    mask = torch.arange(S) < lengths.unsqueeze(1)  # (B, S)
    memory = torch.randn(B, S, SIZE)
    if pad == "zeros":
        memory = memory * mask.unsqueeze(-1)
    memory.requires_grad_(True)
    query = torch.randn(B, T, SIZE, requires_grad=True)
    keys, values = att.project_keys(memory), att.project_values(memory)
    _scores(name, att, query, keys, mask)
    if att.stateful:
        return _check_stateful(name, att, query, memory, mask)
    context, weights = att(query, keys, values, mask)
    passed = _distributions(name, att, context, weights, mask, T)

    n = int(lengths[1])  # the second sentence alone, without its padding or the batch
    alone, _ = att(query[1:2], att.project_keys(memory[1:2, :n]), att.project_values(memory[1:2, :n]), None)
    if not torch.allclose(alone[0], context[1], atol=TOLERANCE):
        raise _fail(name, att, "a sentence's context changes with the padding or the other sentences of its batch")
    passed.append("a sentence's context ignores its padding and its batch")

    steps = torch.stack([att(query[:, t], keys, values, mask)[0] for t in range(T)], 1)  # decoding, one query a step
    if not torch.allclose(steps, context, atol=TOLERANCE):
        raise _fail(name, att, "queries scored one at a time (decoding) differ from all at once (training)")
    passed.append("one query at a time equals all at once")
    return [*passed, _gradients(name, att, context, (query, memory))]


def _decode(
    att: Attention, query: Tensor, memory: Tensor, mask: Tensor, reorder: Optional[tuple[int, Tensor]] = None
) -> tuple[Tensor, Tensor]:
    """A stateful attention run as the decoder runs it, one query a step with the state carried:
    contexts (B, T, C) and weights (B, T, S).  ``reorder`` (t, idx): before step t the rows are
    reordered by idx, state included, as beam search does."""
    keys, values = att.project_keys(memory), att.project_values(memory)
    state = att.init_state(mask)
    contexts: list[Tensor] = []
    weights: list[Tensor] = []
    for t in range(query.size(1)):
        if reorder is not None and t == reorder[0]:
            idx = reorder[1]
            query, keys, values, mask = (x.index_select(0, idx) for x in (query, keys, values, mask))
            state = None if state is None else state.index_select(0, idx)
            contexts, weights = [c.index_select(0, idx) for c in contexts], [w.index_select(0, idx) for w in weights]
        context, w = att(query[:, t], keys, values, mask, state=state)
        state = att.next_state(state, w, keys, mask)
        contexts.append(context)
        weights.append(w)
    return torch.stack(contexts, 1), torch.stack(weights, 1)


def _check_stateful(name: str, att: Attention, query: Tensor, memory: Tensor, mask: Tensor) -> list[str]:
    """The properties of an attention whose energy keeps a state across decoder steps, decoded step by step."""
    T = query.size(1)
    context, weights = _decode(att, query, memory, mask)
    passed = _distributions(name, att, context, weights, mask, T)

    again, _ = _decode(att, query, memory, mask)
    if not torch.allclose(again, context, atol=TOLERANCE):
        raise _fail(
            name,
            att,
            "the same sentences decoded twice differ: keep the state in init_state/next_state, not on the module",
        )
    passed.append("decoding again gives the same (no state kept on the module)")

    n = int(mask[1].sum())  # the second sentence alone, without its padding or the batch
    alone, _ = _decode(att, query[1:2], memory[1:2, :n], mask[1:2, :n])
    if not torch.allclose(alone[0], context[1], atol=TOLERANCE):
        raise _fail(name, att, "a sentence's context changes with the padding or the other sentences of its batch")
    passed.append("a sentence's context ignores its padding and its batch")

    idx = torch.tensor([2, 0, 1, 1])  # beam search reorders, repeats and drops hypotheses
    if T > 1:
        moved, _ = _decode(att, query, memory, mask, reorder=(T // 2, idx))
        if not torch.allclose(moved, context.index_select(0, idx), atol=TOLERANCE):
            raise _fail(name, att, "a state reordered mid-sentence (as beam search does) does not follow its rows")
        passed.append("a reordered state follows its rows (beam search)")
    return [*passed, _gradients(name, att, context, (query, memory))]


def _distributions(name: str, att: Attention, context: Tensor, weights: Tensor, mask: Tensor, T: int) -> list[str]:
    """Weights (B, T, S) that are distributions over each sentence's real keys, and a finite context:
    what every attention, stateful or not, must give."""
    shape = (mask.size(0), T, mask.size(1))
    if tuple(weights.shape) != shape or not torch.isfinite(context).all():
        raise _fail(name, att, f"weights of shape {tuple(weights.shape)} (expected {shape}) or a non-finite context")
    if weights.masked_select(~mask.unsqueeze(1).expand_as(weights)).abs().sum() > 0:
        raise _fail(name, att, "a padded key gets weight")
    if (weights.sum(-1) - 1).abs().max() > TOLERANCE:
        raise _fail(name, att, "a row of weights does not sum to 1")
    return ["scores (B, h, T, S), finite", "padded keys get weight 0", "rows sum to 1"]


def _gradients(name: str, att: Attention, context: Tensor, inputs: tuple[Tensor, ...]) -> str:
    """Gradients of the context: finite everywhere, reaching the energy's own parameters if it has any.

    The inputs require gradients, so an energy whose scores depend on nothing learned (constant
    scores: the mean of the source) still has a context to differentiate; only the energy's own
    parameters must each get a gradient, and not all zero."""
    own = list(att.score.parameters())
    att.zero_grad(set_to_none=True)
    context.pow(2).sum().backward()
    if any(x.grad is not None and not torch.isfinite(x.grad).all() for x in inputs):
        raise _fail(name, att, "gradients through the energy are not all finite on random inputs")
    if any(p.grad is None or not torch.isfinite(p.grad).all() for p in own):
        raise _fail(name, att, "a parameter of the energy gets no finite gradient")
    if own and all(p.grad is not None and p.grad.abs().max() == 0 for p in own):
        raise _fail(name, att, "every parameter of the energy gets a zero gradient")
    return "gradients reach the energy's parameters" if own else "gradients (the energy has no parameters)"
