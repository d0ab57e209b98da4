"""What ``nmt serve`` says of an export (GET /models): what it says of the checkpoint, whichever engine runs it.

export.json records the model's attention type, languages, parameter count and config when it is
written, where torch holds the weights; the onnxruntime and ctranslate2 engines read them back
without torch, and the torch engine describes a safetensors export from the config it holds.
A folder written before export.json recorded them still loads, and says "unknown" (null).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from nmt import config as C
from nmt.data.prepare import load_prepared
from nmt.decode.engines import open_engine
from nmt.decode.inference import Loaded, load_checkpoint
from nmt.decode.model_info import ModelInfo, model_info
from nmt.engine.manifest import MANIFEST, ExportError, ModelDescription, read_manifest
from nmt.model.build import build_model
from nmt.run import checkpoint as ckpt
from nmt.run.state import TrainState
from nmt.serve.models import ServedModel

CPU = torch.device("cpu")
KINDS = {
    "rnn-bahdanau": [
        "model.attention.type=bahdanau",
        "model.emb_size=8",
        "model.hidden_size=8",
        "model.tie_embeddings=false",
    ],
    "transformer-shared-tied": [
        "model.arch=transformer",
        *(f"model.transformer.{o}" for o in ("d_model=16", "heads=2", "ff_size=32", "enc_layers=1", "dec_layers=1")),
        "model.transformer.share_embeddings=true",
        "model.tie_embeddings=true",  # tied tensors: counted once, as torch's parameters() yields them
    ],
}
LANGUAGES = ["data.src=de", "data.tgt=en"]  # not the config's defaults, so the record is seen to be read
FORMATS = {  # format -> the engine that runs it and the modules its export and engine need (the export extra)
    "safetensors": ("torch", ("safetensors",)),
    "onnx": ("onnxruntime", ("onnx", "onnxscript", "onnxruntime")),
    "ctranslate2": ("ctranslate2", ("ctranslate2",)),
}
DESCRIBED = ("arch", "attention", "parameters", "languages", "config")
"""The ModelInfo fields that say what the model is (the others say what its engine shows)."""


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory, toy_prepared: Path) -> dict[str, Path]:
    """A checkpoint of a freshly initialized tiny model of each kind (update 3)."""
    _, tok, _ = load_prepared(toy_prepared)
    paths = {}
    for kind, overrides in KINDS.items():
        cfg = C.load(None, [*overrides, *LANGUAGES, "decode.max_len_b=8"])
        torch.manual_seed(0)
        model = build_model(cfg.model, tok.vocab_size, tok.vocab_size)
        tokenizers = {"src": tok.model_bytes, "tgt": tok.model_bytes}
        saved = ckpt.Checkpoint(cfg.model_dump(mode="json"), model.state_dict(), tokenizers, TrainState(step=3))
        paths[kind] = ckpt.save(tmp_path_factory.mktemp(kind) / "model.pt", saved)
    return paths


def export(fmt: str, checkpoint: Path, out: Path) -> Path:
    """``nmt export --format fmt``; the test is skipped where the format's engine is not installed."""
    for module in FORMATS[fmt][1]:
        pytest.importorskip(module)
    if fmt == "onnx":
        from nmt.export.onnx_export import export_onnx

        return export_onnx(checkpoint, out)
    if fmt == "ctranslate2":
        from nmt.export.ctranslate2 import export_ctranslate2

        return export_ctranslate2(checkpoint, out)
    from nmt.export.release import write_release

    return write_release(checkpoint, out, force=False)


def served(engine_name: str, folder: Path) -> ServedModel:
    """An export folder opened as ``nmt serve --engine NAME --model x=FOLDER`` opens it (one thread)."""
    if engine_name == "torch":  # as open_engine, without setting this process's torch threads
        from nmt.decode.release import load_release

        return ServedModel("x", folder, torch_engine(load_release(folder, CPU)), exported=True)
    return ServedModel("x", folder, open_engine(engine_name, [], folder, threads=1), exported=True)


def served_checkpoint(path: Path) -> ServedModel:
    """A checkpoint as ``nmt serve --checkpoint`` opens it: what an export must say of itself."""
    return ServedModel("x", path, torch_engine(load_checkpoint(path, CPU)))


def torch_engine(loaded: Loaded) -> Any:
    pytest.importorskip("safetensors")  # the torch engine also reads safetensors exports
    from nmt.decode.torch_engine import TorchEngine

    return TorchEngine(loaded, CPU)


def described(info: ModelInfo) -> dict[str, Any]:
    return {name: getattr(info, name) for name in DESCRIBED}


CASES = [
    (kind, fmt)
    for kind in KINDS
    for fmt in FORMATS
    if not (fmt == "ctranslate2" and kind.startswith("rnn"))  # CTranslate2 holds Transformers only
]


@pytest.mark.parametrize(("kind", "fmt"), CASES, ids=[f"{k}-{f}" for k, f in CASES])
def test_an_export_is_described_as_its_checkpoint(
    checkpoints: dict[str, Path], tmp_path: Path, kind: str, fmt: str
) -> None:
    folder = export(fmt, checkpoints[kind], tmp_path / fmt)
    reference = served_checkpoint(checkpoints[kind])
    model = served(FORMATS[fmt][0], folder)

    want = described(reference.about)
    assert want["attention"] == ("bahdanau" if kind.startswith("rnn") else "transformer")
    assert want["languages"] == ("de", "en") and want["parameters"] > 0 and want["config"]
    assert described(model.about) == want
    row, ckpt_row = model.info(), reference.info()
    for key in ("arch", "attention", "parameters", "vocabulary", "config"):
        assert row[key] == ckpt_row[key], key
    assert row["vocabulary"]["languages"] == ["de", "en"]

    manifest = read_manifest(folder, fmt)
    assert manifest.model == ModelDescription(
        want["attention"], want["languages"], want["parameters"], want["config"]
    ), "export.json records it"


@pytest.fixture(scope="module")
def transformer_ct2(checkpoints: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export("ctranslate2", checkpoints["transformer-shared-tied"], tmp_path_factory.mktemp("ct2") / "out")


def _edit(folder: Path, change: Callable[[dict[str, Any]], object]) -> None:
    raw = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    change(raw)
    (folder / MANIFEST).write_text(json.dumps(raw), encoding="utf-8")


def test_a_folder_written_before_the_record_loads_and_says_unknown(transformer_ct2: Path, tmp_path: Path) -> None:
    """Format 1 without ``model`` (nmt before it was recorded): still served; what it does not say is null."""
    old = Path(shutil.copytree(transformer_ct2, tmp_path / "old"))
    _edit(old, lambda raw: raw.pop("model"))
    assert read_manifest(old, "ctranslate2").model is None
    row = served("ctranslate2", old).info()
    assert (row["arch"], row["attention"], row["step"]) == ("transformer", "transformer", 3)
    assert row["parameters"] is None and row["config"] is None and row["vocabulary"]["languages"] is None


def test_keys_a_later_nmt_adds_to_the_record_are_ignored(transformer_ct2: Path, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(transformer_ct2, tmp_path / "later"))
    _edit(folder, lambda raw: raw["model"].update(heads=2))
    _edit(folder, lambda raw: raw.update(signature="abc"))
    assert read_manifest(folder, "ctranslate2").model == read_manifest(transformer_ct2, "ctranslate2").model


def _set_model(value: Any) -> Callable[[dict[str, Any]], object]:
    return lambda raw: raw.update(model=value)


def _set_in_model(**changes: Any) -> Callable[[dict[str, Any]], object]:
    return lambda raw: raw["model"].update(changes)


@pytest.mark.parametrize(
    "change",
    [
        _set_model("transformer"),
        _set_model([]),
        _set_model({"attention": "transformer"}),
        _set_in_model(attention=""),
        _set_in_model(attention=None),
        _set_in_model(languages=["de"]),
        _set_in_model(languages=["de", 7]),
        _set_in_model(parameters=0),
        _set_in_model(parameters=True),
        _set_in_model(parameters=1.5),
        _set_in_model(config="model.arch=transformer"),
        lambda raw: raw["model"].pop("config"),
    ],
)
def test_an_altered_record_is_refused_in_one_line(
    transformer_ct2: Path, tmp_path: Path, change: Callable[[dict[str, Any]], object]
) -> None:
    folder = Path(shutil.copytree(transformer_ct2, tmp_path / "altered"))
    _edit(folder, change)
    with pytest.raises(ExportError, match=r"model is .*, which nmt never writes \(an altered file\?\)") as info:
        read_manifest(folder)
    assert "\n" not in str(info.value)


def test_an_export_s_info_comes_from_its_record_alone(transformer_ct2: Path) -> None:
    """model_info of an export reads nothing but export.json: what the engines without torch or config can say."""
    manifest = read_manifest(transformer_ct2, "ctranslate2")
    info = model_info(manifest.arch, manifest.model, device="cpu", search_attention=False, layer_attention=False)
    assert manifest.model is not None
    assert (info.attention, info.languages, info.parameters) == ("transformer", ("de", "en"), manifest.model.parameters)
    assert info.config is not None and info.config["data"]["src"] == "de"
