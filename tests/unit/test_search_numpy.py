"""Greedy and beam search on numpy arrays: the same code as on tensors, the same results, no torch.

A tiny torch model seen through numpy arrays only (:class:`NumpyView`) is searched on numpy
and on tensors; tokens must be identical and scores agree to 1e-5.  A pure-numpy toy model
(:class:`ToyModel`, random matrices) is then searched in a fresh interpreter, which must
never load torch.  This module imports torch only inside the functions that need it, since
that interpreter imports it.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nmt.config.sections import DecodeConfig
from nmt.data.tokenizer import EOS, PAD
from nmt.decode.arrays import NumpyOps
from nmt.decode.batched import translate_arrays
from nmt.decode.beam import beam_search
from nmt.decode.common import Hypotheses
from nmt.decode.greedy import greedy

V_SRC, V_TGT = 23, 29
LENGTHS = [7, 3, 1, 5, 2, 6, 4]  # sentences of different lengths, one of a single token


def numpy_batch(seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Source ids (B, S) int64 PAD-padded after ``LENGTHS``, and those lengths."""
    rng = np.random.default_rng(seed)
    src_len = np.array(LENGTHS, dtype=np.int64)
    src = rng.integers(4, V_SRC, (len(LENGTHS), max(LENGTHS))).astype(np.int64)
    src[np.arange(src.shape[1]) >= src_len[:, None]] = PAD
    return src, src_len


# ------------------------------------------------------------------ a torch model behind numpy arrays


class _Rows:
    """A torch model's encoding or state, reordered with numpy indices only."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def index_select(self, idx: np.ndarray) -> _Rows:
        import torch

        assert isinstance(idx, np.ndarray) and idx.dtype == np.int64
        return _Rows(self.inner.index_select(torch.from_numpy(np.ascontiguousarray(idx))))


class NumpyView:
    """A torch :class:`~nmt.decode.common.StepModel` that takes and gives numpy arrays only."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def encode(self, src: np.ndarray, src_len: np.ndarray) -> _Rows:
        import torch

        assert isinstance(src, np.ndarray) and isinstance(src_len, np.ndarray)
        with torch.inference_mode():
            return _Rows(self.model.encode(torch.from_numpy(src), torch.from_numpy(src_len)))

    def init_state(self, enc: _Rows) -> _Rows:
        import torch

        with torch.inference_mode():
            return _Rows(self.model.init_state(enc.inner))

    def step(self, prev: np.ndarray, state: _Rows, enc: _Rows) -> tuple[np.ndarray, _Rows, np.ndarray]:
        import torch

        assert isinstance(prev, np.ndarray) and prev.dtype == np.int64
        with torch.inference_mode():
            logits, new, attn = self.model.step(torch.from_numpy(np.ascontiguousarray(prev)), state.inner, enc.inner)
        return logits.numpy().copy(), _Rows(new), attn.numpy().copy()


def build(arch: str) -> Any:
    import torch

    from nmt.config import AttentionConfig, ModelConfig, TransformerConfig
    from nmt.model.build import build_model

    torch.manual_seed(0)
    if arch == "transformer":
        transformer = TransformerConfig(d_model=16, heads=4, ff_size=32, enc_layers=2, dec_layers=2)
        cfg = ModelConfig(arch="transformer", transformer=transformer)
    else:
        cfg = ModelConfig(emb_size=16, hidden_size=16, attention=AttentionConfig(type="bahdanau"))
    return build_model(cfg, V_SRC, V_TGT).eval()


@pytest.fixture(scope="module", params=["rnn", "transformer"])
def model(request: pytest.FixtureRequest) -> Any:
    return build(request.param)


def assert_same(on_numpy: Hypotheses, on_torch: Hypotheses) -> None:
    """Token-identical outputs, scores and attention within 1e-5, every field a numpy array."""
    for name in ("tokens", "lengths", "log_probs", "scores"):
        assert isinstance(getattr(on_numpy, name), np.ndarray), name
    np.testing.assert_array_equal(on_numpy.tokens, on_torch.tokens.numpy())
    np.testing.assert_array_equal(on_numpy.lengths, on_torch.lengths.numpy())
    assert np.isfinite(on_numpy.log_probs).all()  # every hypothesis compared is a real one
    np.testing.assert_allclose(on_numpy.log_probs, on_torch.log_probs.numpy(), rtol=0, atol=1e-5)
    np.testing.assert_allclose(on_numpy.scores, on_torch.scores.numpy(), rtol=0, atol=1e-5)
    assert (on_numpy.attention is None) == (on_torch.attention is None)
    if on_numpy.attention is not None:
        np.testing.assert_allclose(on_numpy.attention, on_torch.attention.numpy(), rtol=0, atol=1e-5)


GREEDY = [{}, {"min_len": 3, "no_repeat_ngram": 1, "return_attention": True}, {"max_len_a": 0.0, "max_len_b": 3}]
BEAM = [
    {"beam": 1, "alpha": 0.0},
    {"beam": 3, "alpha": 1.0, "n_best": 2, "return_attention": True},
    {"beam": 5, "alpha": 0.6, "n_best": 2, "coverage": 0.4, "min_len": 2},
    {"beam": 3, "alpha": 1.0, "n_best": 3, "no_repeat_ngram": 2, "coverage": 0.2, "return_attention": True},
    {"beam": 5, "alpha": 0.0, "n_best": 5, "max_len_a": 0.5, "max_len_b": 3},
]


@pytest.mark.parametrize("options", GREEDY)
def test_greedy_on_numpy_equals_greedy_on_tensors(model: Any, options: dict[str, Any]) -> None:
    import torch

    src, src_len = numpy_batch()
    assert_same(
        greedy(NumpyView(model), src, src_len, **options),
        greedy(model, torch.from_numpy(src), torch.from_numpy(src_len), **options),
    )


@pytest.mark.parametrize("options", BEAM)
def test_beam_search_on_numpy_equals_beam_search_on_tensors(model: Any, options: dict[str, Any]) -> None:
    import torch

    src, src_len = numpy_batch()
    assert_same(
        beam_search(NumpyView(model), src, src_len, **options),
        beam_search(model, torch.from_numpy(src), torch.from_numpy(src_len), **options),
    )


def test_the_numpy_batch_loop_translates_as_translate_ids(model: Any) -> None:
    """Sorted, cut into batches, an empty sentence set aside, results back in input order."""
    import torch

    from nmt.decode.inference import translate_ids

    src, src_len = numpy_batch()
    sentences = [src[i, : src_len[i]].tolist() for i in range(len(src))]
    sentences.insert(2, [])
    decode = DecodeConfig(beam=3, batch_size=3, length_penalty=0.6)
    on_numpy = translate_arrays(NumpyView(model), sentences, decode, vocab_size=V_TGT, n_best=2, return_attention=True)
    on_torch = translate_ids(model, sentences, decode, torch.device("cpu"), n_best=2, return_attention=True)
    assert [t.ids for t in on_numpy] == [t.ids for t in on_torch] and on_numpy[2].ids == [[], []]
    for a, b in zip(on_numpy, on_torch):
        assert a.scores == pytest.approx(b.scores, abs=1e-5) and a.log_probs == pytest.approx(b.log_probs, abs=1e-5)
        if b.attention is None:
            assert a.attention is None
        else:
            assert isinstance(a.attention, np.ndarray) and isinstance(b.attention, torch.Tensor)
            np.testing.assert_allclose(a.attention, b.attention.numpy(), rtol=0, atol=1e-5)


# ------------------------------------------------------------------ the numpy operations themselves


def test_numpy_topk_is_torchs_on_distinct_values_and_breaks_ties_by_the_lower_index() -> None:
    import torch

    ops, rng = NumpyOps(), np.random.default_rng(0)
    x = rng.standard_normal((6, 40)).astype(np.float32)
    x[:, :5] = -np.inf  # forbidden tokens
    for k in (1, 3, 10, 40):
        values, idx = ops.topk(x, k)
        t_values, t_idx = torch.from_numpy(x).topk(k, dim=-1)
        np.testing.assert_array_equal(values, t_values.numpy())
        np.testing.assert_array_equal(idx[:, : min(k, 35)], t_idx.numpy()[:, : min(k, 35)])  # the finite ones
    tied = np.array([[0.0, 1.0, 1.0, 0.0, 1.0, 0.0, -np.inf, -np.inf]], dtype=np.float32)
    assert ops.topk(tied, 5)[1].tolist() == [[1, 2, 4, 0, 3]]  # ties at the k-th place too: lower index first
    assert ops.topk(tied, 8)[1].tolist() == [[1, 2, 4, 0, 3, 5, 6, 7]]
    assert ops.topk(np.full((2, 9), -np.inf, dtype=np.float32), 3)[1].tolist() == [[0, 1, 2]] * 2


def test_numpy_logsumexp_and_restricted_logits_stay_float32() -> None:
    ops = NumpyOps()
    x = np.array([[0.0, -np.inf, 2.0], [-np.inf, -np.inf, -np.inf]], dtype=np.float32)
    out = ops.logsumexp(x[:1])
    assert out.dtype == np.float32 and out.shape == (1, 1)
    np.testing.assert_allclose(out, [[np.log(1 + np.exp(2.0))]], rtol=1e-6)
    readonly = x.copy()
    readonly.flags.writeable = False
    assert ops.to_float(readonly).flags.writeable  # searches restrict logits in place


# ------------------------------------------------------------------ a model on numpy alone


@dataclass
class ToyEncoding:
    memory: np.ndarray  # (B, S, H)
    mask: np.ndarray  # (B, S) True at real tokens

    def index_select(self, idx: np.ndarray) -> ToyEncoding:
        return ToyEncoding(self.memory[idx], self.mask[idx])


@dataclass
class ToyState:
    hidden: np.ndarray  # (B, H)

    def index_select(self, idx: np.ndarray) -> ToyState:
        return ToyState(self.hidden[idx])


class ToyModel:
    """Random matrices: embedded source words as memory, a tanh recurrence, dot attention."""

    def __init__(self, seed: int = 0, H: int = 8) -> None:
        rng = np.random.default_rng(seed)
        self.src_emb, self.tgt_emb = rng.standard_normal((V_SRC, H)), rng.standard_normal((V_TGT, H))
        self.recur, self.out = rng.standard_normal((H, H)) / np.sqrt(H), rng.standard_normal((H, V_TGT)) * 2

    def encode(self, src: np.ndarray, src_len: np.ndarray) -> ToyEncoding:
        return ToyEncoding(self.src_emb[src], np.arange(src.shape[1]) < src_len[:, None])

    def init_state(self, enc: ToyEncoding) -> ToyState:
        return ToyState((enc.memory * enc.mask[..., None]).sum(1) / enc.mask.sum(1, keepdims=True))

    def step(self, prev: np.ndarray, state: ToyState, enc: ToyEncoding) -> tuple[np.ndarray, ToyState, np.ndarray]:
        hidden = np.tanh(self.tgt_emb[prev] + state.hidden @ self.recur)  # (N, H)
        energy = np.where(enc.mask, np.einsum("nsh,nh->ns", enc.memory, hidden), -np.inf)
        attn = np.exp(energy - energy.max(1, keepdims=True))
        attn /= attn.sum(1, keepdims=True)  # (N, S)
        context = np.einsum("ns,nsh->nh", attn, enc.memory)
        return ((hidden + context) @ self.out).astype(np.float32), ToyState(hidden), attn.astype(np.float32)


def run_toy_searches() -> None:
    """Greedy and beam search (with every rule) and the batch loop on the toy model; checks their output."""
    model, (src, src_len) = ToyModel(), numpy_batch()
    g = greedy(model, src, src_len, no_repeat_ngram=2, return_attention=True)
    b = beam_search(model, src, src_len, beam=4, n_best=2, coverage=0.3, no_repeat_ngram=2, return_attention=True)
    one = beam_search(model, src, src_len, beam=1, alpha=0.0)
    for hyp in (g, b, one):
        assert isinstance(hyp.tokens, np.ndarray) and np.isfinite(hyp.log_probs).all()
        assert (np.take_along_axis(hyp.tokens, hyp.lengths[..., None] - 1, 2) == EOS).all()
    assert (b.scores[:, 0] >= b.scores[:, 1]).all() and b.attention.shape[:2] == (len(src), 2)
    plain = greedy(model, src, src_len)  # what a beam of one computes
    assert (one.lengths == plain.lengths).all() and (one.tokens[..., : plain.tokens.shape[2]] == plain.tokens).all()
    sentences = [src[i, : src_len[i]].tolist() for i in range(len(src))] + [[]]
    out = translate_arrays(model, sentences, DecodeConfig(beam=3, batch_size=2), vocab_size=V_TGT, n_best=3)
    assert [len(t.ids) for t in out] == [3] * len(sentences) and out[-1].ids == [[], [], []]


def test_a_numpy_model_is_searched_without_torch() -> None:
    run_toy_searches()  # here too, so a failing check shows its own traceback
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_search_numpy as t; "
        "t.run_toy_searches(); print('torch' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
