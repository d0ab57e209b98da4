"""The Transformer through the real pipeline: train, learn the toy task, resume exactly,
translate with per-layer attention maps, ensemble with an RNN, and refuse bad configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from conftest import interrupt_at, run_cli, train_losses, transformer_overrides
from nmt.decode.inference import load_checkpoint, load_models, translate_ids
from nmt.score.metrics import score
from nmt.training.entry import run_training


@pytest.fixture(scope="module")
def trained_transformer(tmp_path_factory: pytest.TempPathFactory, toy_files) -> Path:
    _, files = toy_files
    root = tmp_path_factory.mktemp("transformer")
    run_training(None, transformer_overrides(root, files, train__max_epochs=16, train__valid_every=0), progress=False)
    return root / "runs" / "toy"


def test_toy_task_learned_to_high_bleu(trained_transformer, toy_files):
    _, files = toy_files
    loaded = load_checkpoint(trained_transformer / "checkpoints" / "best.pt", torch.device("cpu"))
    srcs = Path(files["test"][0]).read_text().splitlines()
    refs = Path(files["test"][1]).read_text().splitlines()
    out = translate_ids(loaded.model, loaded.src_tok.encode(srcs), loaded.config.decode, torch.device("cpu"), beam=5)
    assert score([loaded.tgt_tok.decode(t.ids[0]) for t in out], refs).bleu >= 90.0


def test_resume_after_interrupt_gives_identical_losses(tmp_path, toy_files):
    # the RNN's resume test (tests/integration/test_train.py), same mechanics
    _, files = toy_files
    extra = dict(
        train__max_steps=10,
        model__dropout=0.3,
        train__valid_every=4,
        train__max_tokens=4000,
        model__src_word_dropout=0.1,
    )
    run_training(None, transformer_overrides(tmp_path / "a", files, **extra), progress=False)
    reference = train_losses(tmp_path / "a" / "runs" / "toy")
    with pytest.MonkeyPatch.context() as patch:
        interrupt_at(patch, 5)
        run_training(None, transformer_overrides(tmp_path / "b", files, **extra), progress=False)
    run_b = tmp_path / "b" / "runs" / "toy"
    assert max(train_losses(run_b)) == 5
    run_training(None, [], resume=run_b, progress=False)
    assert train_losses(run_b) == reference


def test_translate_writes_every_layer_and_head(trained_transformer, toy_files, tmp_path, capsys):
    _, _files = toy_files
    source = tmp_path / "in.txt"
    source.write_text("ant bee cat\nowl pig\n")
    maps = tmp_path / "maps"
    code, out, _ = run_cli(
        [
            "translate",
            "--checkpoint",
            str(trained_transformer / "checkpoints" / "best.pt"),
            "-i",
            str(source),
            "--attention",
            str(maps),
        ],
        capsys,
    )
    assert code == 0 and out.splitlines()[0] == "CAT BEE ANT"
    record = json.loads((maps / "000000.layers.json").read_text())
    S, T = len(record["src"]), len(record["tgt"])  # T counts </s>
    assert (len(record["encoder_self"]), len(record["encoder_self"][0])) == (2, 4)  # layers, heads
    assert torch.tensor(record["encoder_self"]).shape == (2, 4, S, S)
    assert torch.tensor(record["decoder_self"]).shape == (2, 4, T, T)
    assert torch.tensor(record["cross"]).shape == (2, 4, T, S)
    for kind in ("encoder_self", "decoder_self", "cross"):
        assert (maps / f"000000.{kind}.png").stat().st_size > 0
    assert (maps / "000001.png").is_file()  # the summary map every model writes


def test_ensemble_of_a_transformer_and_an_rnn(trained_transformer, trained_toy, toy_files):
    """Both kinds offer the same search interface, so they ensemble (same vocabulary sizes)."""
    _, files = toy_files
    loaded = load_models(
        [trained_transformer / "checkpoints" / "best.pt", trained_toy / "checkpoints" / "best.pt"], torch.device("cpu")
    )
    srcs = Path(files["test"][0]).read_text().splitlines()[:30]
    refs = Path(files["test"][1]).read_text().splitlines()[:30]
    out = translate_ids(loaded.model, loaded.src_tok.encode(srcs), loaded.config.decode, torch.device("cpu"), beam=3)
    assert score([loaded.tgt_tok.decode(t.ids[0]) for t in out], refs).bleu >= 80.0


@pytest.mark.parametrize(
    "sets,needle",
    [
        (["model.arch=transformer", "model.transformer.heads=5"], "does not divide"),
        (["model.arch=transformer", "model.attention.input_feeding=false"], "model.attention.input_feeding"),
        (["model.transformer.ff_size=512"], "model.arch=transformer"),
    ],
)
def test_bad_transformer_options_exit_2_with_one_line(sets, needle, capsys):
    argv = ["train"] + [arg for s in sets for arg in ("--set", s)]
    code, _, err = run_cli(argv, capsys)
    assert code == 2 and needle in err and err.strip().count("\n") == 0


def test_presets_list_transformer_small(capsys):
    code, out, _ = run_cli(["presets"], capsys)
    assert code == 0 and "transformer_small" in out and "model.arch=transformer" in out
