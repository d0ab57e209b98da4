"""A bad checkpoint given to a command: one line on stderr naming the file, exit 2 (issue 33,
items 13, 14 and 18), whichever command reads it."""

from __future__ import annotations

import pickle
import subprocess

import pytest
import torch

from conftest import NMT, PROC_TIMEOUT, REPO, run_cli
from nmt.run import checkpoint as ckpt


def one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert err.startswith("nmt: error: ") and err.count("\n") == 1, err
    assert all(needle in err for needle in needles), err


@pytest.fixture()
def text(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("hallo welt\n")
    return path


def test_a_raw_pickle_is_one_line_on_stderr(tmp_path, text):
    """A real process, where torch's "Detected pickle protocol" warning added two lines."""
    raw = tmp_path / "raw.pt"
    raw.write_bytes(pickle.dumps({"weights": [1.0, 2.0]}, protocol=4))
    proc = subprocess.run(
        NMT + ["translate", "--checkpoint", str(raw), "-i", str(text)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=PROC_TIMEOUT,
    )
    one_line_error(proc.returncode, proc.stderr, str(raw), "not a loadable nmt checkpoint")


def test_translate_and_serve_say_the_same_of_a_folder_and_a_missing_file(tmp_path, text, capsys):
    for path, words in ((tmp_path, "is a directory"), (tmp_path / "missing.pt", "checkpoint not found")):
        translated = run_cli(["translate", "--checkpoint", str(path), "-i", str(text)], capsys)
        served = run_cli(["serve", "--port", "0", "--checkpoint", str(path)], capsys)
        one_line_error(translated[0], translated[2], str(path), words)
        assert served == translated


def test_an_altered_config_is_one_line_naming_the_file(tmp_path, text, capsys):
    path = tmp_path / "altered.pt"
    payload = ckpt.Checkpoint(
        config={"model": {"hidden_size": -5}}, model={"w": torch.ones(2)}, tokenizers={"src": b"s", "tgt": b"t"}
    ).to_payload()
    ckpt.write_payload(path, payload)
    for argv in (
        ["translate", "--checkpoint", str(path), "-i", str(text)],
        ["serve", "--port", "0", "--checkpoint", str(path)],
    ):
        code, _, err = run_cli(argv, capsys)
        one_line_error(code, err, f"{path}: the run config saved in the checkpoint is invalid", "model.hidden_size")


def test_a_corrupt_sentencepiece_model_names_the_checkpoint(tmp_path, text, capsys):
    """A checkpoint whose config is sound but whose tokenizer bytes are not a SentencePiece model
    (issue 70): the line names the checkpoint and the side, not ``<bytes>``."""
    from nmt import config as C

    path = tmp_path / "corrupt_spm.pt"
    saved = ckpt.Checkpoint(
        config=C.load(None, []).model_dump(mode="json"),
        model={"w": torch.ones(2)},
        tokenizers={"src": b"not a sentencepiece model", "tgt": b"nor this"},
    )
    ckpt.write_payload(path, saved.to_payload())
    for argv in (
        ["translate", "--checkpoint", str(path), "-i", str(text)],
        ["serve", "--port", "0", "--checkpoint", str(path)],
    ):
        code, _, err = run_cli(argv, capsys)
        one_line_error(code, err, f"{path} (source tokenizer) is not a SentencePiece model")
        assert "<bytes>" not in err
