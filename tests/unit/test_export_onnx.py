"""ONNX export (``nmt export --format onnx``) of every model kind, run on onnxruntime by nmt's own searches.

For each kind a tiny random model is exported from a checkpoint; then the graphs must give the
PyTorch model's logits and attention step by step, greedy search on onnxruntime must give the
same tokens, and beam search the same hypotheses with scores within 1e-4.  Each export takes
seconds (the exporter traces two graphs), so the kinds are chosen to cover every attention energy,
both cells, both decoder styles with and without input feeding, self-attention on both sides,
several layers, and the Transformer with either norm placement and either position encoding.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from nmt import config as C
from nmt.data.prepare import load_prepared
from nmt.data.tokenizer import Tokenizer
from nmt.decode.batched import translate_arrays
from nmt.decode.engines import open_engine
from nmt.decode.inference import Loaded, load_checkpoint, translate_ids
from nmt.engine.manifest import ExportError, read_manifest
from nmt.engine.onnx_model import EXPORT_ID, OnnxModel
from nmt.export.onnx_export import export_onnx
from nmt.model.build import build_model
from nmt.run import checkpoint as ckpt
from nmt.run.state import TrainState

CPU = torch.device("cpu")
SMALL = ["model.emb_size=8", "model.hidden_size=8", "decode.max_len_b=8"]
KINDS = {
    "none": ["model.attention.type=none"],
    "bahdanau-2layers": ["model.attention.type=bahdanau", "model.enc_layers=2", "model.dec_layers=2"],
    "luong_dot": ["model.attention.type=luong_dot", "model.bidirectional=false"],
    "luong_general-lstm": ["model.attention.type=luong_general", "model.cell=lstm"],
    "luong_concat-no-feeding": ["model.attention.type=luong_concat", "model.attention.input_feeding=false"],
    "scaled_dot": ["model.attention.type=scaled_dot", "model.bidirectional=false"],
    "qkv-2heads": ["model.attention.type=qkv", "model.attention.heads=2"],
    "gaussian": ["model.attention.type=gaussian"],
    "location": ["model.attention.type=custom", "model.attention.energy=location"],
    "self-attention-lstm": [
        "model.attention.type=bahdanau",
        "model.cell=lstm",
        "model.enc_self_attention.layers=1",
        "model.dec_self_attention.enabled=true",
    ],
    "transformer-pre-sinusoids": [
        "model.arch=transformer",
        *(f"model.transformer.{o}" for o in ("d_model=16", "heads=2", "ff_size=32", "enc_layers=2", "dec_layers=2")),
    ],
    "transformer-post-learned-shared": [
        "model.arch=transformer",
        *(f"model.transformer.{o}" for o in ("d_model=16", "heads=2", "ff_size=32", "enc_layers=1", "dec_layers=1")),
        "model.transformer.pre_norm=false",
        "model.transformer.positions=learned",
        "model.transformer.max_len=5",  # shorter than the outputs: later positions reuse the last row
        "model.transformer.share_embeddings=true",
        "model.tie_embeddings=true",
    ],
}
SOURCES = ["Ein Hund läuft über die Wiese.", "Zwei Kinder.", "", "Die Katze schläft.", "Ein Mann"]


def _checkpoint(folder: Path, overrides: list[str], prepared: Path) -> Path:
    """A checkpoint of a freshly initialized tiny model of one kind, with larger-than-usual output
    weights so that no two logits are near a tie that float rounding could flip."""
    transformer = "model.arch=transformer" in overrides
    cfg = C.load(None, [*([] if transformer else SMALL), "decode.max_len_b=8", *overrides])
    _, tok, _ = load_prepared(prepared)
    torch.manual_seed(0)
    model = build_model(cfg.model, tok.vocab_size, tok.vocab_size)
    output = model.output if transformer else model.decoder.output  # type: ignore[union-attr]
    with torch.no_grad():
        output.weight.mul_(8.0)
    saved = ckpt.Checkpoint(
        cfg.model_dump(mode="json"), model.state_dict(), {"src": tok.model_bytes, "tgt": tok.model_bytes}, TrainState()
    )
    return ckpt.save(folder / "model.pt", saved)


FAST = ("bahdanau-2layers", "luong_general-lstm", "transformer-pre-sinusoids")
"""The kinds of `make test` (a GRU with stacked layers, an LSTM, a Transformer); the rest are slow (about 20 s
each for the exporter), and run in `make test-slow` (CI runs both)."""


@pytest.fixture(scope="module", params=[k if k in FAST else pytest.param(k, marks=pytest.mark.slow) for k in KINDS])
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, toy_prepared: Path):
    folder = tmp_path_factory.mktemp(request.param)
    path = _checkpoint(folder, KINDS[request.param], toy_prepared)
    return load_checkpoint(path, CPU), OnnxModel(export_onnx(path, folder / "onnx"), threads=1)


def test_steps_match_pytorch(exported: tuple[Loaded, OnnxModel]) -> None:
    """Logits and attention of six steps fed the same tokens, encoding included, agree within 1e-5."""
    loaded, onnx = exported
    src = torch.tensor([[5, 9, 12, 7, 6], [8, 5, 0, 0, 0], [11, 0, 0, 0, 0]])
    src_len = torch.tensor([5, 2, 1])
    model = loaded.model.eval()
    with torch.no_grad():
        enc = model.encode(src, src_len)
        state = model.init_state(enc)
        enc_np = onnx.encode(src.numpy(), src_len.numpy())
        state_np = onnx.init_state(enc_np)
        prev = torch.full((3,), 2)
        for _ in range(6):
            logits, state, attn = model.step(prev, state, enc)
            logits_np, state_np, attn_np = onnx.step(prev.numpy(), state_np, enc_np)
            np.testing.assert_allclose(logits_np, logits.numpy(), atol=1e-5, rtol=1e-5)
            np.testing.assert_allclose(attn_np, attn.numpy(), atol=1e-5, rtol=1e-5)
            prev = logits.argmax(-1)


@pytest.mark.parametrize("beam", [1, 3])
def test_search_matches_pytorch(exported: tuple[Loaded, OnnxModel], beam: int) -> None:
    """Greedy: the same tokens; beam: the same n-best lists, scores within 1e-4 (empty source included)."""
    loaded, onnx = exported
    ids = loaded.src_tok.encode(SOURCES)
    n_best = min(beam, 2)
    ours = translate_ids(loaded.model, ids, loaded.config.decode, CPU, beam=beam, n_best=n_best)
    theirs = translate_arrays(
        onnx, ids, loaded.config.decode, vocab_size=onnx.target_vocab_size, beam=beam, n_best=n_best
    )
    assert [t.ids for t in theirs] == [t.ids for t in ours]
    for a, b in zip(theirs, ours):
        np.testing.assert_allclose(a.scores, b.scores, atol=1e-4)
        np.testing.assert_allclose(a.log_probs, b.log_probs, atol=1e-4)


def test_export_json_names_the_graphs(exported: tuple[Loaded, OnnxModel]) -> None:
    loaded, onnx = exported
    manifest = read_manifest(onnx.folder, "onnx")
    assert manifest.arch == loaded.config.model.arch
    assert set(manifest.files) >= {"encoder", "step", "src_spm", "tgt_spm"}
    assert manifest.graph["state"] and manifest.graph["enc"]


@pytest.mark.parametrize("swap", ["garbage", "encoder-as-step"])
def test_a_foreign_onnx_file_is_one_line(exported: tuple[Loaded, OnnxModel], tmp_path: Path, swap: str) -> None:
    """A file that is not an ONNX graph, or a graph that is not the one named (the encoder in the
    step's place), is refused in one line before any search."""
    import shutil

    _, onnx = exported
    copy = tmp_path / "copy"
    shutil.copytree(onnx.folder, copy)
    if swap == "garbage":
        (copy / "step.onnx").write_bytes(b"not an onnx graph")
    else:
        shutil.copy(copy / "encoder.onnx", copy / "step.onnx")
    with pytest.raises(ExportError, match=r"cannot load it|is not the step graph") as info:
        OnnxModel(copy)
    assert "\n" not in str(info.value)


def test_the_export_warns_of_no_missing_dependency(tmp_path: Path, toy_prepared: Path, capfd, caplog) -> None:
    """torch's exporter says torchvision is missing, and onnx_ir that it skipped a deduplication (a tied
    Transformer): neither is the user's problem, so neither reaches stderr or the log."""
    path = _checkpoint(tmp_path, KINDS["transformer-post-learned-shared"], toy_prepared)
    export_onnx(path, tmp_path / "onnx")
    shown = capfd.readouterr().err + "\n".join(record.getMessage() for record in caplog.records)
    assert "torchvision" not in shown and "Skipped deduplication" not in shown, shown


def _copy(onnx: OnnxModel, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(onnx.folder, tmp_path / "copy"))


def _edit_manifest(folder: Path, **changes: object) -> None:
    path = folder / "export.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def test_a_larger_target_spm_swapped_in_is_refused(
    exported: tuple[Loaded, OnnxModel], tmp_path: Path, big_spm: bytes
) -> None:
    """It would decode the graph's ids with the wrong pieces (or feed it ids it has no row for)."""
    copy = _copy(exported[1], tmp_path)
    (copy / "spm.tgt.model").write_bytes(big_spm)
    with pytest.raises(ExportError, match=r"spm\.tgt\.model has \d+ pieces, export\.json says") as info:
        open_engine("onnxruntime", [], copy)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("side", ["src", "tgt"])
def test_a_graph_smaller_than_export_json_s_vocabulary_is_refused_at_load(
    exported: tuple[Loaded, OnnxModel], tmp_path: Path, big_spm: bytes, side: str
) -> None:
    """A larger SentencePiece model with export.json edited to match: the graphs' embeddings are
    smaller, which onnxruntime reported on every request (exit 1, or a 500 from nmt serve)."""
    copy = _copy(exported[1], tmp_path)
    (copy / f"spm.{side}.model").write_bytes(big_spm)
    _edit_manifest(copy, **{f"{side}_vocab": Tokenizer(big_spm).vocab_size})
    with pytest.raises(ExportError, match=r"the graphs do not run with the vocabularies export\.json gives") as info:
        open_engine("onnxruntime", [], copy)
    assert "\n" not in str(info.value)


def test_a_step_graph_from_another_export_is_refused(exported: tuple[Loaded, OnnxModel], tmp_path: Path) -> None:
    """Another export of the same model sizes (here: the same graph with another export's id) runs,
    and would translate with the other model's decoder."""
    import onnx

    copy = _copy(exported[1], tmp_path)
    step = onnx.load(str(copy / "step.onnx"))
    (entry,) = [p for p in step.metadata_props if p.key == EXPORT_ID]
    entry.value = "0" * 16
    onnx.save(step, str(copy / "step.onnx"))
    with pytest.raises(ExportError, match=r"step\.onnx is not the step graph of this export"):
        OnnxModel(copy)


def test_a_folder_without_export_ids_still_loads(exported: tuple[Loaded, OnnxModel], tmp_path: Path) -> None:
    """Folders exported before the graphs carried an id load as before."""
    import onnx

    copy = _copy(exported[1], tmp_path)
    for name in ("encoder.onnx", "step.onnx"):
        graph = onnx.load(str(copy / name))
        kept = [p for p in graph.metadata_props if p.key != EXPORT_ID]
        del graph.metadata_props[:]
        graph.metadata_props.extend(kept)
        onnx.save(graph, str(copy / name))
    raw = json.loads((copy / "export.json").read_text())
    del raw["graph"][EXPORT_ID]
    (copy / "export.json").write_text(json.dumps(raw))
    assert OnnxModel(copy).target_vocab_size == exported[1].target_vocab_size
