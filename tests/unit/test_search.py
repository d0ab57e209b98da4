"""Greedy and beam search properties on a trained toy model."""

import pytest
import torch
import torch.nn.functional as F

from conftest import repeats_an_ngram
from nmt.data.tokenizer import BOS, EOS, PAD
from nmt.decode.beam import beam_search
from nmt.decode.greedy import greedy
from nmt.decode.inference import load_checkpoint, search, translate_ids


@pytest.fixture(scope="module")
def loaded(trained_toy):
    return load_checkpoint(trained_toy / "checkpoints" / "best.pt", torch.device("cpu"))


@pytest.fixture(scope="module")
def batch(loaded, toy_files):
    from pathlib import Path

    _, files = toy_files
    lines = Path(files["test"][0]).read_text().splitlines()[:24]
    lines[3] = "owl"  # a one-word source among longer ones
    ids = loaded.src_tok.encode(lines)
    src = torch.full((len(ids), max(map(len, ids))), PAD, dtype=torch.long)
    for i, seq in enumerate(ids):
        src[i, : len(seq)] = torch.tensor(seq)
    return src, torch.tensor([len(s) for s in ids])


def forced_log_prob(model, src, src_len, tokens, lengths) -> torch.Tensor:
    """Sum of log p(y_t | y_<t, x) under teacher forcing: the model score of a given output."""
    T = tokens.size(1)
    tgt_in = torch.cat([torch.full((len(src), 1), BOS), tokens[:, :-1]], dim=1).masked_fill(
        torch.arange(T) >= lengths.unsqueeze(1), PAD
    )
    tgt_in[:, 0] = BOS
    with torch.no_grad():
        logits, _ = model(src, src_len, tgt_in)
    logp = F.log_softmax(logits.float(), -1).gather(2, tokens.unsqueeze(2)).squeeze(2)
    return logp.masked_fill(torch.arange(T) >= lengths.unsqueeze(1), 0.0).sum(1)


def test_beam_of_one_equals_greedy(loaded, batch):
    src, src_len = batch
    g = greedy(loaded.model, src, src_len)
    b = beam_search(loaded.model, src, src_len, beam=1, alpha=0.0)
    L = min(g.tokens.size(2), b.tokens.size(2))
    assert torch.equal(g.lengths, b.lengths)
    assert torch.equal(g.tokens[..., :L], b.tokens[..., :L])
    torch.testing.assert_close(g.log_probs, b.log_probs)


def test_beam_never_scores_below_greedy(loaded, batch):
    src, src_len = batch
    g = greedy(loaded.model, src, src_len)
    b = beam_search(loaded.model, src, src_len, beam=5, alpha=0.0)
    assert (b.log_probs[:, 0] >= g.log_probs[:, 0] - 1e-4).all()


def test_beam_scores_equal_forced_decoding(loaded, batch):
    src, src_len = batch
    hyp = beam_search(loaded.model, src, src_len, beam=4, alpha=0.6, n_best=4)
    for k in range(4):
        forced = forced_log_prob(loaded.model, src, src_len, hyp.tokens[:, k], hyp.lengths[:, k])
        torch.testing.assert_close(forced, hyp.log_probs[:, k], atol=1e-4, rtol=1e-4)


def test_n_best_sorted_and_ends_in_eos(loaded, batch):
    src, src_len = batch
    hyp = beam_search(loaded.model, src, src_len, beam=5, alpha=1.0, n_best=5)
    assert (hyp.scores[:, :-1] >= hyp.scores[:, 1:]).all()
    last = hyp.tokens.gather(2, (hyp.lengths - 1).unsqueeze(2)).squeeze(2)
    assert (last == EOS).all()


def test_lengths_respect_min_and_max(loaded, batch):
    src, src_len = batch
    hyp = beam_search(loaded.model, src, src_len, beam=3, alpha=1.0, max_len_a=0.0, max_len_b=4, min_len=3)
    assert (hyp.lengths <= 4).all() and (hyp.lengths >= 4).all()  # 3 tokens, then EOS
    g = greedy(loaded.model, src, src_len, max_len_a=0.0, max_len_b=2)
    assert (g.lengths <= 2).all()


def test_batching_does_not_change_results(loaded, batch):
    """A sentence searched alone and inside a padded batch (where others finish earlier or
    later and leave the batch) gets the same n-best list and scores."""
    src, src_len = batch
    together = beam_search(loaded.model, src, src_len, beam=3, alpha=1.0, n_best=3)
    for i in (0, 3, 7):
        alone = beam_search(loaded.model, src[i : i + 1, : src_len[i]], src_len[i : i + 1], beam=3, alpha=1.0, n_best=3)
        assert torch.equal(together.lengths[i], alone.lengths[0])
        for k in range(3):
            n = int(alone.lengths[0, k])
            assert torch.equal(together.tokens[i, k, :n], alone.tokens[0, k, :n])
        torch.testing.assert_close(together.log_probs[i], alone.log_probs[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(together.scores[i], alone.scores[0], atol=1e-5, rtol=1e-5)


def test_beam_wider_than_half_the_vocabulary(loaded, batch):
    """2K > V: every token of every beam is a candidate; the search still scores exactly."""
    src, src_len = batch
    V = loaded.tgt_tok.vocab_size
    K = V // 2 + 1
    hyp = beam_search(loaded.model, src[:4], src_len[:4], beam=K, alpha=0.0, n_best=3)
    g = greedy(loaded.model, src[:4], src_len[:4])
    assert (hyp.log_probs[:, 0] >= g.log_probs[:, 0] - 1e-4).all()
    for k in range(3):
        forced = forced_log_prob(loaded.model, src[:4], src_len[:4], hyp.tokens[:, k], hyp.lengths[:, k])
        torch.testing.assert_close(forced, hyp.log_probs[:, k], atol=1e-4, rtol=1e-4)


def test_attention_rows_are_distributions(loaded, batch):
    src, src_len = batch
    hyp = beam_search(loaded.model, src, src_len, beam=3, alpha=1.0, return_attention=True)
    for i in range(src.size(0)):
        n, s = int(hyp.lengths[i, 0]), int(src_len[i])
        w = hyp.attention[i, 0, :n]
        torch.testing.assert_close(w.sum(-1), torch.ones(n), atol=1e-4, rtol=0)
        assert (w[:, s:] == 0).all()


@pytest.mark.parametrize("beam", [1, 2])
def test_translate_ids_restores_order_and_handles_empty(loaded, batch, beam):
    """translate_ids sorts sentences by length and sets empty ones aside; every sentence's
    translation and score must still come back at its own place, each row checked."""
    src, src_len = batch
    seqs = [src[i, : src_len[i]].tolist() for i in range(src.size(0))]
    seqs.insert(2, [])
    decode = loaded.config.decode
    out = translate_ids(loaded.model, seqs, decode, torch.device("cpu"), beam=beam)
    ref = search(
        loaded.model,
        src,
        src_len,
        beam=beam,
        alpha=decode.length_penalty,
        max_len_a=decode.max_len_a,
        max_len_b=decode.max_len_b,
        min_len=decode.min_len,
    )
    expected = [ref.tokens[i, 0, : int(ref.lengths[i, 0]) - 1].tolist() for i in range(src.size(0))]
    expected_logp = ref.log_probs[:, 0].tolist()
    expected.insert(2, [])
    expected_logp.insert(2, 0.0)
    assert len(out) == len(seqs)
    assert [t.ids[0] for t in out] == expected
    assert [t.log_probs[0] for t in out] == pytest.approx(expected_logp, abs=1e-5)
    assert len(set(expected_logp)) > len(seqs) // 2  # distinct enough that a swap of rows would show


# --- decoding rules inside the searches ------------------------------------------------------


def outputs(hyp, i, k) -> list[int]:
    return hyp.tokens[i, k, : int(hyp.lengths[i, k])].tolist()


@pytest.mark.parametrize("n", [1, 2])
def test_no_output_repeats_an_ngram(loaded, batch, n):
    src, src_len = batch
    for hyp in (
        greedy(loaded.model, src, src_len, no_repeat_ngram=n),
        beam_search(loaded.model, src, src_len, beam=3, n_best=3, no_repeat_ngram=n),
    ):
        for i in range(src.size(0)):
            for k in range(hyp.tokens.size(1)):
                assert not repeats_an_ngram(outputs(hyp, i, k), n)
    plain = greedy(loaded.model, src, src_len)  # the toy model does repeat words, so the rule acts
    assert any(repeats_an_ngram(outputs(plain, i, 0), 1) for i in range(src.size(0)))


def test_coverage_scores_are_gnmt_scores_of_the_forced_attention(loaded, batch):
    """score = log P / lp(|Y|) + beta * sum_i log min(sum_j a_ij, 1), with a_ij re-read by
    forced decoding of each output."""
    src, src_len = batch
    beta, alpha = 0.4, 0.6
    hyp = beam_search(loaded.model, src, src_len, beam=3, alpha=alpha, n_best=3, coverage=beta)
    for k in range(3):
        tokens, lengths = hyp.tokens[:, k], hyp.lengths[:, k]
        T = tokens.size(1)
        tgt_in = torch.cat([torch.full((len(src), 1), BOS), tokens[:, :-1]], 1)
        with torch.no_grad():
            _, attn = loaded.model(src, src_len, tgt_in)  # (B, T, S)
        attn = attn.masked_fill((torch.arange(T) >= lengths.unsqueeze(1)).unsqueeze(2), 0.0)
        cov = attn.sum(1) + (torch.arange(src.size(1)) >= src_len.unsqueeze(1)).float()
        expected = hyp.log_probs[:, k] / ((5 + lengths.float()) / 6) ** alpha + beta * cov.clamp(1e-6, 1).log().sum(1)
        torch.testing.assert_close(hyp.scores[:, k], expected, atol=1e-4, rtol=1e-4)


def test_sampling_is_seeded_scored_exactly_and_top_k_1_is_greedy(loaded, batch):
    from nmt.decode.greedy import sample
    from nmt.decode.rules import Sampling

    src, src_len = batch

    def draw(seed, n=4, **kw):
        return sample(loaded.model, src, src_len, Sampling(generator=torch.Generator().manual_seed(seed), **kw), n=n)

    a, b = draw(1, temperature=1.5), draw(1, temperature=1.5)
    assert torch.equal(a.tokens, b.tokens) and a.tokens.shape[:2] == (src.size(0), 4)
    assert not torch.equal(a.tokens, draw(2, temperature=1.5).tokens)
    assert (a.log_probs[:, :-1] >= a.log_probs[:, 1:]).all()  # most probable sample first
    for k in range(4):
        forced = forced_log_prob(loaded.model, src, src_len, a.tokens[:, k], a.lengths[:, k])
        torch.testing.assert_close(forced, a.log_probs[:, k], atol=1e-4, rtol=1e-4)
    g, s = greedy(loaded.model, src, src_len), draw(3, n=1, top_k=1)
    assert torch.equal(g.lengths, s.lengths) and torch.equal(g.tokens, s.tokens)


def test_output_budget_never_exceeds_max_output_tokens():
    """However large a * S + b (a command-line typo, a call that skipped the config), the budget stops."""
    from nmt.config.sections import MAX_OUTPUT_TOKENS
    from nmt.decode.common import max_lengths

    src_len = torch.tensor([1, 7, 256])
    for a, b in ((1e9, 10), (0.0, 10**8), (float("inf"), 1), (1e30, 10**12)):
        assert torch.equal(max_lengths(src_len, a, b), torch.full((3,), MAX_OUTPUT_TOKENS))
    assert max_lengths(src_len, 1.5, 10).tolist() == [11, 20, 394]  # within it: a * S + b exactly


def test_every_search_stops_at_max_output_tokens(loaded, batch, monkeypatch):
    """With EOS forbidden (min_len) each search runs to the bound, never to a * S + b."""
    import nmt.decode.common
    from nmt.decode.rules import Sampling

    monkeypatch.setattr(nmt.decode.common, "MAX_OUTPUT_TOKENS", 6)
    src, src_len = batch
    endless = dict(max_len_a=0.0, max_len_b=50, min_len=100)
    for hyp in (
        greedy(loaded.model, src, src_len, **endless),
        beam_search(loaded.model, src, src_len, beam=3, alpha=1.0, n_best=3, **endless),
        search(
            loaded.model,
            src,
            src_len,
            beam=1,
            alpha=1.0,
            n_best=2,
            sampling=Sampling(generator=torch.Generator().manual_seed(0)),
            **endless,
        ),
    ):
        assert hyp.tokens.size(-1) <= 6 and (hyp.lengths == 6).all()
        assert (hyp.tokens.gather(2, (hyp.lengths - 1).unsqueeze(-1)) == EOS).all()  # forced EOS at the bound


DEVICE_OPTIONS = [
    {"beam": 5, "alpha": 1.0},
    {"beam": 4, "alpha": 0.6, "n_best": 4, "return_attention": True},
    {"beam": 3, "alpha": 0.0, "n_best": 2, "coverage": 0.3, "min_len": 2, "max_len_a": 0.5, "max_len_b": 2},
    {"beam": 3, "alpha": 1.0, "no_repeat_ngram": 2},
]


@pytest.mark.parametrize("options", DEVICE_OPTIONS)
@pytest.mark.parametrize("check_every", [1, 3, 4])
def test_the_gpu_path_of_beam_search_gives_the_host_paths_output(loaded, batch, monkeypatch, options, check_every):
    """What beam search does on a GPU (rows out of room rewritten by a mask, done sentences
    looked for every DONE_CHECK_EVERY steps), run on the CPU by pretending tensors live on a
    device, gives the same scores, and the same tokens and attention for every hypothesis
    whose score no other of its sentence shares.  Exact ties happen only where a budget
    shorter than min_len forces EOS onto every hypothesis (the third options here): their
    order is top-k's, which promises none among equal values."""
    import nmt.decode.beam as beam_module
    from nmt.decode.arrays_torch import TorchOps

    src, src_len = batch
    host = beam_search(loaded.model, src, src_len, **options)
    monkeypatch.setattr(TorchOps, "waits", lambda self, x: True)
    monkeypatch.setattr(beam_module, "DONE_CHECK_EVERY", check_every)
    device = beam_search(loaded.model, src, src_len, **options)
    assert torch.isfinite(host.log_probs).all()  # every hypothesis compared is a real one
    assert torch.equal(host.log_probs, device.log_probs)
    assert torch.equal(host.scores, device.scores)
    alone = (host.scores[:, :, None] == host.scores[:, None, :]).sum(-1) == 1  # (B, n) no tie
    assert alone.float().mean() > 0.9
    assert torch.equal(host.tokens[alone], device.tokens[alone])
    assert torch.equal(host.lengths[alone], device.lengths[alone])
    if host.attention is not None:
        assert torch.equal(host.attention[alone], device.attention[alone])
