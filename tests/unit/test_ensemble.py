"""Ensemble decoding on small random models: one member is the model itself, every step is the
mean of the members' log-probabilities, and search scores are the ensemble's own scores."""

import pytest
import torch

from conftest import V_SRC, V_TGT, random_batch
from nmt.config import AttentionConfig, ModelConfig
from nmt.data.tokenizer import BOS, EOS, PAD
from nmt.decode.beam import beam_search
from nmt.decode.ensemble import Ensemble
from nmt.decode.greedy import greedy
from nmt.model.build import build_model


def model(seed: int, attention: str = "bahdanau", tgt_vocab: int = V_TGT):
    torch.manual_seed(seed)
    cfg = ModelConfig(
        emb_size=8, hidden_size=12, dropout=0.0, emb_dropout=0.0, attention=AttentionConfig(type=attention)
    )
    return build_model(cfg, V_SRC, tgt_vocab).eval()


SEARCH = dict(max_len_a=1.0, max_len_b=4)


@pytest.mark.parametrize("attention", ["bahdanau", "luong_general"])
def test_an_ensemble_of_one_is_the_model(attention: str) -> None:
    m = model(0, attention)
    src, src_len, _ = random_batch(B=4)
    for run in (
        lambda x: greedy(x, src, src_len, **SEARCH),
        lambda x: beam_search(x, src, src_len, beam=3, n_best=3, **SEARCH),
    ):
        single, ensemble = run(m), run(Ensemble([m]))
        assert torch.equal(single.tokens, ensemble.tokens)
        torch.testing.assert_close(ensemble.log_probs, single.log_probs)
        torch.testing.assert_close(ensemble.scores, single.scores)


def test_a_step_is_the_mean_of_the_members_log_probabilities() -> None:
    members = [model(0), model(1, "luong_general"), model(2, "qkv")]
    ens = Ensemble(members)
    src, src_len, _ = random_batch(B=3)
    prev = torch.tensor([BOS, 7, 9])
    with torch.no_grad():
        scores, _, attn = ens.step(prev, ens.init_state(ens.encode(src, src_len)), ens.encode(src, src_len))
        want, want_attn = [], []
        for m in members:
            enc = m.encode(src, src_len)
            logits, _, weights = m.step(prev, m.init_state(enc), enc)
            want.append(logits.log_softmax(-1))
            want_attn.append(weights)
    torch.testing.assert_close(scores, sum(want) / 3)
    torch.testing.assert_close(attn, sum(want_attn) / 3)
    torch.testing.assert_close(attn.sum(-1), torch.ones(3))  # still a distribution over the source


def forced_ensemble_log_prob(ens: Ensemble, src, src_len, tokens: torch.Tensor, lengths: torch.Tensor):
    """Sum over the output of the ensemble's renormalized step log-probabilities, feeding ``tokens``."""
    enc = ens.encode(src, src_len)
    state = ens.init_state(enc)
    prev = torch.full((src.size(0),), BOS)
    total = torch.zeros(src.size(0))
    for t in range(tokens.size(1)):
        scores, state, _ = ens.step(prev, state, enc)
        logp = scores.log_softmax(-1).gather(1, tokens[:, t : t + 1]).squeeze(1)
        total += torch.where(t < lengths, logp, torch.zeros_like(logp))
        prev = tokens[:, t]
    return total


@pytest.mark.parametrize("beam", [1, 4])
def test_search_scores_equal_the_ensembles_forced_scores(beam: int) -> None:
    ens = Ensemble([model(0), model(1, "luong_general")])
    src, src_len, _ = random_batch(B=4)
    with torch.no_grad():
        hyp = beam_search(ens, src, src_len, beam=beam, alpha=0.0, **SEARCH)
        tokens, lengths = hyp.tokens[:, 0], hyp.lengths[:, 0]
        forced = forced_ensemble_log_prob(ens, src, src_len, tokens.masked_fill(tokens == PAD, EOS), lengths)
    torch.testing.assert_close(hyp.log_probs[:, 0], forced)


def test_states_reorder_every_member_alike() -> None:
    ens = Ensemble([model(0), model(1)])
    src, src_len, _ = random_batch(B=3)
    enc = ens.encode(src, src_len)
    state = ens.init_state(enc)
    idx = torch.tensor([2, 0, 0])
    for whole, member in zip(state.index_select(idx).members, state.members):
        torch.testing.assert_close(whole.hidden, member.hidden[:, idx])
    for whole, member in zip(enc.index_select(idx).members, enc.members):
        torch.testing.assert_close(whole.memory, member.memory[idx])


def test_members_with_other_vocabulary_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="different target vocabulary sizes"):
        Ensemble([model(0), model(1, tgt_vocab=V_TGT + 1)])
    with pytest.raises(ValueError, match="at least one model"):
        Ensemble([])
