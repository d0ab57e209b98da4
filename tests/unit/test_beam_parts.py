"""The parts of beam search (expand, prune, extend, finish, survive, is_done, compact) on random
tensors, each against a brute-force reading of its docstring; then the whole search on an
untrained model, where sentences end at different steps and leave the batch.

Shapes: n sentences, K beam, C = 2K candidates, P tokens per hypothesis, L budget, S source.
"""

from __future__ import annotations

from typing import ClassVar

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from nmt.config import AttentionConfig, ModelConfig
from nmt.data.tokenizer import EOS, PAD
from nmt.decode.beam import (
    Beams,
    BeamState,
    Candidates,
    beam_search,
    compact,
    expand,
    extend,
    finish,
    is_done,
    prune,
    survive,
)
from nmt.decode.common import length_penalty
from nmt.decode.greedy import greedy
from nmt.model.build import build_model
from nmt.model.state import EncoderOutput

NEG_INF = -float("inf")


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def random_beams(n: int, k: int, L: int, S: int, g: torch.Generator, *, sorted_: bool = True, empty: int = 0) -> Beams:
    """k random hypotheses per sentence, best first, the last ``empty`` of them -inf."""
    log_probs = -torch.rand(n, k, generator=g) * 10
    if sorted_:
        log_probs = log_probs.sort(dim=1, descending=True).values
    if empty:
        log_probs[:, k - empty :] = NEG_INF
    tokens = torch.randint(4, 20, (n, k, L), generator=g)
    attention = torch.rand(n, k, L, S, generator=g)
    return Beams(log_probs, log_probs.clone(), tokens, attention)


# ------------------------------------------------------------------ expand and prune


@pytest.mark.parametrize("K, V", [(3, 11), (4, 5), (1, 7)])  # 2K < V, 2K > V, a beam of one
@pytest.mark.parametrize("seed", [0, 1])
def test_expand_keeps_each_hypothesis_best_tokens_with_summed_log_probs(K: int, V: int, seed: int) -> None:
    g, n = gen(seed), 3
    scores = torch.randn(n * K, V, generator=g)
    scores[:, 0] = NEG_INF  # a forbidden token, as _restrict leaves PAD
    log_z = torch.logsumexp(scores, dim=-1, keepdim=True)
    alive = -torch.rand(n, K, generator=g)
    cand, tok = expand(scores, log_z, alive)
    P = min(2 * K, V)
    assert cand.shape == tok.shape == (n, K, P)
    assert (cand[:, :, :-1] >= cand[:, :, 1:]).all()  # best first per hypothesis
    log_p = scores - log_z  # log p(y_t | y_<t, x)
    full = (alive.view(-1, 1) + log_p).view(n, K, V)  # every continuation
    assert torch.equal(cand, full.gather(2, tok))  # each value is its token's alive + log p
    assert torch.equal(cand, full.sort(dim=2, descending=True).values[:, :, :P])  # and they are the P best


@pytest.mark.parametrize("K, V", [(3, 11), (4, 5)])
def test_expand_then_prune_loses_none_of_the_2k_best(K: int, V: int) -> None:
    g, n = gen(2), 4
    scores = torch.randn(n * K, V, generator=g)
    log_z = torch.logsumexp(scores, dim=-1, keepdim=True)
    alive = -torch.rand(n, K, generator=g) * 3
    cand = prune(*expand(scores, log_z, alive), 2 * K)
    full = (alive.view(-1, 1) + (scores - log_z)).view(n, K * V)
    assert torch.equal(cand.log_probs, full.sort(dim=1, descending=True).values[:, : 2 * K])


@pytest.mark.parametrize("width", [1, 4, 6])
def test_prune_keeps_the_best_per_sentence_in_order_and_finds_their_parents(width: int) -> None:
    g, n, K, P = gen(3), 5, 3, 4
    log_probs = torch.randn(n, K, P, generator=g)
    tokens = torch.randint(4, 30, (n, K, P), generator=g)
    cand = prune(log_probs, tokens, width)
    assert isinstance(cand, Candidates) and cand.log_probs.shape == cand.tokens.shape == cand.rows.shape == (n, width)
    assert torch.equal(cand.log_probs, log_probs.view(n, -1).sort(dim=1, descending=True).values[:, :width])
    first_row = torch.arange(n).unsqueeze(1) * K
    assert ((cand.rows >= first_row) & (cand.rows < first_row + K)).all()  # a parent of the same sentence
    for i in range(n):
        for c in range(width):
            beam = int(cand.rows[i, c]) - i * K
            p = int((log_probs[i, beam] == cand.log_probs[i, c]).nonzero())  # distinct random values
            assert cand.tokens[i, c] == tokens[i, beam, p]


# ------------------------------------------------------------------ extend


@pytest.mark.parametrize("t", [0, 3, 5])
def test_extend_copies_each_parent_and_writes_the_new_token_at_t(t: int) -> None:
    g, n, K, L, S = gen(4), 3, 2, 6, 5
    alive = random_beams(n, K, L, S, g)
    alive.tokens[:, :, t:] = PAD  # nothing written past the prefix yet
    alive.attention[:, :, t:] = 0.0
    before = Beams(alive.scores.clone(), alive.log_probs.clone(), alive.tokens.clone(), alive.attention.clone())
    rows = torch.arange(n).unsqueeze(1) * K + torch.randint(0, K, (n, 2 * K), generator=g)
    cand = Candidates(-torch.rand(n, 2 * K, generator=g), torch.randint(4, 20, (n, 2 * K), generator=g), rows)
    attn = torch.rand(n * K, S, generator=g)
    grown = extend(alive, cand, attn, t)
    parents_tokens = alive.tokens.view(n * K, L)[rows]  # (n, C, L)
    assert torch.equal(grown.tokens[:, :, :t], parents_tokens[:, :, :t])
    assert torch.equal(grown.tokens[:, :, t], cand.tokens)
    assert (grown.tokens[:, :, t + 1 :] == PAD).all()
    assert torch.equal(grown.attention[:, :, :t], alive.attention.view(n * K, L, S)[rows][:, :, :t])
    assert torch.equal(grown.attention[:, :, t], attn[rows])
    assert torch.equal(grown.log_probs, cand.log_probs) and torch.equal(grown.scores, cand.log_probs)
    for field in ("scores", "log_probs", "tokens", "attention"):  # the parents are left as they were
        assert torch.equal(getattr(alive, field), getattr(before, field))


def test_extend_without_attention_keeps_none() -> None:
    g, n, K, L = gen(5), 2, 2, 4
    alive = random_beams(n, K, L, 3, g)
    alive.attention = None
    rows = torch.arange(n).unsqueeze(1) * K + torch.randint(0, K, (n, 2 * K), generator=g)
    cand = Candidates(-torch.rand(n, 2 * K, generator=g), torch.randint(4, 20, (n, 2 * K), generator=g), rows)
    assert extend(alive, cand, torch.rand(n * K, 3, generator=g), 1).attention is None


# ------------------------------------------------------------------ finish and survive


def candidates_with_eos(n: int, K: int, L: int, S: int, t: int, g: torch.Generator) -> Beams:
    """2K sorted candidates of length t + 1, about a third ending in EOS, a few -inf."""
    cand = random_beams(n, 2 * K, L, S, g)
    ends = torch.rand(n, 2 * K, generator=g) < 0.35
    cand.tokens[:, :, t] = torch.where(ends, torch.full_like(ends, EOS, dtype=torch.long), cand.tokens[:, :, t])
    cand.tokens[:, :, t + 1 :] = PAD
    cand.log_probs[0, -2:] = NEG_INF  # candidates that cannot be (nothing left to choose)
    cand.tokens[0, -2:, t] = EOS
    cand.scores = cand.log_probs
    return cand


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finish_keeps_the_k_best_of_pool_and_new_eos_with_length_normalized_scores(alpha: float, seed: int) -> None:
    g, n, K, L, S, t = gen(seed), 4, 3, 7, 2, 4
    pool = random_beams(n, K, L, S, g, empty=seed % 3)  # a pool with 0, 1 or 2 empty slots
    pool.scores = pool.log_probs / 1.7  # some earlier length's penalty
    cand = candidates_with_eos(n, K, L, S, t, g)
    new = finish(pool, cand, t, alpha)
    assert new.scores.shape == (n, K) and new.tokens.shape == (n, K, L) and new.attention.shape == (n, K, L, S)
    assert (new.scores[:, :-1] >= new.scores[:, 1:]).all()  # best first
    lp = float(length_penalty(torch.tensor([t + 1.0]), alpha))
    for i in range(n):
        # brute force: the old pool and every finite in-beam EOS candidate, by score
        entries = [
            (float(pool.scores[i, k]), float(pool.log_probs[i, k]), pool.tokens[i, k].tolist()) for k in range(K)
        ]
        entries += [
            (float(cand.log_probs[i, c]) / lp, float(cand.log_probs[i, c]), cand.tokens[i, c].tolist())
            for c in range(K)  # only the first K of the 2K rank inside the beam
            if cand.tokens[i, c, t] == EOS and cand.log_probs[i, c] > NEG_INF
        ]
        best = sorted(entries, key=lambda e: -e[0])[:K]
        for k, (score, log_prob, tokens) in enumerate(best):
            assert float(new.scores[i, k]) == pytest.approx(score, rel=1e-6, abs=0)
            if score > NEG_INF:
                assert float(new.log_probs[i, k]) == log_prob and new.tokens[i, k].tolist() == tokens


def test_finish_admits_no_eos_ranked_outside_the_beam_nor_any_other_token() -> None:
    n, K, L, S, t = 1, 2, 3, 1, 1
    pool = Beams(
        torch.full((n, K), NEG_INF), torch.full((n, K), NEG_INF), torch.full((n, K, L), PAD), torch.zeros(n, K, L, S)
    )
    tokens = torch.full((n, 2 * K, L), PAD)
    tokens[0, :, t] = torch.tensor([7, 8, EOS, EOS])  # the EOS candidates rank 3rd and 4th of 2K
    log_probs = torch.tensor([[-0.1, -0.2, -0.3, -0.4]])
    new = finish(pool, Beams(log_probs, log_probs, tokens, torch.rand(n, 2 * K, L, S)), t, 1.0)
    assert (new.scores == NEG_INF).all() and (new.log_probs == NEG_INF).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_survive_keeps_the_k_best_that_do_not_end_in_eos_in_order(seed: int) -> None:
    g, n, K, L, S, t = gen(seed), 5, 3, 6, 2, 2
    cand = candidates_with_eos(n, K, L, S, t, g)
    cand.tokens[1, 1:, t] = EOS  # a sentence with a single non-EOS candidate
    alive, pick = survive(cand, t, K)
    assert pick.shape == (n, K) and alive.tokens.shape == (n, K, L)
    for i in range(n):
        open_ = [c for c in range(2 * K) if cand.tokens[i, c, t] != EOS and cand.log_probs[i, c] > NEG_INF]
        m = min(K, len(open_))
        assert pick[i, :m].tolist() == open_[:m]  # candidates are sorted, so the first open ones are best
        assert torch.equal(alive.log_probs[i, :m], cand.log_probs[i, open_[:m]])
        assert torch.equal(alive.tokens[i, :m], cand.tokens[i, open_[:m]])
        assert torch.equal(alive.attention[i, :m], cand.attention[i, open_[:m]])
        assert (alive.log_probs[i, m:] == NEG_INF).all()  # fillers can never be chosen
    assert torch.equal(alive.scores, alive.log_probs)


# ------------------------------------------------------------------ is_done


def test_is_done_cases() -> None:
    lp_max = torch.tensor([2.0, 2.0, 2.0, 2.0])
    finished = torch.tensor([[-1.0, -1.5], [-1.0, NEG_INF], [-1.0, -1.5], [-3.0, -4.0]])
    alive = torch.tensor([[-4.0, -5.0], [-0.1, -0.2], [NEG_INF, NEG_INF], [-2.0, -9.0]])
    # 0: the worst finished -1.5 beats the bound -4/2: done.  1: the pool has a free slot: not done.
    # 2: nothing alive: done.  3: the bound -1 beats the pool's worst -4: not done.
    assert is_done(finished, alive, lp_max).tolist() == [True, False, True, False]


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_is_done_is_sound_no_continuation_of_a_done_sentence_could_enter_its_pool(alpha: float) -> None:
    g, n, K = gen(6), 200, 3
    limit = torch.randint(3, 12, (n,), generator=g)
    finished = (-torch.rand(n, K, generator=g) * 4).sort(dim=1, descending=True).values
    alive = (-torch.rand(n, K, generator=g) * 4).sort(dim=1, descending=True).values
    done = is_done(finished, alive, length_penalty(limit, alpha))
    assert done.any() and not done.all()
    for i in done.nonzero().squeeze(1).tolist():
        lengths = torch.arange(1, int(limit[i]) + 1)
        reachable = alive[i, 0] / length_penalty(lengths, alpha)  # log-probabilities only fall from here
        assert (reachable <= finished[i, -1]).all()


# ------------------------------------------------------------------ compact


def random_state(n: int, K: int, L: int, S: int, g: torch.Generator, lstm: bool) -> BeamState:
    h = torch.randn(2, n * K, 4, generator=g)
    final = (h, torch.randn(2, n * K, 4, generator=g)) if lstm else h
    enc = EncoderOutput(
        memory=torch.randn(n * K, S, 4, generator=g),
        keys=torch.randn(n * K, S, 3, generator=g),
        values=torch.randn(n * K, S, 5, generator=g),
        mask=torch.rand(n * K, S, generator=g) < 0.8,
        final=final,
    )
    return BeamState(
        ids=torch.randperm(n, generator=g) + 10,
        limit=torch.randint(3, 9, (n,), generator=g),
        lp_max=torch.rand(n, generator=g) + 1,
        alive=random_beams(n, K, L, S, g),
        finished=random_beams(n, K, L, S, g),
        prev=torch.randint(4, 20, (n, K), generator=g),
        parents=torch.randint(0, n * K, (n, K), generator=g),
        enc=enc,
    )


@pytest.mark.parametrize("lstm", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compact_keeps_exactly_the_surviving_sentences_in_order(lstm: bool, seed: int) -> None:
    g, n, K, L, S = gen(seed), 6, 3, 5, 4
    beams = random_state(n, K, L, S, g, lstm)
    stay = (torch.rand(n, generator=g) < 0.5).nonzero().squeeze(1)
    kept = compact(beams, stay)
    for name in ("ids", "limit", "lp_max", "prev", "parents"):  # parents keep pointing into the old rows
        assert torch.equal(getattr(kept, name), getattr(beams, name)[stay])
    for part in ("alive", "finished"):
        for field in ("scores", "log_probs", "tokens", "attention"):
            assert torch.equal(getattr(getattr(kept, part), field), getattr(getattr(beams, part), field)[stay])
    rows = [i * K + k for i in stay.tolist() for k in range(K)]  # each kept sentence's K rows, in order
    for field in ("memory", "keys", "values", "mask"):
        assert torch.equal(getattr(kept.enc, field), getattr(beams.enc, field)[rows])
    finals = zip(kept.enc.final, beams.enc.final) if lstm else [(kept.enc.final, beams.enc.final)]
    for new, old in finals:
        assert torch.equal(new, old[:, rows])


def test_beams_take_and_rows_select_hypotheses_and_sentences() -> None:
    g, n, K, L, S = gen(7), 3, 4, 5, 2
    beams = random_beams(n, K, L, S, g)
    perm = torch.stack([torch.randperm(K, generator=g) for _ in range(n)])  # (n, K)
    taken = beams.take(perm)
    for i in range(n):
        assert torch.equal(taken.tokens[i], beams.tokens[i, perm[i]])
        assert torch.equal(taken.attention[i], beams.attention[i, perm[i]])
        assert torch.equal(taken.scores[i], beams.scores[i, perm[i]])
    back = taken.take(perm.argsort(dim=1))
    assert torch.equal(back.tokens, beams.tokens) and torch.equal(back.attention, beams.attention)
    order = torch.tensor([2, 0])
    picked = Beams.cat([beams.rows(order[:1]), beams.rows(order[1:])], dim=0)
    assert torch.equal(picked.tokens, beams.tokens[order]) and torch.equal(picked.log_probs, beams.log_probs[order])


# ------------------------------------------------------------------ the whole search, untrained


@pytest.fixture(scope="module")
def untrained():
    """A random model whose outputs end at many different lengths, and a batch with padding."""
    cfg = ModelConfig(emb_size=16, hidden_size=16, attention=AttentionConfig(type="bahdanau"))
    torch.manual_seed(0)
    model = build_model(cfg, 23, 29).eval()
    g = gen(5)
    src_len = torch.tensor([7, 3, 1, 5, 2, 6, 4])
    src = torch.randint(4, 23, (7, 7), generator=g).masked_fill(torch.arange(7) >= src_len.unsqueeze(1), PAD)
    return model, src, src_len


def test_untrained_search_ends_sentences_at_different_steps_and_orders_them_back(untrained) -> None:
    model, src, src_len = untrained
    together = beam_search(model, src, src_len, beam=3, alpha=1.0, max_len_b=4, n_best=3, return_attention=True)
    assert len(set(together.lengths[:, 0].tolist())) > 2  # sentences left the batch at different steps
    for i in range(src.size(0)):
        alone = beam_search(
            model,
            src[i : i + 1, : src_len[i]],
            src_len[i : i + 1],
            beam=3,
            alpha=1.0,
            max_len_b=4,
            n_best=3,
            return_attention=True,
        )
        L, s = alone.tokens.size(2), int(src_len[i])
        assert torch.equal(together.tokens[i, :, :L], alone.tokens[0])
        assert (together.tokens[i, :, L:] == PAD).all()
        torch.testing.assert_close(together.log_probs[i], alone.log_probs[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(together.attention[i, :, :L, :s], alone.attention[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_untrained_search_scores_are_length_normalized_and_sorted(untrained, alpha: float) -> None:
    model, src, src_len = untrained
    hyp = beam_search(model, src, src_len, beam=4, alpha=alpha, max_len_b=4, n_best=4)
    torch.testing.assert_close(hyp.scores, hyp.log_probs / length_penalty(hyp.lengths, alpha), rtol=1e-6, atol=0)
    assert (hyp.scores[:, :-1] >= hyp.scores[:, 1:]).all()
    assert (hyp.tokens.gather(2, (hyp.lengths - 1).unsqueeze(2)) == EOS).all()


def test_untrained_beam_of_one_is_greedy(untrained) -> None:
    model, src, src_len = untrained
    g = greedy(model, src, src_len, max_len_b=4, return_attention=True)
    b = beam_search(model, src, src_len, beam=1, alpha=0.0, max_len_b=4, return_attention=True)
    L = g.tokens.size(2)
    assert torch.equal(b.lengths, g.lengths) and torch.equal(b.tokens[..., :L], g.tokens)
    torch.testing.assert_close(b.log_probs, g.log_probs)
    torch.testing.assert_close(b.attention[..., :L, :], g.attention)


class _HostReads(TorchDispatchMode):
    """Counts the operations that bring a value back to the host: on a GPU, a wait for the device."""

    READS: ClassVar[set[str]] = {"item", "is_nonzero", "_local_scalar_dense", "nonzero"}  # as inference or not

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.count += func.__name__.split(".")[0] in self.READS
        return func(*args, **(kwargs or {}))


def test_a_search_step_reads_back_one_value_until_a_row_can_run_out_of_room(untrained) -> None:
    """Per step, only "is any sentence done?" goes to the host, until some row could reach its budget
    (the last steps here); the start and a sentence leaving add a few reads.  The search used to
    look for rows out of room at every step as well: two reads per step."""
    model, src, src_len = untrained
    with _HostReads() as reads:
        hyp = beam_search(model, src[:2], src_len[:2], beam=3, max_len_b=60, min_len=24)
    steps = int(hyp.lengths.max())
    assert steps > 24  # min_len keeps EOS out of the first 24 steps
    assert steps <= reads.count <= 1.5 * steps
