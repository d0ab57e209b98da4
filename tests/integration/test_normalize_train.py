"""The normalize step in whole models: a normalization from a file outside the package (the docs'
example, examples/attention/kernel_normalization.py) trains from YAML, is refused at load unless
allowed by name, and translates with beam search in a fresh process as it does one sentence at a
time; nmt's sparsemax trains an RNN and a Transformer, and a Transformer built from a registered
energy and a sparse normalization trains and exports to ONNX with the checkpoint's translations.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from example_runs import nmt_cli, trained_beside

import nmt
from conftest import toy_overrides, transformer_overrides

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "attention" / "kernel_normalization.py"
STEPS = 20


pytestmark = pytest.mark.usefixtures("isolated_registries")


@pytest.fixture(scope="module")
def kernel_run(tmp_path_factory: pytest.TempPathFactory, toy_files) -> Path:
    """A folder holding a copy of the example, a config naming it by import path, and the run it trained."""
    attention = {"type": "luong_general", "normalize": "kernel_normalization:triangular"}
    folder = tmp_path_factory.mktemp("kernel_normalization")
    return trained_beside(
        folder, EXAMPLE, attention, toy_files[1], STEPS, "ein hund läuft\nzwei kinder spielen im park\neine frau\n"
    )


def test_a_users_normalization_loads_only_allowed_and_beam_search_equals_one_sentence_at_a_time(kernel_run: Path):
    ckpt = "runs/toy/checkpoints/best.pt"
    refused = nmt_cli(kernel_run, "translate", "--checkpoint", ckpt, "-i", "in.txt")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "kernel_normalization:triangular" in refused.stderr and "--module kernel_normalization" in refused.stderr
    allowed = ["--module", "kernel_normalization", "--beam", "3"]
    batched = nmt_cli(kernel_run, "translate", "--checkpoint", ckpt, "-i", "in.txt", *allowed)
    assert batched.returncode == 0 and len(batched.stdout.splitlines()) == 3, batched.stderr
    one_by_one = nmt_cli(
        kernel_run, "translate", "--checkpoint", ckpt, "-i", "in.txt", *allowed, "--set", "decode.batch_size=1"
    )
    assert one_by_one.stdout == batched.stdout, one_by_one.stderr


def test_sparsemax_trains_an_rnn_whose_weights_are_sparse(tmp_path, toy_files) -> None:
    _, files = toy_files
    sets = toy_overrides(tmp_path, files, train__max_steps=STEPS, model__attention__normalize="sparsemax")
    run = nmt.train(None, sets, progress=False)
    translator = nmt.load(run.folder)
    result = translator.translate(["ein hund läuft im park"], return_attention=True)[0]
    weights = result.attention
    assert weights is not None and (weights == 0).any() and abs(weights.sum(-1) - 1).max() < 1e-5


class HalfScaledDot(nmt.Energy):
    """q.k / (2 sqrt(d)): a user's energy, defined in this test module (importable by its name)."""

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return q @ k.transpose(-1, -2) / (2 * q.size(-1) ** 0.5)


def test_a_transformer_of_a_registered_energy_and_entmax_trains_and_exports_to_onnx(tmp_path, toy_files) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    from nmt.export.onnx_export import export_onnx

    _, files = toy_files
    nmt.register_attention("half_scaled_dot", HalfScaledDot)
    extra = {"model__transformer__energy": "half_scaled_dot", "model__transformer__normalize": "entmax15"}
    run = nmt.train(None, transformer_overrides(tmp_path, files, train__max_steps=STEPS, **extra), progress=False)
    translator = nmt.load(run.folder / "checkpoints" / "last.pt")
    kinds = {(m.kind, m.normalization) for m in translator.engine.loaded.model.modules() if hasattr(m, "normalization")}
    assert kinds == {("half_scaled_dot", "entmax15")}  # every self- and cross-attention
    export_onnx(run.folder / "checkpoints" / "last.pt", tmp_path / "onnx")
    lines = ["ein hund läuft", "zwei kinder spielen"]
    onnx = nmt.load(tmp_path / "onnx", engine="onnxruntime").translate(lines)
    assert [r.text for r in onnx] == [r.text for r in translator.translate(lines)]
