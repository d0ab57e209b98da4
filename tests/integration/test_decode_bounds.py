"""Decoding options of ``nmt translate`` and ``nmt eval`` that could take the machine's memory,
overwrite the input or do nothing (issue 33): each is one line on stderr and exit status 2.
"""

import os
import sys
from pathlib import Path

import pytest
import torch

from conftest import run_cli as run

SOURCE = "ant bee cat dog\nfox gnu hen\nowl\n"


def one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert err.startswith("nmt: error: ") and err.strip().count("\n") == 0, err
    assert all(needle in err for needle in needles), err


@pytest.fixture(scope="module")
def ckpt(trained_toy) -> str:
    return str(trained_toy / "checkpoints" / "best.pt")


@pytest.fixture(scope="module")
def loaded(trained_toy):
    from nmt.decode.inference import load_checkpoint

    return load_checkpoint(trained_toy / "checkpoints" / "best.pt", torch.device("cpu"))


@pytest.fixture()
def src(tmp_path) -> Path:
    path = tmp_path / "in.txt"
    path.write_text(SOURCE, encoding="utf-8")
    return path


@pytest.fixture()
def no_model_load(monkeypatch):
    """Fail the test if translate gets as far as loading the model."""

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded before the paths were checked")

    monkeypatch.setattr("nmt.decode.torch_engine.load_models", refuse)


def translate(ckpt: str, src: Path, out: Path, capsys, *options: str) -> tuple[int, str, str]:
    return run(["translate", "--checkpoint", ckpt, "-i", str(src), "-o", str(out), *options], capsys)


# --- 1: the output length is bounded ----------------------------------------------------------


@pytest.mark.parametrize(
    "options, needle",
    [
        (["--max-len-b", "100000000"], "decode.max_len_b"),
        (["--max-len-a", "1e9"], "decode.max_len_a"),
        (["--set", "decode.max_len_b=1025"], "decode.max_len_b"),
    ],
)
def test_output_length_beyond_its_maximum_is_refused(ckpt, src, tmp_path, capsys, options, needle):
    from nmt.config.sections import MAX_LEN_A, MAX_OUTPUT_TOKENS

    code, _out, err = translate(ckpt, src, tmp_path / "out.txt", capsys, *options)
    one_line_error(code, err, needle, f"{MAX_OUTPUT_TOKENS if 'len_b' in needle else f'{MAX_LEN_A:g}'}")
    assert not (tmp_path / "out.txt").exists()


def test_help_names_the_maxima_the_code_keeps():
    """The CLI (which imports neither pydantic nor torch for --help) spells the numbers out."""
    from typer.main import get_command

    from nmt.cli import app
    from nmt.config.sections import MAX_LEN_A, MAX_OUTPUT_TOKENS
    from nmt.decode.inference import MAX_BEAM_ROWS

    helps = {param.name: param.help for param in get_command(app).commands["translate"].params}
    assert f"at most {MAX_LEN_A:g}" in helps["max_len_a"] and f"at most {MAX_OUTPUT_TOKENS}" in helps["max_len_b"]
    assert all(f"No output exceeds {MAX_OUTPUT_TOKENS} tokens" in helps[k] for k in ("max_len_a", "max_len_b"))
    assert f"at most {MAX_BEAM_ROWS} samples" in helps["n_best"]


def test_largest_length_limits_translate_within_the_bound(ckpt, src, tmp_path, capsys):
    from nmt.config.sections import MAX_LEN_A, MAX_OUTPUT_TOKENS

    code, _, err = translate(
        ckpt,
        src,
        tmp_path / "out.txt",
        capsys,
        "--max-len-a",
        f"{MAX_LEN_A}",
        "--max-len-b",
        f"{MAX_OUTPUT_TOKENS}",
        "--beam",
        "2",
    )
    assert code == 0, err
    assert len((tmp_path / "out.txt").read_text(encoding="utf-8").splitlines()) == 3


# --- 2: sampling holds at most MAX_BEAM_ROWS rows, and n-best has a maximum -------------------


def test_too_many_samples_are_refused(ckpt, src, tmp_path, capsys):
    from nmt.decode.inference import MAX_BEAM_ROWS

    code, _out, err = translate(ckpt, src, tmp_path / "out.txt", capsys, "--sample", "--n-best", "100000")
    one_line_error(code, err, "--n-best 100000", f"between 1 and {MAX_BEAM_ROWS}")
    assert not (tmp_path / "out.txt").exists()


def test_samples_are_searched_within_the_row_budget(loaded, toy_files, monkeypatch):
    """Sentences x samples per search call stays within MAX_BEAM_ROWS; more samples are refused."""
    from nmt.decode import inference
    from nmt.util.errors import UserError

    _, files = toy_files
    sources = loaded.src_tok.encode(Path(files["test"][0]).read_text().splitlines()[:9])
    decode = loaded.config.decode.model_copy(update={"sample": True, "beam": 1, "batch_size": 64})
    rows = []
    real_search = inference.search

    def counting_search(model, src, src_len, **kwargs):
        rows.append(src.size(0) * kwargs["n_best"])
        return real_search(model, src, src_len, **kwargs)

    monkeypatch.setattr(inference, "MAX_BEAM_ROWS", 8)
    monkeypatch.setattr(inference, "search", counting_search)
    results = inference.translate_ids(loaded.model, sources, decode, torch.device("cpu"), n_best=4)
    assert len(rows) == 5 and max(rows) <= 8  # 2 sentences x 4 samples per call
    assert [len(r.ids) for r in results] == [4] * len(sources)
    again = inference.translate_ids(loaded.model, sources, decode, torch.device("cpu"), n_best=4)
    assert [r.ids for r in again] == [r.ids for r in results]  # same input and seed: same samples
    with pytest.raises(UserError, match="between 1 and 8"):
        inference.translate_ids(loaded.model, sources, decode, torch.device("cpu"), n_best=9)


# --- 5: the output is never the input -------------------------------------------------------


def same_file_paths(src: Path, tmp_path: Path) -> dict[str, Path]:
    """Other names of ``src``: itself, another spelling, a symlink, a hard link."""
    (tmp_path / "sub").mkdir()
    link = tmp_path / "link.txt"
    link.symlink_to(src)
    hard = tmp_path / "hard.txt"
    os.link(src, hard)
    return {"same": src, "spelling": tmp_path / "sub" / ".." / src.name, "symlink": link, "hardlink": hard}


@pytest.mark.parametrize("kind", ["same", "spelling", "symlink", "hardlink"])
def test_output_that_is_the_input_is_refused(kind, ckpt, src, tmp_path, capsys, no_model_load):
    output = same_file_paths(src, tmp_path)[kind]
    code, _out, err = translate(ckpt, src, output, capsys)
    one_line_error(code, err, f"-o {output}", "input file")
    assert src.read_text(encoding="utf-8") == SOURCE and output.read_text(encoding="utf-8") == SOURCE


def test_input_through_a_symlink_to_the_output_is_refused(ckpt, src, tmp_path, capsys, no_model_load):
    link = tmp_path / "link.txt"
    link.symlink_to(src)
    code, _out, err = run(["translate", "--checkpoint", ckpt, "-i", str(link), "-o", str(src)], capsys)
    one_line_error(code, err, "input file")
    assert src.read_text(encoding="utf-8") == SOURCE and link.is_symlink()


def test_output_that_is_the_file_on_stdin_is_refused(ckpt, src, capsys, monkeypatch, no_model_load):
    with open(src, encoding="utf-8") as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        code, _out, err = run(["translate", "--checkpoint", ckpt, "-o", str(src)], capsys)
    one_line_error(code, err, "standard input")
    assert src.read_text(encoding="utf-8") == SOURCE


# --- 11: a coverage penalty needs a beam ------------------------------------------------------


@pytest.mark.parametrize(
    "options", [["--coverage-penalty", "0.2", "--beam", "1"], ["--set", "decode.coverage_penalty=0.2", "--beam", "1"]]
)
def test_coverage_penalty_with_beam_one_is_refused(options, ckpt, src, tmp_path, capsys):
    code, _out, err = translate(ckpt, src, tmp_path / "out.txt", capsys, *options)
    one_line_error(code, err, "coverage", "beam")
    assert not (tmp_path / "out.txt").exists()


def test_eval_refuses_coverage_penalty_with_beam_one(ckpt, tmp_path, capsys):
    code, _out, err = run(
        [
            "eval",
            "--checkpoint",
            ckpt,
            "--beam",
            "1",
            "--set",
            "decode.coverage_penalty=0.2",
            "--out",
            str(tmp_path / "eval"),
        ],
        capsys,
    )
    one_line_error(code, err, "coverage", "beam")


def test_inherited_coverage_penalty_gives_way_to_an_explicit_greedy_search(loaded):
    """A checkpoint's coverage penalty is a beam-search setting: --beam 1 leaves it out, as asked."""
    from nmt.decode.inference import check_search
    from nmt.util.errors import UserError

    decode = loaded.config.decode.model_copy(update={"coverage_penalty": 0.2, "beam": 5})
    check_search(decode, 1, 1, loaded.model)  # inherited: greedy
    check_search(decode, 4, 1, loaded.model, ["decode.coverage_penalty=0.2"])  # given, with a beam
    with pytest.raises(UserError, match=r"--coverage-penalty 0\.2 applies to beam search"):
        check_search(decode, 1, 1, loaded.model, ["decode.coverage_penalty=0.2"])


# --- 12: sampling options without --sample ----------------------------------------------------


@pytest.mark.parametrize(
    "options, flag",
    [
        (["--top-p", "0.9"], "--top-p"),
        (["--top-k", "5"], "--top-k"),
        (["--temperature", "1.5"], "--temperature"),
        (["--set", "decode.top_p=0.9"], "--top-p"),
    ],
)
def test_sampling_options_without_sample_are_refused(options, flag, ckpt, src, tmp_path, capsys):
    code, _out, err = translate(ckpt, src, tmp_path / "out.txt", capsys, *options)
    one_line_error(code, err, flag, "--sample")
    assert not (tmp_path / "out.txt").exists()
    code, _, err = translate(ckpt, src, tmp_path / "out.txt", capsys, *options, "--sample")
    assert code == 0, err
