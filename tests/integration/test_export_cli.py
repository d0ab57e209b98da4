"""``nmt export`` and ``--engine``/``--model`` through the command line: round trips and refusals.

A trained toy RNN is exported once as ONNX and once as safetensors, and a briefly trained
Transformer once as CTranslate2 (module-scoped: an ONNX export takes tens of seconds here).
Each export must translate what its checkpoint translates, the onnxruntime path must run without
torch, and every way a folder or a command line can be wrong is one line on stderr and exit 2.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PROC_TIMEOUT, REPO, stop, transformer_overrides, wait_until
from conftest import run_cli as run

SOURCES = 30  # test-split lines translated by the round trips (plus an empty and an unknown-word line)


def cli(argv: list[str]) -> None:
    """``nmt argv`` in this process for a module-scoped fixture (no capsys there); it must succeed."""
    from nmt.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
        raise SystemExit(0)
    assert (exit_info.value.code or 0) == 0, f"nmt {' '.join(argv)} exited {exit_info.value.code}"


def export(checkpoint: Path, fmt: str, out: Path) -> Path:
    cli(["export", "--checkpoint", str(checkpoint), "--format", fmt, "-o", str(out)])
    return out


@pytest.fixture(scope="module")
def rnn_ckpt(trained_toy: Path) -> Path:
    return trained_toy / "checkpoints" / "best.pt"


@pytest.fixture(scope="module")
def onnx_dir(rnn_ckpt: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export(rnn_ckpt, "onnx", tmp_path_factory.mktemp("onnx") / "rnn-onnx")


@pytest.fixture(scope="module")
def st_dir(rnn_ckpt: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export(rnn_ckpt, "safetensors", tmp_path_factory.mktemp("st") / "rnn-st")


@pytest.fixture(scope="module")
def transformer_ckpt(tmp_path_factory: pytest.TempPathFactory, toy_files) -> Path:
    """A tiny Transformer trained a few epochs: confident enough that greedy search has no near ties."""
    from nmt.training.entry import run_training

    _, files = toy_files
    root = tmp_path_factory.mktemp("transformer")
    run_training(None, transformer_overrides(root, files, train__max_epochs=4, train__valid_every=0), progress=False)
    return root / "runs" / "toy" / "checkpoints" / "best.pt"


@pytest.fixture(scope="module")
def ct2_dir(transformer_ckpt: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export(transformer_ckpt, "ctranslate2", tmp_path_factory.mktemp("ct2") / "tr-ct2")


@pytest.fixture(scope="module")
def texts(toy_files, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``src``: test-split sources with an empty line and unknown words; ``test_src``/``test_ref``: parallel lines."""
    _, files = toy_files
    src = Path(files["test"][0]).read_text(encoding="utf-8").splitlines()[:SOURCES]
    ref = Path(files["test"][1]).read_text(encoding="utf-8").splitlines()[:SOURCES]
    folder = tmp_path_factory.mktemp("texts")
    paths = {"src": folder / "in.txt", "test_src": folder / "test.src", "test_ref": folder / "test.ref"}
    for key, lines in (("src", [*src, "", "ant zebra quokka"]), ("test_src", src), ("test_ref", ref)):
        paths[key].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return paths


def translate(capsys: pytest.CaptureFixture, source: Path, out: Path, *model: str) -> list[str]:
    code, _, err = run(["translate", *model, "-i", str(source), "-o", str(out)], capsys)
    assert code == 0, err
    return out.read_text(encoding="utf-8").splitlines()


# --- 1: round trips --------------------------------------------------------------------------


@pytest.mark.parametrize("beam", ["1", "3"])
def test_onnx_and_safetensors_exports_translate_as_the_checkpoint(
    rnn_ckpt, onnx_dir, st_dir, texts, tmp_path, capsys, beam
):
    want = translate(capsys, texts["src"], tmp_path / "ckpt.txt", "--checkpoint", str(rnn_ckpt), "--beam", beam)
    assert len(want) == SOURCES + 2 and len(set(want)) > SOURCES // 2  # a model that learned: varied outputs
    for engine, folder in (("onnxruntime", onnx_dir), ("torch", st_dir)):
        for chosen in (["--engine", engine], []):  # without --engine, the export's format chooses it
            out = tmp_path / f"{engine}{len(chosen)}.txt"
            got = translate(capsys, texts["src"], out, *chosen, "--model", str(folder), "--beam", beam)
            assert got == want, (engine, chosen)


def test_eval_on_onnxruntime_scores_as_the_torch_translations(rnn_ckpt, onnx_dir, texts, tmp_path, capsys):
    fast = ["--beam", "3", "--bootstrap-samples", "20", "--ar-trials", "20"]
    refs = ["--src", str(texts["test_src"]), "--ref", str(texts["test_ref"])]
    code, _, err = run(
        ["eval", "--engine", "onnxruntime", "--model", str(onnx_dir), *refs, "--out", str(tmp_path / "ort"), *fast],
        capsys,
    )
    assert code == 0, err
    hyps = translate(capsys, texts["test_src"], tmp_path / "torch.txt", "--checkpoint", str(rnn_ckpt), "--beam", "3")
    code, _, err = run(
        ["eval", "--hyp", str(tmp_path / "torch.txt"), *refs, "--out", str(tmp_path / "torch"), *fast], capsys
    )
    assert code == 0, err
    ort = json.loads((tmp_path / "ort" / "report.json").read_text(encoding="utf-8"))
    torch_report = json.loads((tmp_path / "torch" / "report.json").read_text(encoding="utf-8"))
    (ort_system,) = ort["systems"].values()
    (torch_system,) = torch_report["systems"].values()
    assert ort["info"]["engine"] == "onnxruntime" and ort["info"]["beam"] == 3
    assert Path(ort["info"]["hypotheses"]).read_text(encoding="utf-8").splitlines() == hyps
    assert ort_system["bleu"] == torch_system["bleu"] and ort_system["bleu"] > 0
    page = (tmp_path / "ort" / "report.md").read_text(encoding="utf-8")  # says what report.json says
    head = page.split("## Scores")[0]
    assert "hypothesis file" not in head and f"`{onnx_dir.name}` on --engine onnxruntime" in head
    for fact in (str(onnx_dir), "beam 3", ort["info"]["hypotheses"], str(texts["test_src"]), str(texts["test_ref"])):
        assert fact in head, (fact, head)


def test_ctranslate2_greedy_is_the_checkpoints_and_int8_runs(transformer_ckpt, ct2_dir, texts, tmp_path, capsys):
    want = translate(capsys, texts["src"], tmp_path / "ckpt.txt", "--checkpoint", str(transformer_ckpt), "--beam", "1")
    assert len(want) == SOURCES + 2 and len(set(want)) > SOURCES // 2
    ct2 = ["--engine", "ctranslate2", "--model", str(ct2_dir), "--beam", "1"]
    assert translate(capsys, texts["src"], tmp_path / "ct2.txt", *ct2) == want
    int8 = translate(capsys, texts["src"], tmp_path / "int8.txt", *ct2, "--compute-type", "int8")
    assert len(int8) == len(want) and sum(map(bool, int8)) >= SOURCES


# --- 2: the exported engines run without torch -------------------------------------------------

WRAPPER = """
import sys
from nmt.cli import main
try:
    main(sys.argv[1:])
    code = 0
except SystemExit as exc:
    code = exc.code or 0
print(f"exit={code} torch={'torch' in sys.modules}")
"""


@pytest.mark.parametrize("spelled", [True, False], ids=["engine-given", "engine-from-export"])
@pytest.mark.parametrize(
    "engine, command", [("onnxruntime", "translate"), ("onnxruntime", "eval"), ("ctranslate2", "translate")]
)
def test_exported_engines_run_without_torch(request, texts, tmp_path, engine, command, spelled):
    """The whole command in a fresh interpreter, which then says whether anything imported torch;
    without --engine the export's format chooses it, still without torch."""
    folder = request.getfixturevalue("onnx_dir" if engine == "onnxruntime" else "ct2_dir")
    model = ["--engine", engine] * spelled + ["--model", str(folder)]
    if command == "translate":
        argv = ["translate", *model, "-i", str(texts["src"]), "-o", str(tmp_path / "out.txt")]
    else:
        argv = ["eval", *model, "--src", str(texts["test_src"]), "--ref", str(texts["test_ref"])]
        argv += ["--out", str(tmp_path / "report"), "--bootstrap-samples", "20", "--ar-trials", "20"]
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, *argv], cwd=REPO, capture_output=True, text=True, timeout=PROC_TIMEOUT
    )
    assert done.stdout.strip().splitlines()[-1:] == ["exit=0 torch=False"], done.stdout + done.stderr
    written = tmp_path / "out.txt" if command == "translate" else tmp_path / "report" / "report.json"
    assert written.is_file()


# --- 3: bad input: exit 2 and one line on stderr -----------------------------------------------


@pytest.mark.parametrize("engine", ["onnxruntime", "ctranslate2"])
def test_eval_refuses_another_engine_for_a_checkpoint(rnn_ckpt, texts, tmp_path, capsys, engine):
    """A checkpoint is scored by torch: --engine ctranslate2 --compute-type int8 would otherwise be
    quietly ignored and the report would not be of what was asked."""
    argv = ["eval", "--checkpoint", str(rnn_ckpt), "--engine", engine, "--compute-type", "int8"]
    code, _, err = run([*argv, "--out", str(tmp_path / "r")], capsys)
    assert code == 2 and f"--engine {engine} runs an export folder" in err and len(err.strip().splitlines()) == 1


def one_line_error(code: int, err: str, needle: str) -> None:
    assert code == 2, err
    assert err.startswith("nmt: error: ") and err.strip().count("\n") == 0, err
    assert needle in err, err


def foreign_onnx(path: Path) -> None:
    """A valid ONNX model that is not nmt's: one float input ``x``, its identity as ``y``."""
    from onnx import TensorProto, helper, save

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "foreign",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))


def altered_copy(onnx_dir: Path, folder: Path, how: str) -> Path:
    """A copy of the ONNX export with step.onnx deleted or foreign, or export.json from a future nmt."""
    copy = Path(shutil.copytree(onnx_dir, folder / "altered"))
    if how == "missing":
        (copy / "step.onnx").unlink()
    elif how == "foreign":
        foreign_onnx(copy / "step.onnx")
    else:
        manifest = json.loads((copy / "export.json").read_text(encoding="utf-8"))
        (copy / "export.json").write_text(json.dumps({**manifest, "format_version": 99}), encoding="utf-8")
    return copy


@pytest.mark.parametrize(
    "how, needle",
    [("missing", "lacks step.onnx"), ("future", "upgrade nmt"), ("foreign", "is not the step graph")],
)
@pytest.mark.parametrize("command", ["translate", "eval"])
def test_an_altered_onnx_export_is_refused(onnx_dir, texts, tmp_path, capsys, how, needle, command):
    model = ["--engine", "onnxruntime", "--model", str(altered_copy(onnx_dir, tmp_path, how))]
    if command == "translate":
        argv = ["translate", *model, "-i", str(texts["src"]), "-o", str(tmp_path / "out.txt")]
    else:
        argv = ["eval", *model, "--src", str(texts["test_src"]), "--ref", str(texts["test_ref"])]
        argv += ["--out", str(tmp_path / "report")]
    code, _, err = run(argv, capsys)
    one_line_error(code, err, needle)
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "report").exists()


MODEL_OPTIONS = {  # (translate's model options, with {name} a path; a phrase the error holds)
    "onnx-on-ctranslate2": (["--engine", "ctranslate2", "--model", "{onnx}"], "holds an onnx export"),
    "ctranslate2-on-onnxruntime": (["--engine", "onnxruntime", "--model", "{ct2}"], "holds a ctranslate2 export"),
    "onnx-on-torch": (["--engine", "torch", "--model", "{onnx}"], "holds an onnx export"),
    "safetensors-on-onnxruntime": (["--engine", "onnxruntime", "--model", "{st}"], "holds a safetensors export"),
    "onnxruntime-without-model": (["--engine", "onnxruntime"], "--model"),
    "onnxruntime-on-checkpoint": (["--engine", "onnxruntime", "--checkpoint", "{ckpt}"], "give --model DIR"),
    "checkpoint-and-model": (["--checkpoint", "{ckpt}", "--model", "{st}"], "give either --checkpoint"),
    "unknown-engine": (["--engine", "tensorrt", "--model", "{onnx}"], "--engine tensorrt: unknown"),
    "run-folder": (["--engine", "onnxruntime", "--model", "{run}"], "is not an nmt export"),
    "empty-folder": (["--engine", "torch", "--model", "{empty}"], "is not an nmt export"),
    "checkpoint-file-as-model": (["--engine", "onnxruntime", "--model", "{ckpt}"], "not a folder"),
}


@pytest.mark.parametrize("case", list(MODEL_OPTIONS))
def test_translate_refuses_a_model_its_engine_cannot_run(request, texts, tmp_path, capsys, case):
    options, needle = MODEL_OPTIONS[case]
    paths = {"empty": tmp_path / "empty"}
    paths["empty"].mkdir()
    fixtures = {"onnx": "onnx_dir", "ct2": "ct2_dir", "st": "st_dir", "ckpt": "rnn_ckpt", "run": "trained_toy"}
    for name, fixture in fixtures.items():  # only the exports this case names are made
        if any("{" + name + "}" in o for o in options):
            paths[name] = request.getfixturevalue(fixture)
    argv = [o.format(**paths) for o in options]
    code, _, err = run(["translate", *argv, "-i", str(texts["src"]), "-o", str(tmp_path / "out.txt")], capsys)
    one_line_error(code, err, needle)
    assert not (tmp_path / "out.txt").exists()


def test_export_refuses_an_rnn_as_ctranslate2_and_an_unknown_format(rnn_ckpt, tmp_path, capsys):
    for fmt, needle in (("ctranslate2", "Transformers only"), ("tflite", "--format tflite: unknown")):
        code, _, err = run(
            ["export", "--checkpoint", str(rnn_ckpt), "--format", fmt, "-o", str(tmp_path / fmt)], capsys
        )
        one_line_error(code, err, needle)
        assert not (tmp_path / fmt).exists()


def test_an_earlier_export_is_replaced_only_with_force(rnn_ckpt, st_dir, texts, tmp_path, capsys):
    out = Path(shutil.copytree(st_dir, tmp_path / "export"))
    argv = ["export", "--checkpoint", str(rnn_ckpt), "--format", "safetensors", "-o", str(out)]
    code, _, err = run(argv, capsys)
    one_line_error(code, err, "already holds an nmt safetensors export; give --force")
    code, _, err = run([*argv, "--force"], capsys)
    assert code == 0, err
    want = translate(capsys, texts["src"], tmp_path / "a.txt", "--checkpoint", str(rnn_ckpt), "--beam", "1")
    assert translate(capsys, texts["src"], tmp_path / "b.txt", "--model", str(out), "--beam", "1") == want


def test_reports_that_eval_wrote_into_an_export_survive_a_re_export(rnn_ckpt, st_dir, texts, tmp_path, capsys):
    """``nmt eval --out EXPORTDIR`` writes its report beside the model; ``--force`` must not delete it."""
    out = Path(shutil.copytree(st_dir, tmp_path / "export"))
    (out / "notes.txt").write_text("from the earlier export\n", encoding="utf-8")
    refs = ["--src", str(texts["test_src"]), "--ref", str(texts["test_ref"])]
    code, _, err = run(["eval", "--engine", "torch", "--model", str(out), *refs, "--out", str(out)], capsys)
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"report.json", "report.md", "notes.txt"} <= set(before)
    argv = ["export", "--checkpoint", str(rnn_ckpt), "--format", "safetensors", "-o", str(out), "--force"]
    code, _, err = run(argv, capsys)
    one_line_error(code, err, "not touching them")
    assert "notes.txt" in err and "report.json" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_project_with_its_own_export_json_is_never_replaced(rnn_ckpt, tmp_path, capsys):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("print('mine')\n", encoding="utf-8")
    (project / "export.json").write_text('{"targets": ["web"]}\n', encoding="utf-8")
    for force in ([], ["--force"]):
        argv = ["export", "--checkpoint", str(rnn_ckpt), "--format", "safetensors", "-o", str(project), *force]
        code, _, err = run(argv, capsys)
        one_line_error(code, err, "that is not an export this nmt wrote")
        assert "already holds an export" not in err
    assert sorted(p.name for p in project.rglob("*")) == ["app.py", "export.json", "src"]


def test_sigterm_during_an_onnx_export_leaves_no_hidden_folder(rnn_ckpt, tmp_path):
    """The hidden folder an export writes in goes on SIGTERM as on Ctrl-C, and the process ends by the signal."""
    out = tmp_path / "prev"
    argv = ["export", "--checkpoint", str(rnn_ckpt), "--format", "onnx", "-o", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "nmt", *argv], cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: any(p.name.startswith(".prev.") for p in tmp_path.iterdir()), proc, "the hidden folder")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=PROC_TIMEOUT)
    finally:
        stop(proc)
    assert proc.returncode == -signal.SIGTERM, err
    assert "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_force_never_deletes_files_that_are_not_an_export(rnn_ckpt, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("keep me\n", encoding="utf-8")
    argv = ["export", "--checkpoint", str(rnn_ckpt), "--format", "safetensors", "-o", str(out), "--force"]
    code, _, err = run(argv, capsys)
    one_line_error(code, err, "not touching them")
    assert [p.name for p in out.iterdir()] == ["thesis.tex"]


@pytest.mark.parametrize(
    "options, needle",
    [
        (["--engine", "ctranslate2", "--model", "{onnx}"], "holds an onnx export"),
        (["--engine", "onnxruntime", "--model", "{onnx}", "--checkpoint", "{ckpt}"], "give one of"),
        (["--engine", "tensorrt", "--model", "{onnx}"], "engine='tensorrt': give one of"),
    ],
)
def test_eval_refuses_a_model_its_engine_cannot_run(rnn_ckpt, onnx_dir, texts, tmp_path, capsys, options, needle):
    argv = [o.format(onnx=onnx_dir, ckpt=rnn_ckpt) for o in options]
    argv += ["--src", str(texts["test_src"]), "--ref", str(texts["test_ref"]), "--out", str(tmp_path / "r")]
    code, _, err = run(["eval", *argv], capsys)
    one_line_error(code, err, needle)
    assert not (tmp_path / "r" / "report.json").exists()


@pytest.mark.parametrize(
    "options",
    [
        ["translate", "--engine", "onnxruntime", "--model", "{onnx}"],
        ["translate", "--checkpoint", "{ckpt}"],
        ["translate", "--engine", "torch", "--model", "{st}"],
        ["eval", "--engine", "onnxruntime", "--model", "{onnx}"],
        ["eval", "--checkpoint", "{ckpt}"],
    ],
    ids=["onnxruntime", "checkpoint", "safetensors", "eval-onnxruntime", "eval-checkpoint"],
)
def test_compute_type_int8_is_refused_where_it_would_do_nothing(request, texts, tmp_path, capsys, options):
    """Only CTranslate2 quantizes; elsewhere --compute-type int8 would be silently ignored."""
    fixtures = {"onnx": "onnx_dir", "st": "st_dir", "ckpt": "rnn_ckpt"}
    paths = {k: request.getfixturevalue(f) for k, f in fixtures.items() if any("{" + k + "}" in o for o in options)}
    argv = [o.format(**paths) for o in options] + ["--compute-type", "int8"]
    if argv[0] == "translate":
        argv += ["-i", str(texts["src"]), "-o", str(tmp_path / "out.txt")]
    else:
        argv += ["--src", str(texts["test_src"]), "--ref", str(texts["test_ref"]), "--out", str(tmp_path / "r")]
    code, _, err = run(argv, capsys)
    one_line_error(code, err, "--compute-type int8: only --engine ctranslate2 quantizes")
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "r").exists()


def test_onnxruntime_writes_nothing_under_home(onnx_dir, texts, tmp_path):
    """onnxruntime's telemetry (a device id and an events database under ~/.cache) stays off."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "ORT_DISABLE_TELEMETRY")}
    argv = ["translate", "--engine", "onnxruntime", "--model", str(onnx_dir), "-i", str(texts["src"])]
    done = subprocess.run(
        [sys.executable, "-m", "nmt", *argv, "-o", str(tmp_path / "out.txt")],
        cwd=REPO,
        env={**env, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=PROC_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert list(home.rglob("*")) == [], "onnxruntime wrote under HOME"
    assert "onnxruntime" not in done.stderr.lower(), done.stderr


@pytest.mark.parametrize("engine", ["onnxruntime", "ctranslate2"])
def test_a_beam_within_an_altered_vocabulary_size_is_refused_at_load(request, texts, tmp_path, capsys, engine):
    """export.json claims a larger target vocabulary, so a beam larger than the real one passed the
    beam check: the folder is refused when it loads, in one line, before any search."""
    folder = request.getfixturevalue("onnx_dir" if engine == "onnxruntime" else "ct2_dir")
    copy = Path(shutil.copytree(folder, tmp_path / "copy"))
    raw = json.loads((copy / "export.json").read_text(encoding="utf-8"))
    beam = raw["tgt_vocab"] + 100
    (copy / "export.json").write_text(json.dumps({**raw, "tgt_vocab": beam + 100}), encoding="utf-8")
    argv = ["translate", "--engine", engine, "--model", str(copy), "--beam", str(beam)]
    code, _, err = run([*argv, "-i", str(texts["src"]), "-o", str(tmp_path / "out.txt")], capsys)
    one_line_error(code, err, "spm.tgt.model has")
    assert not (tmp_path / "out.txt").exists()


def test_attention_from_ctranslate2_is_refused_before_its_folder_is_made(ct2_dir, texts, tmp_path, capsys):
    argv = ["translate", "--engine", "ctranslate2", "--model", str(ct2_dir), "--attention", str(tmp_path / "maps")]
    code, _, err = run([*argv, "-i", str(texts["src"]), "-o", str(tmp_path / "out.txt")], capsys)
    one_line_error(code, err, "returns no attention weights")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
