"""``nmt.check_loop``: the properties teacher forcing needs of a decoder loop, offered to a user's
loop as nmt's own ``sampled`` passes them.

The loop runs over a stand-in decoder step (a small random recurrent function of the tokens
fed, with one parameter matrix) whose every call is recorded, so each check reads what the
loop fed at each position: the first that fails raises one
:class:`~nmt.util.registry.PluginError` naming the loop and the property.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple, Union

import torch
from torch import Tensor

from nmt.config.decoder_loops import DECODER_LOOPS
from nmt.model import decoder_loop as decoder_loop  # registers nmt's own loop, checked like a user's
from nmt.model.attention_check import raised
from nmt.util.registry import PluginError

V = 7
"""Vocabulary of the stand-in step: small, so the reference and the prediction often agree."""
B, T = 400, 6
"""Sentences and positions of the statistical checks: about 1,700 positions where the coin matters."""
SIGMAS = 5.0
"""How far (in binomial standard deviations) the share of reference tokens may be from p."""


class Recorded(NamedTuple):
    """What a loop did with the stand-in step: the tokens fed and logits given at each call."""

    fed: list[Tensor]  # per call: (B,) tokens
    logits: list[Tensor]  # per call: (B, V)
    out: Tensor  # what the loop returned


class StandIn:
    """A decoder step ``(tokens (B,), state) -> (logits (B, V), state)`` with a recurrent state:
    logits = 3 E[tokens] + h, h' = tanh(h + E[tokens]); E (V, V) is its one parameter."""

    def __init__(self, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.E = torch.randn(V, V, generator=generator).requires_grad_(True)
        self.fed: list[Tensor] = []
        self.logits: list[Tensor] = []
        self.states: list[object] = []  # the state object each call returned, to check it comes back

    def __call__(self, tokens: Tensor, state: Any) -> tuple[Tensor, Any]:
        if self.states and state is not self.states[-1]:
            raise _Misuse("the state given to a step is not the one the previous step returned")
        if not isinstance(tokens, Tensor) or tokens.dtype != torch.long or tuple(tokens.shape) != (state.size(0),):
            got = tuple(tokens.shape) if isinstance(tokens, Tensor) else type(tokens).__name__
            raise _Misuse(f"a step was given tokens {got}; it takes one token id per sentence, (B,) integers")
        e = self.E[tokens]  # (B, V)
        logits = 3 * e + state
        new = torch.tanh(state + e)
        self.fed.append(tokens.detach().clone())
        self.logits.append(logits.detach().clone())
        self.states.append(new)
        return logits, new


class _Misuse(Exception):
    """The loop called the step in a way no decoder takes."""


def _name(loop: Union[str, Callable[..., Any]]) -> str:
    if isinstance(loop, str):
        DECODER_LOOPS.get(loop)
        return loop
    return DECODER_LOOPS.name_for(loop)


def _fail(name: str, what: str) -> PluginError:
    return PluginError(f"decoder loop {name} fails a check: {what}")


def _run(
    name: str, loop: Callable[..., Any], tgt_in: Tensor, p: float, seed: int, rng: int | None = None
) -> tuple[Recorded, StandIn]:
    """Run ``loop`` over a stand-in decoder of ``seed`` with torch's generator seeded by ``rng`` (default ``seed``)."""
    step = StandIn(seed)
    start = torch.zeros(tgt_in.size(0), V)
    torch.manual_seed(seed if rng is None else rng)
    try:
        out = loop(step, tgt_in, start, p)
    except _Misuse as exc:
        raise _fail(name, str(exc)) from None
    except Exception as exc:
        raise _fail(name, f"with targets {tuple(tgt_in.shape)} and p = {p} it raised {raised(exc)}") from exc
    n = tgt_in.size(1)
    if len(step.fed) != n:
        raise _fail(name, f"it called the step {len(step.fed)} times for {n} target positions")
    if not isinstance(out, Tensor) or tuple(out.shape) != (tgt_in.size(0), n, V):
        got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise _fail(name, f"it returned {got}, expected the logits of every position {(tgt_in.size(0), n, V)}")
    if not torch.equal(out.detach(), torch.stack(step.logits, dim=1)):
        raise _fail(name, "the logits it returned at position t are not the ones the step gave at t")
    return Recorded(step.fed, step.logits, out), step


def _reads(record: Recorded, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
    """Per sentence and position t > 0: whether the reference was fed, and whether the previous
    argmax was; both (B, T - 1)."""
    fed = torch.stack(record.fed[1:], dim=1)
    predicted = torch.stack([logits.argmax(-1) for logits in record.logits[:-1]], dim=1)
    return fed == tgt_in[:, 1:], fed == predicted


def check_loop(loop: Union[str, Callable[..., Any]], seed: int = 0) -> list[str]:
    """Run the checks on ``loop`` (a function ``(step, tgt_in, state, p) -> logits`` or a registered
    name); returns the properties checked, raises one PluginError at the first that fails, and then
    unregisters the name."""
    name = _name(loop)
    try:
        with torch.random.fork_rng():
            return _checks(name, DECODER_LOOPS.get(name).target, seed)
    except PluginError:
        DECODER_LOOPS.unregister(name)
        raise


def _checks(name: str, loop: Callable[..., Any], seed: int) -> list[str]:
    generator = torch.Generator().manual_seed(seed)
    tgt_in = torch.randint(1, V, (B, T), generator=generator)
    passed = []

    record, step = _run(name, loop, tgt_in, 1.0, seed)
    if not torch.equal(record.fed[0], tgt_in[:, 0]):
        raise _fail(name, "the first position does not read tgt_in[:, 0] (BOS)")
    passed.append("one step per position, the first reads BOS, the step's logits returned (B, T, V)")
    ref, _ = _reads(record, tgt_in)
    if not ref.all():
        raise _fail(name, "with p = 1 a position did not read the reference token tgt_in[:, t]")
    if record.out.requires_grad:
        record.out.sum().backward()
    if step.E.grad is None or not torch.isfinite(step.E.grad).all() or step.E.grad.abs().sum() == 0:
        raise _fail(name, "the logits it returns carry no gradient to the decoder (detached?)")
    passed.append("p = 1 reads the reference; gradients reach the decoder")

    record, _ = _run(name, loop, tgt_in, 0.0, seed)
    _, own = _reads(record, tgt_in)
    if not own.all():
        raise _fail(name, "with p = 0 a position did not read the argmax of the previous position's logits")
    passed.append("p = 0 reads the previous argmax")

    for p in (0.25, 0.75):
        record, _ = _run(name, loop, tgt_in, p, seed)
        ref, own = _reads(record, tgt_in)
        if not (ref | own).all():
            raise _fail(name, f"with p = {p} a position read neither the reference nor the previous argmax")
        matters = ref ^ own  # where the two differ, the token shows the coin
        if not all((ref[:, t][matters[:, t]].unique().numel() == 2) for t in range(T - 1)):
            raise _fail(name, f"with p = {p} all sentences of a position read alike: draw one coin per sentence")
        share = ref[matters].float().mean().item()
        n = int(matters.sum())
        if abs(share - p) > SIGMAS * math.sqrt(p * (1 - p) / n):
            raise _fail(
                name, f"with p = {p} the reference was read at {share:.0%} of {n} positions, not with probability p"
            )
        mixed = (ref & matters).any(1) & (own & matters).any(1)
        if mixed.float().mean() < 0.25:  # one coin per sentence gives 0; per position about 0.7
            raise _fail(name, f"with p = {p} a sentence reads alike at every position: draw a coin per position")
    passed.append("0 < p < 1: the reference with probability p, one coin per sentence and position")

    # One stand-in decoder, torch's generator seeded twice alike and once otherwise: only the coins can differ.
    first, _ = _run(name, loop, tgt_in, 0.5, seed)
    again, _ = _run(name, loop, tgt_in, 0.5, seed)
    second, _ = _run(name, loop, tgt_in, 0.5, seed, rng=seed + 1)
    if not all(torch.equal(a, b) for a, b in zip(first.fed, again.fed)):
        raise _fail(name, "under one seed two runs fed different tokens: draw the coins from torch's RNG")
    if all(torch.equal(a, b) for a, b in zip(first.fed, second.fed)):
        raise _fail(name, "another seed of torch's generator fed the same tokens: draw the coins from torch's RNG")
    passed.append("coins from torch's RNG: one seed, one sequence of coins")
    return passed
