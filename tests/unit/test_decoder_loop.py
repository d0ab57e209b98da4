"""The decoder loop as an extension point: nmt's ``sampled`` and a user's, checked and run alike.

Properties: nmt's own loop passes the checks a user's must; each slip a student makes in the
teacher-forcing loop (one coin per batch or per sentence, the coin reversed, the reference
shifted, the logits detached, coins from a generator of its own) fails one named check; the decoder runs a registered loop at any p
and gives what its own paths give; a loop returning the wrong shape is one line naming the option.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import Tensor

import nmt
from nmt import config as C
from nmt.config.decoder_loops import DECODER_LOOPS
from nmt.model.build import build_model
from nmt.util.registry import PluginError

pytestmark = pytest.mark.usefixtures("isolated_registries")


def student_loop(slip: str) -> Callable[..., Tensor]:
    """The teacher-forcing loop as a student writes it, right (``slip="none"``) or with one slip."""

    def loop(step, tgt_in, state, p):
        B, T = tgt_in.shape
        coins = torch.rand(B, T, device=tgt_in.device) < p
        if slip == "private_generator":  # the same coins whatever torch's seed
            coins = torch.rand(B, T, generator=torch.Generator().manual_seed(0)) < p
        if slip == "reversed":
            coins = ~coins
        if slip == "per_sentence":
            coins = (torch.rand(B, 1) < p).expand(B, T)
        tokens, logits = tgt_in[:, 0], []
        for t in range(T):
            if t > 0:
                reference = tgt_in[:, t - 1] if slip == "shifted" else tgt_in[:, t]
                use = coins[:, t] if slip != "per_batch" else torch.rand(()).expand(B) < p
                tokens = torch.where(use, reference, logits[-1].argmax(-1))
            out, state = step(tokens, state)
            logits.append(out.detach() if slip == "detached" else out)
        return torch.stack(logits, dim=1)

    loop.__qualname__ = f"student_{slip}"
    return loop


def test_nmts_own_loop_passes_every_check_a_users_must() -> None:
    passed = nmt.check_loop("sampled")
    assert len(passed) == 5 and any("one coin per sentence and position" in p for p in passed)
    assert nmt.check_loop(student_loop("none"))  # written right, a student's passes too


@pytest.mark.parametrize(
    ("slip", "named"),
    [
        ("per_batch", "all sentences of a position read alike: draw one coin per sentence"),
        ("per_sentence", "a sentence reads alike at every position: draw a coin per position"),
        ("reversed", "with p = 1 a position did not read the reference token"),
        ("shifted", "with p = 1 a position did not read the reference token"),
        ("detached", "carry no gradient to the decoder"),
        ("private_generator", "another seed of torch's generator fed the same tokens"),
    ],
)
def test_each_slip_of_the_teacher_forcing_loop_is_one_named_failure(slip: str, named: str) -> None:
    loop = student_loop(slip)
    with pytest.raises(PluginError, match=rf"^decoder loop .*student_{slip} fails a check: .*{named}"):
        nmt.check_loop(loop)
    assert DECODER_LOOPS.name_of(loop) is None  # a failed loop is no longer offered


def test_a_loop_reading_a_coin_share_other_than_p_fails() -> None:
    def squared(step, tgt_in, state, p):  # right at p = 0 and 1, wrong in between
        return student_loop("none")(step, tgt_in, state, p * p)

    squared.__qualname__ = "squared"
    with pytest.raises(PluginError, match=r"with p = 0.25 the reference was read at [0-9]+% of [0-9]+ positions"):
        nmt.check_loop(squared)


def test_what_is_not_a_loop_is_refused_at_registration() -> None:
    with pytest.raises(PluginError, match=r"^decoder loop 'two': .* does not take the four arguments"):
        nmt.register_loop("two", lambda step, tgt_in: None)
    with pytest.raises(PluginError, match=r"^decoder loop 'sampled' is nmt's own"):
        nmt.register_loop("sampled", student_loop("none"))


def _model() -> torch.nn.Module:
    cfg = C.load(None, ["model.emb_size=16", "model.hidden_size=16", "model.enc_layers=1", "model.dec_layers=1"])
    model = build_model(cfg.model, 23, 29)
    return model.eval()


def test_the_decoder_runs_a_registered_loop_as_its_own_paths() -> None:
    model = _model()
    src, src_len = torch.randint(4, 23, (5, 7)), torch.tensor([7, 6, 5, 3, 2])
    tgt_in = torch.randint(4, 29, (5, 6))
    with torch.no_grad():
        forced, forced_attn = model(src, src_len, tgt_in)
        mine, mine_attn = model(src, src_len, tgt_in, loop=student_loop("none"))
        assert torch.allclose(mine, forced, atol=1e-6) and torch.allclose(mine_attn, forced_attn, atol=1e-6)
        torch.manual_seed(3)
        own = model(src, src_len, tgt_in, teacher_forcing=0.5)[0]  # nmt's sampled loop
        torch.manual_seed(3)
        students = model(src, src_len, tgt_in, teacher_forcing=0.5, loop=student_loop("none"))[0]
    assert torch.equal(own, students)  # one (B, T) draw: the same coins, the same logits


def test_a_loop_returning_the_wrong_shape_is_one_line_naming_the_option() -> None:
    def last_only(step, tgt_in, state, p):
        logits = None
        for t in range(tgt_in.size(1)):
            logits, state = step(tgt_in[:, t], state)
        return logits

    model = _model()
    src, tgt_in = torch.randint(4, 23, (2, 5)), torch.randint(4, 29, (2, 4))
    with pytest.raises(
        PluginError, match=r"^train.decoder_loop: expected logits \(2, 4, 29\) from 4 steps .* got \(2, 29\)"
    ):
        model(src, torch.tensor([5, 4]), tgt_in, loop=last_only)


def test_the_transformer_refuses_a_loop_of_the_users_in_one_line() -> None:
    nmt.register_loop("mine", student_loop("none"))
    with pytest.raises(C.ConfigError, match=r"train.decoder_loop=mine: the Transformer decodes a whole reference"):
        C.load(None, ["model.arch=transformer", "train.decoder_loop=mine"])
