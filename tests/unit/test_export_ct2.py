"""``nmt export --format ctranslate2`` and the ctranslate2 engine: our own searches' translations, without torch.

Tiny random Transformers (every weight moved off its initial value, so a layer norm or bias
mapped to the wrong place shows) are exported and searched by CTranslate2, and compared with
:func:`nmt.decode.greedy.greedy` and :func:`nmt.decode.beam.beam_search` on the same model.
Like a trained model, each gives PAD and BOS about zero probability (neither is ever a
training target); CTranslate2's beam ranks with those removed from the softmax, ours with
them in, so only then can the two beams be compared token for token.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
import torch

from nmt import config as C
from nmt.data.batching import pad_sources
from nmt.data.prepare import spm_settings
from nmt.data.tokenizer import BOS, EOS, PAD, Tokenizer, train_sentencepiece
from nmt.decode.batched import Translation
from nmt.decode.beam import beam_search
from nmt.decode.common import Hypotheses, max_lengths
from nmt.decode.ct2 import CT2Translator
from nmt.decode.greedy import greedy
from nmt.engine.manifest import ExportError, read_manifest
from nmt.export.ctranslate2 import export_ctranslate2
from nmt.model.build import build_model
from nmt.model.transformer import Transformer
from nmt.run import checkpoint as ckpt
from nmt.run.state import TrainState
from nmt.util.errors import UserError

TINY = [
    "model.arch=transformer",
    *("model.transformer." + o for o in ("d_model=16", "heads=4", "ff_size=32", "enc_layers=2", "dec_layers=2")),
    "model.transformer.max_len=8",  # learned positions: sources and outputs run past the table's end
    "decode.max_len_a=1.0",
    "decode.max_len_b=4",
]
CASES = {  # pre_norm, positions, share_embeddings, tie_embeddings
    "pre-sin": (True, "sinusoidal", False, False),
    "post-sin": (False, "sinusoidal", False, False),
    "pre-learned": (True, "learned", False, False),
    "post-learned": (False, "learned", False, False),
    "pre-sin-shared-tied": (True, "sinusoidal", True, True),
    "post-learned-shared": (False, "learned", True, False),
    "pre-learned-shared-tied": (True, "learned", True, True),
    "post-sin-tied": (False, "sinusoidal", False, True),
}


class Exported(NamedTuple):
    model: Transformer
    config: C.Config
    engine: CT2Translator
    folder: Path


@pytest.fixture(scope="module")
def spm_bytes(tmp_path_factory: pytest.TempPathFactory, toy_pairs: list[tuple[str, str]]) -> bytes:
    """One small SentencePiece model for both sides (so embeddings may be shared)."""
    folder = tmp_path_factory.mktemp("spm")
    (folder / "t.txt").write_text("".join(f"{de}\n{en}\n" for de, en in toy_pairs if de), encoding="utf-8")
    settings = {k: v for k, v in spm_settings(C.DataConfig()).items() if k != "joint"}
    path = train_sentencepiece([folder / "t.txt"], folder / "m", **{**settings, "vocab_size": 60, "num_threads": 1})
    return path.read_bytes()


def save_checkpoint(
    path: Path, overrides: list[str], spm: bytes, seed: int = 0
) -> tuple[Path, torch.nn.Module, C.Config]:
    """A model-only checkpoint of a random model built from ``overrides``, as training writes one."""
    cfg = C.load(None, overrides)
    V = Tokenizer(spm).vocab_size
    torch.manual_seed(seed)
    model = build_model(cfg.model, V, V).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
        if isinstance(model, Transformer):
            model.output.bias[PAD] = model.output.bias[BOS] = -30.0
            model.output.bias[EOS] += 1.5  # outputs of several lengths, not all cut at the budget
    saved = ckpt.Checkpoint(
        cfg.model_dump(mode="json"), model.state_dict(), {"src": spm, "tgt": spm}, TrainState(step=5)
    )
    return ckpt.save(path, saved), model, cfg


def export_case(case: str, folder: Path, spm: bytes) -> Exported:
    pre_norm, positions, share, tie = CASES[case]
    overrides = TINY + [
        f"model.transformer.pre_norm={str(pre_norm).lower()}",
        f"model.transformer.positions={positions}",
        f"model.transformer.share_embeddings={str(share).lower()}",
        f"model.tie_embeddings={str(tie).lower()}",
    ]
    path, model, cfg = save_checkpoint(folder / "model.pt", overrides, spm)
    assert isinstance(model, Transformer)
    export_ctranslate2(path, folder / "ct2")
    return Exported(model, cfg, CT2Translator(folder / "ct2", threads=1), folder / "ct2")


@pytest.fixture(scope="module", params=list(CASES))
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, spm_bytes: bytes) -> Exported:
    """Every architecture variant, for the tests that compare translations."""
    return export_case(request.param, tmp_path_factory.mktemp(request.param), spm_bytes)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, spm_bytes: bytes) -> Exported:
    """One variant, for the tests of what does not depend on the architecture."""
    return export_case("pre-sin-shared-tied", tmp_path_factory.mktemp("shared"), spm_bytes)


def sources(V: int, n: int = 30, seed: int = 1) -> list[list[int]]:
    """Random source sentences of 1 to 14 tokens (no specials)."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(4, V, (int(k),), generator=g).tolist() for k in torch.randint(1, 15, (n,), generator=g)]


def best(hyp: Hypotheses) -> list[list[int]]:
    """Each sentence's best hypothesis without EOS."""
    return [hyp.tokens[i, 0, : max(int(hyp.lengths[i, 0]) - 1, 0)].tolist() for i in range(hyp.tokens.size(0))]


def ours(model: Transformer, sents: list[list[int]], decode: C.DecodeConfig, beam: int) -> Hypotheses:
    src, src_len = pad_sources(sents)
    limits = dict(max_len_a=decode.max_len_a, max_len_b=decode.max_len_b, min_len=decode.min_len)
    if beam == 1:
        return greedy(model, src, src_len, no_repeat_ngram=decode.no_repeat_ngram, **limits)
    return beam_search(
        model, src, src_len, beam=beam, alpha=decode.length_penalty, coverage=decode.coverage_penalty, **limits
    )


def agreement(got: list[Translation], want: Hypotheses) -> float:
    return sum(g.ids[0] == w for g, w in zip(got, best(want))) / len(got)


def test_greedy_is_our_greedy_search(exported: Exported) -> None:
    """Token for token, with our log-probabilities, for pre- and post-norm, both position kinds, shared or not."""
    sents = sources(exported.engine.target_vocab_size)
    got = exported.engine.translate_ids(sents, exported.config.decode, beam=1)
    want = ours(exported.model, sents, exported.config.decode, beam=1)
    assert [g.ids[0] for g in got] == best(want)
    assert [g.log_probs[0] for g in got] == pytest.approx(want.log_probs[:, 0].tolist(), abs=1e-4)
    assert [g.scores for g in got] == [g.log_probs for g in got]


def test_beam_without_length_penalty_is_our_beam_search(exported: Exported) -> None:
    decode = exported.config.decode.model_copy(update={"length_penalty": 0.0})
    sents = sources(exported.engine.target_vocab_size, seed=2)
    got = exported.engine.translate_ids(sents, decode, beam=4)
    want = ours(exported.model, sents, decode, beam=4)
    assert [g.ids[0] for g in got] == best(want)
    assert [g.scores[0] for g in got] == pytest.approx(want.scores[:, 0].tolist(), abs=1e-4)


def test_beam_with_the_gnmt_penalty_agrees_more_with_more_patience(exported: Exported) -> None:
    """CTranslate2 stops after beam x patience finished hypotheses, ours when none could still win."""
    sents = sources(exported.engine.target_vocab_size, seed=3)
    want = ours(exported.model, sents, exported.config.decode, beam=4)
    rates = [
        agreement(exported.engine.translate_ids(sents, exported.config.decode, beam=4, patience=p), want)
        for p in (1.0, 4.0)
    ]
    assert rates[0] >= 0.5 and rates[1] >= rates[0] and rates[1] >= 0.85


@pytest.mark.parametrize(
    "update",
    [
        {"max_len_a": 0.0, "max_len_b": 1},  # only the forced EOS
        {"max_len_a": 0.0, "max_len_b": 2, "min_len": 5},  # EOS forbidden until the budget forces it
        {"min_len": 0},  # an empty translation is allowed
        {"min_len": 3, "max_len_b": 8},
        {"no_repeat_ngram": 2, "max_len_b": 8},
    ],
)
def test_budgets_and_rules_are_ours(exported: Exported, update: dict) -> None:
    decode = exported.config.decode.model_copy(update=update)
    sents = sources(exported.engine.target_vocab_size, seed=4)
    got = exported.engine.translate_ids(sents, decode, beam=1)
    want = ours(exported.model, sents, decode, beam=1)
    assert [g.ids[0] for g in got] == best(want)
    # Where min_len forbids the EOS the budget forces, ours scores it float32's lowest value; the engine, its log-probability.
    pairs = [(g.log_probs[0], w) for g, w in zip(got, want.log_probs[:, 0].tolist()) if w > -1e30]
    assert [g for g, _ in pairs] == pytest.approx([w for _, w in pairs], abs=1e-4)


@pytest.mark.parametrize("a", [0.0, 0.3, 1.0, 1.1, 1.15, 1.5, 2.0])
def test_output_budgets_are_our_searches(a: float) -> None:
    """The engine groups sentences by max_lengths on numpy arrays: the budgets of the searches on tensors."""
    lengths = torch.arange(1, 200)
    assert max_lengths(lengths.numpy(), a, 3).tolist() == max_lengths(lengths, a, 3).tolist()


def test_an_n_best_list_is_ranked_best_first(shared: Exported) -> None:
    sents = sources(shared.engine.target_vocab_size, n=8, seed=5)
    for result in shared.engine.translate_ids(sents, shared.config.decode, beam=4, n_best=3):
        assert len(result.ids) == 3 and len({tuple(ids) for ids in result.ids}) == 3
        assert result.scores == sorted(result.scores, reverse=True)


def test_the_coverage_penalty_ranks_as_ours(shared: Exported) -> None:
    decode = shared.config.decode.model_copy(update={"length_penalty": 0.0, "coverage_penalty": 0.2})
    sents = sources(shared.engine.target_vocab_size, seed=6)
    want = ours(shared.model, sents, decode, beam=4)
    assert agreement(shared.engine.translate_ids(sents, decode, beam=4, patience=4.0), want) >= 0.85


def test_empty_sources_give_empty_translations(shared: Exported) -> None:
    got = shared.engine.translate_ids([[], [5, 6, 7], []], shared.config.decode, beam=2, n_best=2)
    assert got[0].ids == got[2].ids == [[], []] and got[1].ids[0]


def test_the_folder_holds_the_model_both_tokenizers_and_its_manifest(shared: Exported, spm_bytes: bytes) -> None:
    manifest = read_manifest(shared.folder, "ctranslate2")
    assert (manifest.arch, manifest.step, manifest.tgt_vocab) == ("transformer", 5, Tokenizer(spm_bytes).vocab_size)
    assert {"weights", "ct2_config", "shared_vocabulary"} <= manifest.files.keys()  # one spm model: one vocabulary
    assert (shared.folder / manifest.files["src_spm"]).read_bytes() == spm_bytes
    assert manifest.decode == shared.config.decode.model_dump(mode="json")


def test_int8_weights_translate_sensibly(exported: Exported) -> None:
    """Quantized, greedy and beam outputs stay valid: within the budget, no special token, finite scores.

    (A random model's next-token margins are too thin to expect int8 to pick what float32 picks.)
    """
    int8 = CT2Translator(exported.folder, compute_type="int8", threads=1)
    sents = sources(exported.engine.target_vocab_size, seed=7)
    budgets = max_lengths(torch.tensor([len(s) for s in sents]), 1.0, 4).tolist()
    for beam in (1, 4):
        got = int8.translate_ids(sents, exported.config.decode, beam=beam)
        assert all(len(g.ids[0]) < b for g, b in zip(got, budgets))
        assert all(t not in (PAD, BOS, EOS) and 0 <= t < int8.target_vocab_size for g in got for t in g.ids[0])
        assert all(-1e3 < g.log_probs[0] < 0 for g in got)


def test_an_rnn_checkpoint_is_refused_in_one_line(tmp_path: Path, spm_bytes: bytes) -> None:
    path, _, _ = save_checkpoint(tmp_path / "rnn.pt", ["model.hidden_size=16", "model.emb_size=8"], spm_bytes)
    with pytest.raises(ExportError, match="CTranslate2 holds Transformers only, use --format onnx") as info:
        export_ctranslate2(path, tmp_path / "out")
    assert "\n" not in str(info.value) and not (tmp_path / "out").exists()


def test_the_engine_translates_without_torch(shared: Exported) -> None:
    code = (
        "import sys; from nmt.config import DecodeConfig; from nmt.decode.ct2 import CT2Translator; "
        f"out = CT2Translator({str(shared.folder)!r}, threads=1).translate_ids([[5, 6, 7]], DecodeConfig(), beam=2); "
        "sys.exit(3 if 'torch' in sys.modules else 0 if out[0].ids[0] else 4)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_a_source_longer_than_the_stored_positions_is_cut_with_a_warning(
    shared: Exported, caplog: pytest.LogCaptureFixture
) -> None:
    decode = shared.config.decode.model_copy(update={"max_len_a": 0.0, "max_len_b": 3})
    long = [5 + i % 50 for i in range(shared.engine.max_source_tokens + 5)]
    got = shared.engine.translate_ids([long], decode, beam=1)
    cut = shared.engine.translate_ids([long[: shared.engine.max_source_tokens]], decode, beam=1)
    assert got == cut and "translating its first" in caplog.text


@pytest.mark.parametrize(
    "update,beam,n_best,patience,words",
    [
        ({"sample": True, "beam": 1}, 1, 1, 1.0, "sampling needs --engine torch"),
        ({}, 2, 3, 1.0, "need 1 <= n-best <= beam"),
        ({}, 10_000, 1, 1.0, "the beam size must be between 1 and"),
        ({}, 4, 1, 0.5, "patience >= 1"),
    ],
)
def test_searches_the_engine_does_not_run_are_refused_in_one_line(
    shared: Exported, update: dict, beam: int, n_best: int, patience: float, words: str
) -> None:
    decode = shared.config.decode.model_copy(update=update)
    with pytest.raises(UserError, match=words) as info:
        shared.engine.translate_ids([[5, 6]], decode, beam=beam, n_best=n_best, patience=patience)
    assert "\n" not in str(info.value)


def _edited(shared: Exported, tmp_path: Path, name: str, edit) -> Path:
    """A copy of the shared export with the JSON file ``name`` passed through ``edit``."""
    copy = Path(shutil.copytree(shared.folder, tmp_path / "copy"))
    (copy / name).write_text(json.dumps(edit(json.loads((copy / name).read_text(encoding="utf-8")))))
    return copy


@pytest.mark.parametrize(
    ("name", "edit", "message"),
    [
        ("shared_vocabulary.json", lambda v: [t for t in v if t != "<s>"], r"is not the vocabulary of spm\.src\.model"),
        ("shared_vocabulary.json", lambda v: ["<S>" if t == "<s>" else t for t in v], r"its token 2 is '<S>'"),
        ("shared_vocabulary.json", lambda v: {"tokens": v}, "is not the list nmt export writes"),
        ("config.json", lambda c: {**c, "bos_token": "<S>"}, r"bos_token is '<S>', the target SentencePiece"),
        ("export.json", lambda m: {**m, "tgt_vocab": m["tgt_vocab"] + 40}, r"spm\.tgt\.model has \d+ pieces"),
    ],
    ids=["without-bos", "bos-renamed", "not-a-list", "config-bos", "export-json-vocab"],
)
def test_vocabularies_that_are_not_the_spm_models_are_refused(
    shared: Exported, tmp_path: Path, name: str, edit, message: str
) -> None:
    copy = _edited(shared, tmp_path, name, edit)
    with pytest.raises(ExportError, match=message) as info:
        CT2Translator(copy, threads=1)
    assert "\n" not in str(info.value)


def test_a_larger_target_spm_swapped_in_is_refused(shared: Exported, tmp_path: Path, big_spm: bytes) -> None:
    """It decoded CTranslate2's ids with the wrong pieces, or failed on a piece its vocabulary lacks."""
    copy = Path(shutil.copytree(shared.folder, tmp_path / "copy"))
    (copy / "spm.tgt.model").write_bytes(big_spm)
    with pytest.raises(ExportError, match=r"spm\.tgt\.model has \d+ pieces, export\.json says"):
        CT2Translator(copy, threads=1)
