"""An attention with a state across decoder steps and an option of its own, from a file outside the
package (examples/attention/decayed_coverage.py, the docs' example): it trains from YAML and from
Python, is refused at load unless allowed by name, translates with beam search in a fresh process as
it does one sentence at a time, exports to ONNX with its state as a step field (the export translates
as the checkpoint does), and runs in ``nmt compare`` beside Bahdanau with --match-params and a --sweep
of its option.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from example_runs import nmt_cli, trained_beside

import nmt
from conftest import run_cli, toy_overrides

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "attention" / "decayed_coverage.py"
STEPS = 20


pytestmark = pytest.mark.usefixtures("isolated_registries")


@pytest.fixture(scope="module")
def coverage_run(tmp_path_factory: pytest.TempPathFactory, toy_files) -> Path:
    """A folder holding a copy of the example, a config naming it by import path, and the run it trained."""
    attention = {"type": "decayed_coverage:DecayedCoverage", "params": {"decay": 0.5}}
    folder = tmp_path_factory.mktemp("decayed_coverage")
    return trained_beside(
        folder, EXAMPLE, attention, toy_files[1], STEPS, "ein hund läuft\nzwei kinder spielen im park\neine frau\n"
    )


def test_it_loads_only_allowed_and_beam_search_in_a_batch_equals_one_sentence_at_a_time(coverage_run: Path):
    ckpt = "runs/toy/checkpoints/last.pt"
    saved = yaml.safe_load((coverage_run / "runs" / "toy" / "config.yaml").read_text(encoding="utf-8"))
    assert saved["model"]["attention"]["params"] == {"decay": 0.5}
    refused = nmt_cli(coverage_run, "translate", "--checkpoint", ckpt, "-i", "in.txt")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "--module decayed_coverage" in refused.stderr
    allowed = ["--module", "decayed_coverage", "--beam", "4"]
    batched = nmt_cli(coverage_run, "translate", "--checkpoint", ckpt, "-i", "in.txt", *allowed)
    assert batched.returncode == 0 and len(batched.stdout.splitlines()) == 3, batched.stderr
    one_by_one = nmt_cli(
        coverage_run, "translate", "--checkpoint", ckpt, "-i", "in.txt", *allowed, "--set", "decode.batch_size=1"
    )
    assert one_by_one.stdout == batched.stdout, one_by_one.stderr


def test_its_onnx_export_carries_the_state_between_steps_and_translates_as_the_checkpoint(coverage_run: Path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    ckpt = "runs/toy/checkpoints/last.pt"
    module = ["--module", "decayed_coverage"]
    exported = nmt_cli(coverage_run, "export", "--checkpoint", ckpt, "--format", "onnx", "-o", "onnx", *module)
    assert exported.returncode == 0, exported.stderr
    graph = json.loads((coverage_run / "onnx" / "export.json").read_text(encoding="utf-8"))["graph"]
    assert "attention_state" in graph["state"]
    torch_out = nmt_cli(coverage_run, "translate", "--checkpoint", ckpt, "-i", "in.txt", *module)
    onnx_out = nmt_cli(coverage_run, "translate", "--engine", "onnxruntime", "--model", "onnx", "-i", "in.txt")
    assert onnx_out.returncode == 0 and onnx_out.stdout == torch_out.stdout, onnx_out.stderr


def test_from_python_it_trains_with_its_option_and_nmts_coverage_loss(tmp_path, toy_files) -> None:
    _, files = toy_files
    sets = toy_overrides(tmp_path, files, train__max_steps=4, train__coverage_loss=1.0)
    sets += ["model.attention.type=decayed_coverage", "model.attention.params.decay=0.0"]
    run = nmt.train(None, sets, progress=False, modules=[str(EXAMPLE)])
    saved = yaml.safe_load((run.folder / "config.yaml").read_text(encoding="utf-8"))
    assert saved["model"]["attention"]["params"] == {"decay": 0.0} and saved["train"]["coverage_loss"] == 1.0
    result = nmt.load(run.folder, modules=[str(EXAMPLE)]).translate(["ein hund läuft"], beam=3)[0]
    assert result.text


def test_compare_runs_it_beside_bahdanau_matched_in_size_and_sweeps_its_option(tmp_path, toy_files, capsys) -> None:
    _, files = toy_files
    sets = [s for s in toy_overrides(tmp_path, files) if not s.startswith(("name=", "runs_dir="))]
    args = ["compare", "--runs-dir", str(tmp_path / "cmp"), "--no-progress", "--module", str(EXAMPLE)]
    args += [*(a for s in sets for a in ("--set", s)), "--seeds", "1", "--steps", "2", "--dry-run"]
    code, out, err = run_cli(
        [*args, "--set", "model.attention.type=decayed_coverage", "--sweep", "model.attention.params.decay=0.5,1.0"],
        capsys,
    )
    assert code == 0, err
    runs = [line.split()[-1].rsplit("/", 1)[-1] for line in out.strip().splitlines()]
    assert len(runs) == 2 and runs[0] != runs[1], runs
    code, out, err = run_cli([*args, "--variants", "bahdanau,decayed_coverage", "--match-params", "bahdanau"], capsys)
    assert code == 0 and "decayed_coverage_match-bahdanau_s1" in out, err


@pytest.mark.parametrize("type_", ["coverage", "luong_local_m"])
def test_nmts_stateful_attentions_export_to_onnx_that_translates_as_the_checkpoint(type_, tmp_path, toy_files) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    from nmt.export.onnx_export import export_onnx

    _, files = toy_files
    run = nmt.train(
        None, toy_overrides(tmp_path, files, train__max_steps=4, model__attention__type=type_), progress=False
    )
    export_onnx(run.folder / "checkpoints" / "last.pt", tmp_path / "onnx")
    lines = ["ein hund läuft", "zwei kinder spielen im park mit einem ball"]
    torch_out = nmt.load(run.folder / "checkpoints" / "last.pt").translate(lines, beam=3)
    onnx_out = nmt.load(tmp_path / "onnx", engine="onnxruntime").translate(lines, beam=3)
    assert [r.text for r in onnx_out] == [r.text for r in torch_out]
