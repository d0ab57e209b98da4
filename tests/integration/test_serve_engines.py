"""`nmt serve --engine onnxruntime|ctranslate2 --model DIR`: exports served without torch, and what each shows.

One tiny random Transformer is exported once per format (the ONNX export traces two graphs,
which takes a while); a server per engine then answers as the PyTorch model does: the same
translations and, on onnxruntime, the same attention weights.  A server of exports must not
import torch: its imports are listed by Python itself (``PYTHONPROFILEIMPORTTIME``) in its log.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from test_serve import call

from conftest import run_cli, serving

CPU = torch.device("cpu")
TINY = [
    "model.arch=transformer",
    *(f"model.transformer.{o}" for o in ("d_model=16", "heads=2", "ff_size=32", "enc_layers=2", "dec_layers=2")),
    "decode.max_len_a=1.0",
    "decode.max_len_b=4",
]
SENTENCES = ["Ein Hund läuft über die Wiese.", "Zwei Kinder.", "Die Katze schläft."]
TORCH_IMPORT = re.compile(r"^import time:.*\|\s+torch(\.\S+)?\s*$", re.MULTILINE)
"""A line of ``python -X importtime`` output naming torch or one of its modules."""


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory, toy_prepared: Path) -> Path:
    """A randomly initialized tiny Transformer saved as training saves one (update 7)."""
    from nmt import config as C
    from nmt.data.prepare import load_prepared
    from nmt.model.build import build_model
    from nmt.run import checkpoint as ckpt
    from nmt.run.state import TrainState

    cfg = C.load(None, TINY)
    _, tok, _ = load_prepared(toy_prepared)
    torch.manual_seed(0)
    model = build_model(cfg.model, tok.vocab_size, tok.vocab_size)
    with torch.no_grad():
        model.output.weight.mul_(8.0)  # no two logits near a tie that another engine's rounding could flip
    state = TrainState(step=7)
    saved = ckpt.Checkpoint(
        cfg.model_dump(mode="json"), model.state_dict(), {"src": tok.model_bytes, "tgt": tok.model_bytes}, state
    )
    return ckpt.save(tmp_path_factory.mktemp("serve_engines") / "model.pt", saved)


@pytest.fixture(scope="module")
def exports(checkpoint: Path) -> dict[str, Path]:
    """The checkpoint's export folder per engine: onnxruntime, ctranslate2 and torch (safetensors)."""
    from nmt.export.ctranslate2 import export_ctranslate2
    from nmt.export.onnx_export import export_onnx
    from nmt.export.release import write_release

    root = checkpoint.parent
    return {
        "onnxruntime": export_onnx(checkpoint, root / "onnx"),
        "ctranslate2": export_ctranslate2(checkpoint, root / "ct2"),
        "torch": write_release(checkpoint, root / "safetensors", force=False),
    }


def reference(checkpoint: Path, beam: int) -> list[tuple[str, np.ndarray]]:
    """The PyTorch model's translation and attention of each of :data:`SENTENCES`, as nmt translate finds them."""
    from nmt.decode.inference import load_checkpoint, translate_ids

    loaded = load_checkpoint(checkpoint, CPU)
    ids = loaded.src_tok.encode(SENTENCES)
    with torch.inference_mode():
        found = translate_ids(loaded.model, ids, loaded.config.decode, CPU, beam=beam, return_attention=True)
    return [(loaded.tgt_tok.decode(t.ids[0]), np.asarray(t.attention, dtype=np.float64)) for t in found]


@pytest.fixture(scope="module")
def export_servers(
    exports: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, tuple[str, Path]]]:
    """An onnxruntime and a ctranslate2 server (URL, log), each listing every module it imports in its log."""
    logs = tmp_path_factory.mktemp("serve_engines_logs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPROFILEIMPORTTIME", "1")  # python -X importtime: one stderr line per import
        onnx_args = ["--engine", "onnxruntime", "--model", f"tf={exports['onnxruntime']}", "--threads", "1"]
        ct2_args = ["--engine", "ctranslate2", "--model", f"tf={exports['ctranslate2']}", "--threads", "1"]
        with serving(onnx_args, logs / "onnx.log") as onnx, serving(ct2_args, logs / "ct2.log") as ct2:
            yield {"onnxruntime": (onnx, logs / "onnx.log"), "ctranslate2": (ct2, logs / "ct2.log")}


@pytest.mark.parametrize("engine", ["onnxruntime", "ctranslate2"])
def test_a_server_of_exports_never_imports_torch(export_servers: dict[str, tuple[str, Path]], engine: str) -> None:
    url, log = export_servers[engine]
    status, answer = call(url, "/translate", {"text": SENTENCES, "beam": 2, "attention": engine == "onnxruntime"})
    assert status == 200 and len(answer["translations"]) == len(SENTENCES)
    imports = log.read_text(encoding="utf-8", errors="replace")
    assert re.search(rf"\|\s+{engine}\s*$", imports, re.MULTILINE), "no import list in the log"
    assert TORCH_IMPORT.search(imports) is None, TORCH_IMPORT.search(imports)


@pytest.mark.parametrize("beam", [1, 3])
def test_onnxruntime_translates_and_attends_as_the_pytorch_model(
    export_servers: dict[str, tuple[str, Path]], checkpoint: Path, beam: int
) -> None:
    url, _ = export_servers["onnxruntime"]
    status, answer = call(url, "/translate", {"text": SENTENCES, "beam": beam, "attention": True})
    assert status == 200
    for item, (text, weights) in zip(answer["translations"], reference(checkpoint, beam)):
        view = item["attention"]
        assert item["translation"] == text and "layers" not in view and "--engine torch" in view["note"]
        assert np.allclose(view["weights"], weights, atol=2e-4)  # the response rounds to 4 decimals
        assert np.array(view["weights"]).shape == (len(view["target_tokens"]), len(view["source_tokens"]))


def test_ctranslate2_translates_as_the_pytorch_model_and_refuses_attention(
    export_servers: dict[str, tuple[str, Path]], checkpoint: Path
) -> None:
    url, _ = export_servers["ctranslate2"]
    status, answer = call(url, "/translate", {"text": SENTENCES, "beam": 1})
    assert status == 200
    assert [t["translation"] for t in answer["translations"]] == [text for text, _ in reference(checkpoint, 1)]
    status, body = call(url, "/translate", {"text": SENTENCES[:1], "attention": True})
    assert status == 422 and "no attention weights" in body["error"] and "ctranslate2" in body["error"], body


@pytest.mark.parametrize("engine", ["onnxruntime", "ctranslate2"])
def test_models_say_what_the_checkpoint_is_and_what_the_engine_shows(
    export_servers: dict[str, tuple[str, Path]], exports: dict[str, Path], checkpoint: Path, engine: str
) -> None:
    """The model as its checkpoint on torch describes it (export.json records that), attention as the engine can."""
    from nmt.decode.inference import load_checkpoint
    from nmt.decode.torch_engine import TorchEngine
    from nmt.serve.models import ServedModel

    url, _ = export_servers[engine]
    status, listing = call(url, "/models")
    assert status == 200 and listing["default"] == "tf"
    row = listing["models"][0]
    assert (row["engine"], row["device"], row["arch"], row["step"]) == (engine, "cpu", "transformer", 7)
    assert row["model_dir"] == str(exports[engine]) and row["checkpoint"] is None
    want = ServedModel("ckpt", checkpoint, TorchEngine(load_checkpoint(checkpoint, CPU), CPU)).info()
    for key in ("arch", "attention", "parameters", "vocabulary", "config", "default_beam"):
        assert row[key] == want[key], key
    assert row["parameters"] > 0 and row["config"]["model"]["arch"] == "transformer"
    assert row["attention_weights"] is (engine == "onnxruntime") and row["layer_attention"] is False
    assert "--engine torch" in row["attention_note"]


def test_torch_serves_a_checkpoint_and_a_safetensors_export_side_by_side(
    checkpoint: Path, exports: dict[str, Path], tmp_path: Path
) -> None:
    args = ["--checkpoint", f"ckpt={checkpoint}", "--model", f"release={exports['torch']}", "--threads", "1"]
    with serving(args, tmp_path / "server.log") as url:
        _, listing = call(url, "/models")
        answers = {
            name: call(url, "/translate", {"text": SENTENCES, "beam": 2, "attention": True, "model": name})[1]
            for name in ("ckpt", "release")
        }
    rows = {row["name"]: row for row in listing["models"]}
    assert rows["ckpt"]["checkpoint"] == str(checkpoint) and rows["release"]["model_dir"] == str(exports["torch"])
    assert all(row["engine"] == "torch" and row["layer_attention"] and row["config"] for row in rows.values())
    assert answers["ckpt"]["translations"] == answers["release"]["translations"]
    for item in answers["release"]["translations"]:
        layers = np.array(item["attention"]["layers"])  # (layer, head, output tokens + EOS, source tokens)
        assert layers.shape == (2, 2, len(item["attention"]["target_tokens"]), len(item["attention"]["source_tokens"]))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--engine", "onnxruntime", "--checkpoint", "model.pt"], "--checkpoint needs --engine torch"),
        ([], "give at least one --checkpoint or --model"),
        (["--engine", "onnxruntime", "--model", "ct2"], "holds a ctranslate2 export"),
        (["--engine", "ctranslate2", "--model", "a=ct2", "--model", "a=ct2"], "the name 'a' is taken"),
        (["--engine", "onnxruntime", "--model", "onnx", "--device", "cuda"], "runs on the CPU"),
        (["--engine", "onnxruntime", "--model", "missing"], "no such folder"),
        (["--engine", "tensorflow", "--model", "onnx"], "--engine tensorflow: unknown"),
    ],
)
def test_bad_command_lines_fail_in_one_line_before_serving(
    args: list[str], message: str, exports: dict[str, Path], capsys: pytest.CaptureFixture, monkeypatch
) -> None:
    monkeypatch.chdir(exports["onnxruntime"].parent)  # holds model.pt, onnx/ and ct2/
    code, _, err = run_cli(["serve", *args, "--port", "0"], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_every_folder_is_checked_before_the_first_model_opens(exports: dict[str, Path], monkeypatch) -> None:
    from nmt.engine.manifest import ExportError
    from nmt.serve import models

    opened: list[object] = []
    monkeypatch.setattr(models, "open_engine", lambda *args, **kwargs: opened.append(args))
    good, wrong = str(exports["onnxruntime"]), f"b={exports['ctranslate2']}"
    with pytest.raises(ExportError, match="holds a ctranslate2 export"):
        models.load_served([], model_dirs=[good, wrong], engine="onnxruntime")
    assert opened == []


def test_without_engine_the_exports_own_format_chooses_it_and_two_formats_are_refused(
    exports: dict[str, Path],
) -> None:
    from nmt.serve.models import check_sources
    from nmt.util.errors import UserError

    for engine, folder in exports.items():  # each format names the engine that runs it
        assert check_sources([], [f"m={folder}"], None, "auto") == engine
    assert check_sources(["model.pt"], [str(exports["torch"])], None, "auto") == "torch"  # a checkpoint: torch
    with pytest.raises(UserError, match="exports for ctranslate2 and onnxruntime: one engine runs every model"):
        check_sources([], [str(exports["onnxruntime"]), str(exports["ctranslate2"])], None, "auto")


def test_weights_read_the_same_from_numpy_and_torch() -> None:
    from nmt.serve.models import rounded

    weights = np.array([[0.123456, 0.876544], [1.0, 0.0]], dtype=np.float32)
    assert rounded(weights) == rounded(torch.from_numpy(weights)) == [[0.1235, 0.8765], [1.0, 0.0]]


@pytest.mark.browser
def test_the_page_shows_what_each_engine_can(export_servers: dict[str, tuple[str, Path]]) -> None:
    """onnxruntime: a heat map and a note that layers need torch; ctranslate2: the translation and a note, no map."""
    from selenium.webdriver.common.by import By

    from _chromium import headless_chromium, translate_on_page

    with headless_chromium() as driver:
        for engine, (url, _) in export_servers.items():
            translate_on_page(driver, url, SENTENCES[0])
            result = driver.find_element(By.CSS_SELECTOR, "section.result[data-model=tf]")
            assert result.find_element(By.CSS_SELECTOR, ".translation").text
            assert not result.find_elements(By.CSS_SELECTOR, ".error"), engine
            maps = result.find_elements(By.CSS_SELECTOR, "table.heatmap")
            note = result.find_element(By.CSS_SELECTOR, ".note").text
            assert len(maps) == (1 if engine == "onnxruntime" else 0) and "--engine torch" in note, engine
