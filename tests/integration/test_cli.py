"""The command line as a user meets it: help, exit codes, one-line errors, real commands."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sacrebleu
import typer

from conftest import NMT, PROC_TIMEOUT, REPO, stop
from conftest import run_cli as run
from nmt.cli import app, main


def command_paths(group: Any = None, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and subcommand of the Typer app, found by walking it (none listed by hand).

    A group is anything with ``commands``: typer may bundle its own copy of click.
    """
    group = group or typer.main.get_command(app)
    paths = []
    for name, command in sorted(group.commands.items()):
        paths.append(prefix + (name,))
        if hasattr(command, "commands"):
            paths += command_paths(command, prefix + (name,))
    return paths


def command_at(path: tuple[str, ...]) -> Any:
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


COMMANDS = command_paths()


def test_the_walk_finds_the_commands_and_subcommands():
    names = {" ".join(p) for p in COMMANDS}
    assert {"train", "translate", "serve", "compare", "variants", "data", "data prepare"} <= names


def test_help_lists_commands(capsys):
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    for path in COMMANDS:
        if len(path) == 1:
            assert path[0] in out, path


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_an_example_and_every_option_explained(path, capsys):
    """--help works, shows an example (commands that run), and names each option and argument, each
    with a help text."""
    command = command_at(path)
    code, out, err = run([*path, "--help"], capsys)
    assert code == 0, err
    if not hasattr(command, "commands"):
        assert "Example" in out
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        assert any(name in out for name in param.opts), (path, param.name)
        assert (getattr(param, "help", None) or "").strip(), (path, param.name)  # arguments too


def test_version(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.startswith("nmt ")


def test_misspelled_key_exits_2_with_suggestion():
    """The issue's own example, through a real process: one line on stderr, status 2."""
    proc = subprocess.run(
        NMT + ["train", "--config", "configs/demo.yaml", "--set", "model.atention.type=x"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=PROC_TIMEOUT,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "model.atention" in proc.stderr and "did you mean 'attention'?" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["train", "--config", "no/such.yaml"], "not found"),
        (["train", "--no-such-option"], "No such option"),
        (["train", "--set", "train.teacher_forcing=2"], "train.teacher_forcing"),
        (["translate", "--checkpoint", "missing.pt", "-i", "README.md"], "checkpoint not found"),
        (["eval", "--hyp", "x.txt"], "--ref"),
        (["data", "prepare", "multi30k", "--pair", "de"], "SRC-TGT"),
    ],
)
def test_user_errors_exit_2_with_one_line(argv, needle, capsys):
    code, _, err = run(argv, capsys)
    assert code == 2
    assert needle in err and err.strip().count("\n") == 0


def test_debug_shows_traceback(capsys):
    from nmt.util.errors import UserError

    with pytest.raises(UserError):
        main(["--debug", "train", "--config", "no/such.yaml"])


@pytest.mark.parametrize("config", sorted((REPO / "configs").glob("synthetic_*.yaml")), ids=lambda p: p.stem)
def test_every_attention_config_trains_from_the_cli(config, tmp_path, capsys):
    """Each configs/synthetic_<type>.yaml trains (tiny data, a few steps) and writes a checkpoint."""
    argv = [
        "train",
        "--config",
        str(config),
        "--no-progress",
        "--set",
        f"data.root={tmp_path / 'data'}",
        "--set",
        f"runs_dir={tmp_path / 'runs'}",
        "--set",
        "data.synthetic_sizes={train: 200, valid: 8, test: 8}",
        "--set",
        "data.vocab_size=300",
        "--set",
        "model.hidden_size=32",
        "--set",
        "model.emb_size=16",
        "--set",
        "train.max_steps=3",
        "--set",
        "train.max_tokens=1500",
    ]
    code, _out, err = run(argv, capsys)
    assert code == 0, err
    run_dir = tmp_path / "runs" / config.stem
    assert (run_dir / "checkpoints" / "best.pt").is_file()
    events = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert events[0]["event"] == "start" and events[0]["params"] > 0 and events[0]["device"] == "cpu"
    assert (events[-1]["event"], events[-1]["reason"], events[-1]["step"]) == ("stop", "max_steps", 3)


def test_translate_stdin_to_stdout_keeps_line_alignment(trained_toy):
    lines = ["ant bee cat", "", "owl " * 600, "dog eel", ""]
    proc = subprocess.run(
        NMT + ["translate", "--checkpoint", str(trained_toy / "checkpoints/best.pt"), "--beam", "2"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=PROC_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.split("\n")[:-1]
    assert len(out) == len(lines)
    assert out[1] == "" and out[4] == ""
    assert out[0] == "CAT BEE ANT"
    assert "translating its first" in proc.stderr  # the overlong line was cut, with a warning


def test_translate_files_nbest_and_attention(trained_toy, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("ant bee\nfox gnu hen\n", encoding="utf-8")
    out, att = tmp_path / "out.tsv", tmp_path / "att"
    code, _, err = run(
        [
            "translate",
            "--checkpoint",
            str(trained_toy / "checkpoints/best.pt"),
            "-i",
            str(src),
            "-o",
            str(out),
            "--beam",
            "3",
            "--n-best",
            "3",
            "--attention",
            str(att),
        ],
        capsys,
    )
    assert code == 0, err
    rows = [r.split("\t") for r in out.read_text().splitlines()]
    assert len(rows) == 6 and [int(r[0]) for r in rows] == [0, 0, 0, 1, 1, 1]
    scores = [float(r[1]) for r in rows[:3]]
    assert scores == sorted(scores, reverse=True)
    weights = json.loads((att / "000001.json").read_text())
    assert len(weights["weights"]) == len(weights["tgt"]) and (att / "000001.png").is_file()


def test_translate_rejects_binary_input_without_partial_output(trained_toy, tmp_path, capsys):
    src = tmp_path / "bin.txt"
    src.write_bytes(b"ant bee\n" * 5000 + b"\x00\x01\x02garbage\n")
    out = tmp_path / "out.txt"
    code, _, err = run(
        ["translate", "--checkpoint", str(trained_toy / "checkpoints/best.pt"), "-i", str(src), "-o", str(out)], capsys
    )
    assert code == 2 and "line 5001" in err
    assert list(tmp_path.iterdir()) == [src]  # neither out.txt nor a temporary file


def test_eval_equals_sacrebleu_on_files(tmp_path, capsys):
    refs = ["The cat sat on the mat .", "A dog barks loudly", "Two children play in the park"]
    hyps = ["The cat sat on a mat .", "A dog barks", "Two kids play in the park"]
    (tmp_path / "ref.txt").write_text("\n".join(refs) + "\n")
    (tmp_path / "hyp.txt").write_text("\n".join(hyps) + "\n")
    code, out, err = run(
        [
            "eval",
            "--hyp",
            str(tmp_path / "hyp.txt"),
            "--ref",
            str(tmp_path / "ref.txt"),
            "--out",
            str(tmp_path / "report"),
        ],
        capsys,
    )
    assert code == 0, err
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    expected = sacrebleu.corpus_bleu(hyps, [refs])
    assert f"{report['systems']['hyp.txt']['bleu']:.2f}" == f"{expected.score:.2f}"
    cli = subprocess.run(
        [
            str(Path(sys.executable).parent / "sacrebleu"),
            str(tmp_path / "ref.txt"),
            "-i",
            str(tmp_path / "hyp.txt"),
            "-b",
            "-w",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=PROC_TIMEOUT,
    )
    assert cli.returncode == 0 and f"{expected.score:.2f}" == cli.stdout.strip()
    assert f"{expected.score:.2f}" in out


def test_eval_from_checkpoint_with_length_plot(trained_toy, capsys):
    out_dir = trained_toy / "eval-test"
    code, _out, err = run(
        [
            "eval",
            "--checkpoint",
            str(trained_toy / "checkpoints/best.pt"),
            "--split",
            "test",
            "--beam",
            "1",
            "--out",
            str(out_dir),
        ],
        capsys,
    )
    assert code == 0, err
    report = json.loads((out_dir / "report.json").read_text())
    assert report["systems"]["beam1"]["bleu"] >= 90
    assert (out_dir / "bleu_by_length.png").is_file()


def test_translate_with_stdin_closed_and_reader_gone(trained_toy):
    """No input gives no output and status 0; a reader that leaves early is not an error."""
    ckpt_path = str(trained_toy / "checkpoints/best.pt")
    proc = subprocess.run(
        NMT + ["translate", "--checkpoint", ckpt_path],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=PROC_TIMEOUT,
    )
    assert proc.returncode == 0 and proc.stdout == ""
    reader = subprocess.Popen(
        NMT + ["translate", "--checkpoint", ckpt_path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    reader.stdout.close()  # like `nmt translate ... | head -0`
    try:
        _, err = reader.communicate(("ant bee\n" * 3000).encode(), timeout=PROC_TIMEOUT)
    finally:
        stop(reader)
    assert reader.returncode == 0, err.decode()
    assert b"Traceback" not in err


def test_unreachable_hub_is_one_line_and_exit_2(tmp_path):
    """No network (here: a hub endpoint that refuses connections) fails with one line.

    It fails fast because one connection is tried up front, before the hub client and its
    retries: the message names the refused endpoint, which only that probe reports.
    """
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))}
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"
    proc = subprocess.run(
        NMT
        + [
            "data",
            "prepare",
            "hub",
            "--pair",
            "de-en",
            "--set",
            "data.hub_name=wmt14",
            "--set",
            f"data.root={tmp_path}",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=PROC_TIMEOUT,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "cannot reach the Hugging Face hub" in proc.stderr
    assert "(127.0.0.1: " in proc.stderr  # the up-front probe's answer, not the hub client's
    assert "--mirror" not in proc.stderr and "HF_HUB_OFFLINE=1" in proc.stderr
