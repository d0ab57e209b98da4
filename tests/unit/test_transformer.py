"""The Transformer on tiny sizes: the paths that must agree, masks, gradients, search, config errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from conftest import BOS, V_SRC, V_TGT
from conftest import random_batch as batch
from nmt.config import ConfigError, ModelConfig, TransformerConfig, load
from nmt.decode.beam import beam_search
from nmt.decode.greedy import greedy
from nmt.model.build import build_model
from nmt.model.transformer import Transformer
from nmt.model.transformer_layers import sinusoids


def model(train: bool = False, vocab: tuple[int, int] = (V_SRC, V_TGT), tie: bool = False, **kw: object) -> Transformer:
    cfg = ModelConfig(
        arch="transformer",
        dropout=0.1,
        tie_embeddings=tie,
        transformer=TransformerConfig(
            **{"d_model": 16, "heads": 4, "ff_size": 32, "enc_layers": 2, "dec_layers": 2, **kw}
        ),
    )
    torch.manual_seed(0)
    return build_model(cfg, *vocab).train(train)


def stepped(m: Transformer, src, lengths, tgt_in) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits (B, T, V) and attention (B, T, S) from step() fed the reference, one token at a time."""
    enc = m.encode(src, lengths)
    state, logits, attn = m.init_state(enc), [], []
    for t in range(tgt_in.size(1)):
        out, state, weights = m.step(tgt_in[:, t], state, enc)
        logits.append(out)
        attn.append(weights)
    return torch.stack(logits, 1), torch.stack(attn, 1)


@pytest.mark.parametrize("pre_norm", [True, False])
@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
@pytest.mark.parametrize("cache", [True, False])
def test_step_by_step_equals_parallel_forward(pre_norm, positions, cache):
    m = model(pre_norm=pre_norm, positions=positions)
    m.cache = cache
    src, lengths, tgt_in = batch()
    with torch.no_grad():
        whole, whole_attn = m(src, lengths, tgt_in)
        steps, step_attn = stepped(m, src, lengths, tgt_in)
    assert whole.shape == (3, 5, V_TGT) and whole_attn.shape == (3, 5, 6)
    torch.testing.assert_close(steps, whole, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(step_attn, whole_attn, atol=1e-5, rtol=1e-4)


def test_cached_and_uncached_search_agree():
    m = model()
    src, lengths, _ = batch()
    for search in (lambda: greedy(m, src, lengths), lambda: beam_search(m, src, lengths, beam=3, n_best=3)):
        m.cache = True
        cached = search()
        m.cache = False
        uncached = search()
        assert torch.equal(cached.tokens, uncached.tokens)
        torch.testing.assert_close(cached.log_probs, uncached.log_probs, atol=1e-5, rtol=1e-5)


def test_beam_of_one_is_greedy_and_beam_scores_are_forced_scores():
    m = model()
    src, lengths, _ = batch()
    g, b1 = greedy(m, src, lengths), beam_search(m, src, lengths, beam=1, alpha=0.0)
    L = min(g.tokens.size(2), b1.tokens.size(2))
    assert torch.equal(g.lengths, b1.lengths) and torch.equal(g.tokens[..., :L], b1.tokens[..., :L])
    torch.testing.assert_close(g.log_probs, b1.log_probs)
    hyp = beam_search(m, src, lengths, beam=4, n_best=4)
    for k in range(4):
        tokens, n = hyp.tokens[:, k], hyp.lengths[:, k]
        tgt_in = torch.cat([torch.full((3, 1), BOS), tokens[:, :-1]], 1)  # BOS, y_1 .. y_{L-1}
        with torch.no_grad():
            logp = F.log_softmax(m(src, lengths, tgt_in)[0], -1).gather(2, tokens.unsqueeze(2)).squeeze(2)
        forced = logp.masked_fill(torch.arange(tokens.size(1)) >= n.unsqueeze(1), 0.0).sum(1)
        torch.testing.assert_close(forced, hyp.log_probs[:, k], atol=1e-4, rtol=1e-4)


def test_padding_and_the_future_are_invisible():
    """A sentence's logits do not depend on the padding after it, nor position t's on tokens after t."""
    m = model()
    src, lengths, tgt_in = batch()
    with torch.no_grad():
        logits, attn = m(src, lengths, tgt_in)
        padded = F.pad(src, (0, 3), value=0)
        more_pad, _ = m(padded, lengths, tgt_in)
        future = tgt_in.clone()
        future[:, 3:] = 7
        changed, _ = m(src, lengths, future)
    torch.testing.assert_close(more_pad, logits, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(changed[:, :3], logits[:, :3], atol=1e-5, rtol=1e-4)
    assert not torch.allclose(changed[:, 3:], logits[:, 3:])
    real = torch.arange(6) < lengths.unsqueeze(1)  # (B, S)
    assert torch.all(attn.masked_select(~real.unsqueeze(1).expand_as(attn)) == 0)
    torch.testing.assert_close(attn.sum(-1), torch.ones(3, 5))


def test_attention_maps_per_layer_and_head():
    m = model()
    src, lengths, tgt_in = batch()
    maps = m.attention_maps(src, lengths, tgt_in)
    assert maps["encoder_self"].shape == (3, 2, 4, 6, 6)
    assert maps["decoder_self"].shape == (3, 2, 4, 5, 5)
    assert maps["cross"].shape == (3, 2, 4, 5, 6)
    for weights in maps.values():
        torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    assert torch.all(maps["decoder_self"].triu(1) == 0)  # causal: nothing above the diagonal
    assert torch.all(maps["encoder_self"][1, ..., 3:] == 0)  # sentence 1 has 3 real source tokens


def test_attention_dropout_acts_in_training_only_and_keeps_the_returned_weights():
    """model.transformer.attention_dropout zeroes attention weights before pooling while training:
    the same weights give other outputs on every call, no parameter is added, and in eval the model
    is the one without it; the weights it returns are the softmax's own (each row sums to 1)."""
    from nmt.model.attention import Attention

    plain, dropped = model(), model(attention_dropout=0.5)
    assert plain.state_dict().keys() == dropped.state_dict().keys()  # no parameter added
    dropped.load_state_dict(plain.state_dict())
    src, lengths, tgt_in = batch()
    torch.testing.assert_close(dropped(src, lengths, tgt_in)[0], plain(src, lengths, tgt_in)[0])  # eval: a no-op

    attentions = [m for m in dropped.modules() if isinstance(m, Attention)]
    assert len(attentions) == 2 + 2 * 2  # one per encoder layer, two per decoder layer
    assert all(a.weight_dropout is not None and a.weight_dropout.p == 0.5 for a in attentions)
    dropped.train()
    for module in dropped.modules():  # every other dropout off: the attention's is the only random part
        if isinstance(module, torch.nn.Dropout) and all(module is not a.weight_dropout for a in attentions):
            module.p = 0.0
    first, attn = dropped(src, lengths, tgt_in)
    second, _ = dropped(src, lengths, tgt_in)
    assert not torch.allclose(first, second)
    torch.testing.assert_close(attn.sum(-1), torch.ones(3, 5))  # the softmax's weights, not the dropped ones


def test_gradients_reach_every_parameter():
    m = model(train=True, positions="learned")
    src, lengths, tgt_in = batch()
    logits, _ = m(src, lengths, tgt_in)
    F.cross_entropy(logits.reshape(-1, V_TGT), torch.randint(4, V_TGT, (logits.numel() // V_TGT,))).backward()
    for name, param in m.named_parameters():
        if name == "learned_positions.weight":  # rows past the longest sequence get nothing
            assert param.grad[:6].abs().sum(-1).gt(0).all()
            continue
        assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_tied_and_shared_embeddings_are_one_tensor():
    m = model(tie=True, share_embeddings=True, vocab=(V_TGT, V_TGT))
    assert m.output.weight is m.tgt_embedding.weight is m.src_embedding.weight
    with pytest.raises(ValueError, match="one vocabulary"):
        model(share_embeddings=True, vocab=(V_SRC, V_TGT))


def test_sinusoids_match_their_formula():
    table = sinusoids(7, 6)
    p, i = 5, 1  # dimension pair 2i, 2i+1
    angle = p / 10000 ** (2 * i / 6)
    assert table[p, 2 * i].item() == pytest.approx(torch.sin(torch.tensor(angle)).item(), abs=1e-6)
    assert table[p, 2 * i + 1].item() == pytest.approx(torch.cos(torch.tensor(angle)).item(), abs=1e-6)


def test_learns_to_copy():
    """A 1-layer Transformer copies short random sequences after a few hundred Adam steps."""
    torch.manual_seed(0)
    m = model(train=True, vocab=(V_TGT, V_TGT), d_model=32, ff_size=64, enc_layers=1, dec_layers=1)
    m.emb_dropout.p = 0.0
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    for _ in range(300):
        src = torch.randint(4, V_TGT, (32, 5))
        tgt_in = torch.cat([torch.full((32, 1), BOS), src], 1)
        logits, _ = m(src, torch.full((32,), 5), tgt_in[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V_TGT), src.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    m.eval()
    src = torch.randint(4, V_TGT, (16, 5), generator=torch.Generator().manual_seed(3))
    out = greedy(m, src, torch.full((16,), 5), max_len_a=1.0, max_len_b=1)
    assert (out.tokens[:, 0, :5] == src).float().mean() > 0.9


@pytest.mark.parametrize(
    "overrides,words",
    [
        (["model.arch=transformer", "model.transformer.heads=3"], ["model.transformer.heads=3", "d_model=256"]),
        (["model.arch=transformer", "model.transformer.ff_size=0"], ["model.transformer.ff_size"]),
        (["model.arch=transformer", "model.attention.input_feeding=false"], ["model.attention.input_feeding", "rnn"]),
        (["model.arch=transformer", "model.cell=lstm", "model.hidden_size=64"], ["model.cell", "model.hidden_size"]),
        (["model.transformer.enc_layers=6"], ["model.transformer.enc_layers", "model.arch=transformer"]),
        (["model.arch=transformer", "train.teacher_forcing=0.5"], ["train.teacher_forcing"]),
        (
            ["model.arch=transformer", "model.transformer.share_embeddings=true", "data.joint_vocab=false"],
            ["share_embeddings", "data.joint_vocab"],
        ),
    ],
)
def test_bad_combinations_are_one_config_error(overrides, words):
    with pytest.raises(ConfigError) as err:
        load(None, overrides)
    assert all(word in str(err.value) for word in words) and "\n" not in str(err.value)


def test_transformer_defaults_to_warmup_and_inverse_sqrt():
    cfg = load(None, ["model.arch=transformer"])
    assert (cfg.train.schedule, cfg.train.warmup_steps) == ("inverse_sqrt", 4000)
    assert load(None, ["model.arch=transformer", "train.schedule=constant"]).train.schedule == "constant"
    assert load(None).train.schedule == "constant"  # the RNN default is unchanged
