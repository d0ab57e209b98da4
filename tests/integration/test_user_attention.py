"""An attention from a file outside the package (examples/attention/cosine.py, the docs' worked example)
trains from YAML and from Python, is refused at load unless allowed by name, translates in a fresh
process when allowed, runs in nmt compare beside built-ins, resumes, and exports to ONNX.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
from example_runs import nmt_cli, trained_beside

import nmt
from conftest import run_cli, toy_overrides
from nmt.config.attention_space import ATTENTIONS
from nmt.util import registry

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "attention" / "cosine.py"
STEPS = 20


pytestmark = pytest.mark.usefixtures("isolated_registries")


@pytest.fixture(scope="module")
def cosine_run(tmp_path_factory: pytest.TempPathFactory, toy_files) -> Path:
    """A folder holding a copy of the example, a config naming it by import path, and the run it trained."""
    folder = tmp_path_factory.mktemp("user_attention")
    return trained_beside(folder, EXAMPLE, {"type": "cosine:CosineEnergy"}, toy_files[1], STEPS, "a b c\n")


def test_a_checkpoint_of_user_code_loads_only_with_its_module_allowed_and_unchanged(cosine_run: Path) -> None:
    ckpt = "runs/toy/checkpoints/best.pt"
    refused = nmt_cli(cosine_run, "translate", "--checkpoint", ckpt, "-i", "in.txt")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "code outside nmt (cosine:CosineEnergy)" in refused.stderr and "--module cosine" in refused.stderr
    allowed = nmt_cli(cosine_run, "translate", "--checkpoint", ckpt, "-i", "in.txt", "--module", "cosine")
    assert allowed.returncode == 0 and allowed.stdout.strip(), allowed.stderr
    changed = cosine_run / "changed"
    changed.mkdir(exist_ok=True)
    (changed / "cosine.py").write_text(EXAMPLE.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    edited = nmt_cli(changed, "translate", "--checkpoint", str(cosine_run / ckpt), "-i", str(cosine_run / "in.txt"))
    assert edited.returncode == 2  # not allowed: nothing imported
    edited = nmt_cli(
        changed,
        "translate",
        "--checkpoint",
        str(cosine_run / ckpt),
        "-i",
        str(cosine_run / "in.txt"),
        "--module",
        "cosine",
    )
    assert edited.returncode == 2 and "source of module cosine" in edited.stderr and "changed since" in edited.stderr


def test_a_run_of_user_code_resumes_and_exports_to_onnx_that_runs_without_it(cosine_run: Path) -> None:
    resumed = nmt_cli(
        cosine_run, "train", "--resume", "runs/toy", "--set", f"train.max_steps={STEPS + 5}", "--module", "cosine"
    )
    assert resumed.returncode == 0, resumed.stderr
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    ckpt = "runs/toy/checkpoints/last.pt"
    exported = nmt_cli(
        cosine_run, "export", "--checkpoint", ckpt, "--format", "onnx", "-o", "onnx", "--module", "cosine"
    )
    assert exported.returncode == 0, exported.stderr
    torch_out = nmt_cli(cosine_run, "translate", "--checkpoint", ckpt, "-i", "in.txt", "--module", "cosine")
    onnx_out = nmt_cli(cosine_run, "translate", "--engine", "onnxruntime", "--model", "onnx", "-i", "in.txt")
    assert onnx_out.returncode == 0 and onnx_out.stdout == torch_out.stdout, onnx_out.stderr
    release = nmt_cli(
        cosine_run, "export", "--checkpoint", ckpt, "--format", "safetensors", "-o", "st", "--module", "cosine"
    )
    assert release.returncode == 2 and "a release holds weights, not code" in release.stderr


def test_from_python_a_registered_name_trains_checks_first_and_loads_with_modules(
    tmp_path, toy_files, monkeypatch
) -> None:
    monkeypatch.setattr(ATTENTIONS, "_entries", dict(ATTENTIONS._entries))
    _, files = toy_files
    sets = toy_overrides(tmp_path, files, train__max_steps=5, train__valid_every=5, model__attention__type="cosine")
    with pytest.raises(nmt.ConfigError, match=r"model\.attention\.type: expected a preset"):
        nmt.train(None, sets)  # the name is unknown until the module is imported
    run = nmt.train(None, sets, modules=[str(EXAMPLE)], progress=False)
    translator = nmt.load(run.folder, modules=[str(EXAMPLE)])
    assert isinstance(translator.translate(["a b"])[0].text, str)

    class Broken(nmt.Energy):
        def forward(self, q, k):
            return (q @ k.transpose(-1, -2))[..., :1]

    nmt.register_attention("broken", Broken)
    sets = toy_overrides(tmp_path, files, name="broken", train__max_steps=5, model__attention__type="broken")
    with pytest.raises(nmt.PluginError, match=r"attention broken \(heads=1\) fails a check: scores have shape"):
        nmt.train(None, [*sets, "model.attention.key_map=linear", "model.attention.query_map=linear"])
    assert not (tmp_path / "runs" / "broken").exists()  # refused before the run's folder was made


def test_compare_runs_a_registered_attention_beside_builtins_with_matched_parameters(tmp_path, toy_files, capsys):
    _, files = toy_files
    sets = [s for s in toy_overrides(tmp_path, files) if not s.startswith(("name=", "runs_dir="))]
    args = ["compare", "--runs-dir", str(tmp_path / "cmp"), "--no-progress", *[a for s in sets for a in ("--set", s)]]
    args += ["--module", str(EXAMPLE), "--variants", "bahdanau,cosine", "--seeds", "1", "--steps", "4"]
    code, out, err = run_cli([*args, "--match-params", "bahdanau", "--dry-run"], capsys)
    assert code == 0, err
    assert [line.split()[-1].rsplit("/", 1)[-1] for line in out.strip().splitlines()] == [
        "bahdanau_s1",
        "cosine_match-bahdanau_s1",
    ]
    code, out, err = run_cli([*args, "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    report = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "cosine" in report and "bahdanau" in report
    record = json.loads((tmp_path / "report" / "record.json").read_text(encoding="utf-8"))
    (code,) = record["user_code"]  # the plug-in each arm trains: its module and source hash
    assert code["name"] == "cosine" and code["origin"] == "cosine:CosineEnergy" and len(code["sha256"]) == 64
    assert "code outside nmt: attention cosine = cosine:CosineEnergy" in (tmp_path / "report" / "record.md").read_text()


def test_compare_takes_an_energys_import_path_as_a_variant(tmp_path, toy_files, capsys):
    _, files = toy_files
    sets = [s for s in toy_overrides(tmp_path, files) if not s.startswith(("name=", "runs_dir="))]
    args = ["compare", "--runs-dir", str(tmp_path / "cmp"), "--no-progress", *[a for s in sets for a in ("--set", s)]]
    args += ["--module", str(EXAMPLE), "--variants", "bahdanau,cosine:CosineEnergy", "--seeds", "1"]
    code, out, err = run_cli([*args, "--steps", "4", "--dry-run"], capsys)
    assert code == 0, err
    assert out.strip().splitlines()[-1].endswith("cosine_CosineEnergy_s1")


def test_the_matrices_lab_draws_a_registered_attention_beside_nmts_own(tmp_path, capsys):
    args = ["lab", "matrices", "--tiny", "--dry-run", "--out", str(tmp_path / "lab"), "--runs-dir", str(tmp_path / "r")]
    code, out, err = run_cli([*args, "--module", str(EXAMPLE)], capsys)
    assert code == 0, err
    assert f"train    cosine seed 1: {tmp_path / 'r' / 'cosine_s1'}" in out.splitlines()


class Untraceable(nmt.Energy):
    """A dot product behind a branch on the scores' values: it trains and decodes, but a graph has no such branch."""

    defaults: ClassVar[dict[str, str]] = {"query_map": "linear", "key_map": "linear"}

    def forward(self, q, k):
        scores = q @ k.transpose(-1, -2)
        if float(scores.abs().max()) > 1e30:  # data-dependent Python control flow
            return scores.clamp(-1e30, 1e30)
        return scores


def test_an_attention_that_does_not_trace_is_refused_by_the_onnx_export_in_one_line(tmp_path, toy_files, capsys):
    pytest.importorskip("onnxscript")
    _, files = toy_files
    nmt.register_attention("untraceable", Untraceable)
    sets = toy_overrides(
        tmp_path, files, train__max_steps=2, train__valid_every=2, model__attention__type="untraceable"
    )
    run = nmt.train(None, sets, progress=False)
    args = ["export", "--checkpoint", str(run.folder / "checkpoints" / "last.pt"), "--format", "onnx"]
    code, _out, err = run_cli([*args, "-o", str(tmp_path / "onnx")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "attention untraceable does not export to ONNX" in err and "--engine torch" in err


class Blind(nmt.Energy):
    """Scores every key alike whatever the query: the context is the mean of the source, no attention."""

    defaults: ClassVar[dict[str, str]] = {"query_map": "linear", "key_map": "linear"}

    def forward(self, q, k):
        return 0 * (q @ k.transpose(-1, -2))


@pytest.mark.slow  # two tiny trainings of 600 updates: about two minutes on 2 cores
def test_the_learning_test_passes_the_worked_example_and_fails_an_energy_that_does_not_attend() -> None:
    with registry.allowing([str(EXAMPLE)]):
        passed = nmt.check_attention("cosine", learn=True)
    assert passed[-1].startswith("learns long reversal: greedy BLEU")
    with pytest.raises(nmt.PluginError, match=r"attention blind fails the learning test: greedy BLEU \d"):
        nmt.check_attention(nmt.register_attention("blind", Blind), learn=True)
