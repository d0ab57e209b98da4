"""Decoding options on the command line: what each promises, and one-line refusals of bad input."""

import pytest

from conftest import repeats_an_ngram
from conftest import run_cli as run


@pytest.fixture()
def source(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("ant bee cat dog\nfox gnu hen\nowl\n", encoding="utf-8")
    return path


def translate(trained_toy, source, out, capsys, *options):
    code, _, err = run(
        [
            "translate",
            "--checkpoint",
            str(trained_toy / "checkpoints/best.pt"),
            "-i",
            str(source),
            "-o",
            str(out),
            *options,
        ],
        capsys,
    )
    assert code == 0, err
    return out.read_text(encoding="utf-8").splitlines()


def test_samples_are_seeded_and_n_best_per_line(trained_toy, source, tmp_path, capsys):
    options = ("--sample", "--n-best", "4", "--temperature", "1.5", "--top-p", "0.95")
    first = translate(trained_toy, source, tmp_path / "a.tsv", capsys, *options, "--seed", "7")
    again = translate(trained_toy, source, tmp_path / "b.tsv", capsys, *options, "--seed", "7")
    other = translate(trained_toy, source, tmp_path / "c.tsv", capsys, *options, "--seed", "8")
    assert first == again and first != other
    assert [int(r.split("\t")[0]) for r in first] == [0] * 4 + [1] * 4 + [2] * 4


def test_no_repeat_ngram_and_length_limit(trained_toy, source, tmp_path, capsys):
    lines = translate(trained_toy, source, tmp_path / "a.txt", capsys, "--no-repeat-ngram", "1", "--beam", "3")
    assert all(not repeats_an_ngram(line.split(), 1) for line in lines)
    short = translate(trained_toy, source, tmp_path / "b.txt", capsys, "--max-len-a", "0", "--max-len-b", "2")
    assert all(len(line.split()) <= 1 for line in short)  # one token, then EOS


def test_coverage_penalty_runs_with_beam(trained_toy, source, tmp_path, capsys):
    lines = translate(trained_toy, source, tmp_path / "a.txt", capsys, "--coverage-penalty", "0.2", "--beam", "4")
    assert len(lines) == 3 and all(lines)


@pytest.mark.parametrize(
    "options, message",
    [
        (["--sample", "--beam", "3"], "sampling draws"),
        (["--sample", "--top-p", "0"], "top_p"),
        (["--sample", "--top-p", "1.5"], "top_p"),
        (["--sample", "--temperature", "0"], "temperature"),
        (["--no-repeat-ngram", "0"], "no_repeat_ngram"),
        (["--no-repeat-ngram", "-2"], "no_repeat_ngram"),
        (["--coverage-penalty", "0.2", "--set", "decode.beam=1"], "coverage_penalty"),
        (["--set", "decode.sample=true", "--set", "decode.beam=4"], "decode.sample"),
    ],
)
def test_bad_decoding_options_exit_2_with_one_line(trained_toy, source, tmp_path, capsys, options, message):
    code, _out, err = run(
        [
            "translate",
            "--checkpoint",
            str(trained_toy / "checkpoints/best.pt"),
            "-i",
            str(source),
            "-o",
            str(tmp_path / "out.txt"),
            *options,
        ],
        capsys,
    )
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out.txt").exists()
