"""``nmt translate`` and ``nmt eval`` against the user's paths, streams and beam sizes.

Every mistake is one line on stderr and exit status 2, found before the model loads
where the mistake does not depend on it; files nmt may replace keep their mode.
"""

import os
import stat
import subprocess
import threading
from pathlib import Path

import pytest
import torch

from conftest import NMT, REPO
from conftest import run_cli as run

TIMEOUT = 120  # seconds for a subprocess that loads torch and the tiny model on a busy machine


def one_line_error(code: int, err: str, needle: str) -> None:
    assert code == 2, err
    assert err.startswith("nmt: error: ") and err.strip().count("\n") == 0, err
    assert needle in err, err


@pytest.fixture(scope="module")
def ckpt(trained_toy) -> str:
    return str(trained_toy / "checkpoints" / "best.pt")


@pytest.fixture()
def no_model_load(monkeypatch):
    """Fail the test if translate gets as far as loading the model."""

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded before the paths were checked")

    monkeypatch.setattr("nmt.decode.torch_engine.load_models", refuse)


@pytest.fixture()
def src(tmp_path) -> Path:
    path = tmp_path / "in.txt"
    path.write_text("ant bee\nfox gnu hen\n", encoding="utf-8")
    return path


# --- 3: read-only and permission bits of the output file ------------------------------------


def test_read_only_output_is_refused_and_left_alone(ckpt, src, tmp_path, capsys, no_model_load):
    out = tmp_path / "ro.txt"
    out.write_text("keep me\n")
    out.chmod(0o444)
    code, _, err = run(["translate", "--checkpoint", ckpt, "-i", str(src), "-o", str(out)], capsys)
    one_line_error(code, err, "read-only")
    assert out.read_text() == "keep me\n" and stat.S_IMODE(out.stat().st_mode) == 0o444
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "ro.txt"]


@pytest.mark.parametrize("mode", [0o600, 0o664, 0o640], ids=oct)
def test_replaced_output_keeps_its_mode(mode, ckpt, src, tmp_path, capsys):
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    out.chmod(mode)
    code, _, err = run(["translate", "--checkpoint", ckpt, "-i", str(src), "-o", str(out), "--beam", "1"], capsys)
    assert code == 0, err
    assert len(out.read_text().splitlines()) == 2
    assert stat.S_IMODE(out.stat().st_mode) == mode


# --- 11 and 15c: paths that are not what the option needs -----------------------------------


@pytest.mark.parametrize(
    "option,make,needle",
    [
        ("-o", lambda tmp: tmp, "is a directory"),
        ("-o", lambda tmp: Path("."), "is a directory"),
        ("-i", lambda tmp: tmp, "is a directory"),
        ("--attention", lambda tmp: tmp / "in.txt", "is a file"),
    ],
    ids=["output-folder", "output-dot", "input-folder", "attention-file"],
)
def test_wrong_kind_of_path_is_one_line_before_loading(
    option, make, needle, ckpt, src, tmp_path, capsys, monkeypatch, no_model_load
):
    monkeypatch.chdir(tmp_path)
    argv = ["translate", "--checkpoint", ckpt, "-i", str(src), "-o", str(tmp_path / "out.txt")]
    argv += [option, str(make(tmp_path))]  # a repeated option: the last one counts
    code, _, err = run(argv, capsys)
    one_line_error(code, err, needle)
    assert not (tmp_path / "out.txt").exists()


def test_checkpoint_directory_is_named_as_such(trained_toy, src, capsys):
    code, _, err = run(["translate", "--checkpoint", str(trained_toy / "checkpoints"), "-i", str(src)], capsys)
    one_line_error(code, err, "is a directory")
    assert "not found" not in err


def test_closed_stdin_is_one_line_error(ckpt):
    """``nmt translate --checkpoint X <&-`` (a real shell redirection)."""
    proc = subprocess.run(
        ["sh", "-c", 'exec "$@" <&-', "sh", *NMT, "translate", "--checkpoint", ckpt],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=TIMEOUT,
    )
    one_line_error(proc.returncode, proc.stderr, "standard input is closed")


# --- 12: the beam's upper bound and the rows one search may hold ----------------------------


def test_sentences_per_search_keeps_rows_under_budget():
    from nmt.decode.inference import _batches, sentences_per_search

    for max_rows in (1, 100, 4096):
        for batch_size in (1, 3, 64, 5000):
            for beam in list(range(1, 130)) + [999, 1000, 4096, 5000]:
                n = sentences_per_search(batch_size, beam, max_rows)
                assert 1 <= n <= batch_size
                assert n * beam <= max_rows or n == 1  # one sentence is always searched
                assert n == batch_size or (n + 1) * beam > max_rows  # never cut more than needed
    lengths = [5, 1, 9, 9, 2, 7, 3]
    parts = list(_batches(lengths, sentences_per_search(64, 3, 7)))
    assert all(len(p) <= 2 for p in parts) and sorted(i for p in parts for i in p) == list(range(7))


@pytest.fixture(scope="module")
def loaded(trained_toy):
    from nmt.decode.inference import load_checkpoint

    return load_checkpoint(trained_toy / "checkpoints" / "best.pt", torch.device("cpu"))


@pytest.fixture(scope="module")
def sources(loaded, toy_files) -> list[list[int]]:
    _, files = toy_files
    lines = Path(files["test"][0]).read_text().splitlines()[:10]
    return loaded.src_tok.encode(lines)


def test_wide_beam_is_split_and_translates_the_same(loaded, sources, monkeypatch):
    """Beam 64 on a tiny model: a 128-row budget (2 sentences per search) changes nothing."""
    from nmt.decode import inference

    beam = min(64, loaded.tgt_tok.vocab_size)
    decode = loaded.config.decode.model_copy(update={"batch_size": 64})
    whole = inference.translate_ids(loaded.model, sources, decode, torch.device("cpu"), beam=beam, n_best=2)
    rows = []
    real_search = inference.search

    def counting_search(model, src, src_len, **kwargs):
        rows.append(src.size(0) * kwargs["beam"])
        return real_search(model, src, src_len, **kwargs)

    monkeypatch.setattr(inference, "MAX_BEAM_ROWS", 2 * beam)
    monkeypatch.setattr(inference, "search", counting_search)
    split = inference.translate_ids(loaded.model, sources, decode, torch.device("cpu"), beam=beam, n_best=2)
    assert len(rows) == (len(sources) + 1) // 2 and max(rows) <= 2 * beam
    assert [t.ids for t in split] == [t.ids for t in whole]
    for a, b in zip(split, whole):
        assert a.scores == pytest.approx(b.scores, abs=1e-4)


def test_beam_wider_than_the_vocabulary_is_refused(loaded, sources):
    from nmt.decode.inference import translate_ids
    from nmt.util.errors import UserError

    V = loaded.tgt_tok.vocab_size
    with pytest.raises(UserError, match=f"between 1 and {V}"):
        translate_ids(loaded.model, sources, loaded.config.decode, torch.device("cpu"), beam=V + 1)


@pytest.mark.parametrize("command", ["translate", "eval"])
def test_cli_refuses_huge_beam_naming_the_limit(command, loaded, ckpt, src, tmp_path, capsys):
    V = loaded.tgt_tok.vocab_size
    argv = [command, "--checkpoint", ckpt, "--beam", "1000"]
    argv += ["-i", str(src)] if command == "translate" else ["--out", str(tmp_path / "eval")]
    code, out, err = run(argv, capsys)
    one_line_error(code, err, f"between 1 and {V}")
    assert out == ""


# --- 14: a line in, a line out, while the input is still open --------------------------------


def read_line_with_timeout(stream, seconds: float) -> bytes | None:
    """One line from ``stream``, or None when none comes in time (the reader thread is a daemon)."""
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(seconds)
    return got[0] if got else None


@pytest.mark.parametrize("stdin_kind", ["pipe", "terminal"])
def test_each_line_is_answered_before_input_ends(stdin_kind, ckpt):
    """``--flush`` on a pipe, or a terminal as stdin: the first answer comes while stdin is open."""
    if stdin_kind == "pipe":
        proc = subprocess.Popen(
            NMT + ["translate", "--checkpoint", ckpt, "--beam", "2", "--flush"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=REPO,
        )
        writer = proc.stdin
    else:
        import pty

        master, slave = pty.openpty()
        proc = subprocess.Popen(
            NMT + ["translate", "--checkpoint", ckpt, "--beam", "2"],
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=REPO,
        )
        os.close(slave)
        writer = os.fdopen(master, "wb", buffering=0)
    try:
        writer.write(b"ant bee cat\n")
        writer.flush()
        first = read_line_with_timeout(proc.stdout, TIMEOUT)
        assert first == b"CAT BEE ANT\n", first
        writer.write(b"dog eel\n")
        writer.flush()
        assert (read_line_with_timeout(proc.stdout, TIMEOUT) or b"").endswith(b"\n")  # the second line too
        if stdin_kind == "pipe":
            writer.close()
        else:
            writer.write(b"\x04")  # end of input on a terminal (Ctrl-D)
        assert proc.wait(timeout=TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=TIMEOUT)
        if not writer.closed:
            writer.close()
        proc.stdout.close()


def test_lines_translated_to_nothing_are_counted_in_one_warning(ckpt, src, tmp_path, capsys, monkeypatch, caplog):
    """An undertrained model ends at once (the tour's tiny one does): the empty lines are said to be so."""
    from nmt.decode import translate as module

    real = module.translate_lines

    def first_line_empty(*args, **kwargs):
        ids, results = real(*args, **kwargs)
        results[0].ids[0] = []  # as a model that predicts EOS first
        return ids, results

    monkeypatch.setattr(module, "translate_lines", first_line_empty)
    blank = tmp_path / "with_blank.txt"
    blank.write_text("ant bee\n\nfox gnu hen\n", encoding="utf-8")  # a blank input's empty output is no news
    code, out, _ = run(["translate", "--checkpoint", ckpt, "-i", str(blank)], capsys)
    assert code == 0 and out.split("\n")[:2] == ["", ""] and out.split("\n")[2]
    warnings = [r.getMessage() for r in caplog.records if "translated to nothing" in r.getMessage()]
    assert warnings == [warnings[0]] and warnings[0].startswith("1 of 3 lines translated to nothing"), warnings
