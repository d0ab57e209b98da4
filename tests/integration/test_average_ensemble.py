"""`nmt average` and ensembles from the command line, on short runs of the toy task."""

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from conftest import run_cli, toy_overrides
from nmt.run import checkpoint as ckpt
from nmt.run import events
from nmt.training.average import average_state
from nmt.training.entry import run_training

STEPS, EVERY = 24, 4


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, toy_files) -> Path:
    """A short run validated every 4 updates that keeps the 2 best and the 3 latest step files,
    ranked by validation loss (distinct values, unlike the BLEU of so short a run)."""
    _, files = toy_files
    root = tmp_path_factory.mktemp("avg")
    run_training(
        None,
        toy_overrides(
            root,
            files,
            train__max_steps=STEPS,
            train__valid_every=EVERY,
            train__keep_best=2,
            train__keep_last=3,
            train__max_epochs=50,
            train__metric="loss",
        ),
        progress=False,
    )
    return root / "runs" / "toy"


@pytest.fixture(scope="module")
def other_vocab(tmp_path_factory, toy_files) -> Path:
    """A checkpoint of the same model size trained on another SentencePiece vocabulary."""
    _, files = toy_files
    root = tmp_path_factory.mktemp("other")
    run_training(None, toy_overrides(root, files, train__max_steps=2, data__vocab_size=80), progress=False)
    return root / "runs" / "toy" / "checkpoints" / "last.pt"


def valid_scores(run: Path) -> dict[int, float]:
    """Validation loss by step, from metrics.jsonl (the run's train.metric)."""
    return {v.step: v.loss for v in events.of_kind(events.read(run), events.Valid)}


def best_steps(run: Path, n: int) -> list[int]:
    scores = valid_scores(run)
    assert len(set(scores.values())) == len(scores)  # distinct, so the ranking is by score, not by step
    return sorted(scores, key=lambda s: (scores[s], s))[:n]


def test_training_keeps_the_union_of_best_and_latest_step_files(run_dir):
    scores = valid_scores(run_dir)
    latest = sorted(scores)[-3:]
    best = best_steps(run_dir, 2)
    assert best != latest[-2:]  # the two lists differ, so the union is tested
    assert sorted(run_dir.glob("checkpoints/step*.pt")) == [
        ckpt.step_path(run_dir, s) for s in sorted({*latest, *best})
    ]
    last = ckpt.load(run_dir / "checkpoints" / "last.pt").state
    assert last.recent == latest and [s for _, s in last.history] == best


def test_average_of_the_last_three_is_their_mean_and_translates(run_dir, tmp_path, capsys):
    out = tmp_path / "avg.pt"
    code, stdout, err = run_cli(["average", str(run_dir), "--last", "3", "-o", str(out)], capsys)
    assert code == 0, err
    assert "the mean of 3 checkpoints" in stdout
    files = [ckpt.step_path(run_dir, s) for s in sorted(valid_scores(run_dir))[-3:]]
    members = [ckpt.load(f).model for f in files]
    avg = ckpt.load(out)
    assert avg.averaged_from == [str(f) for f in files] and not avg.trainable
    floats = [key for key, value in avg.model.items() if value.is_floating_point()]
    for key in floats:
        torch.testing.assert_close(avg.model[key], sum(m[key] for m in members) / 3)
    assert any(not torch.equal(avg.model[key], members[-1][key]) for key in floats)  # not just the newest
    src = tmp_path / "in.txt"
    src.write_text("owl cat\nbird\n")
    code, stdout, err = run_cli(["translate", "--checkpoint", str(out), "-i", str(src), "--beam", "2"], capsys)
    assert code == 0, err
    assert len(stdout.splitlines()) == 2


def test_average_best_picks_by_the_runs_metric(run_dir, tmp_path, capsys):
    out = tmp_path / "best2.pt"
    code, _, err = run_cli(["average", str(run_dir), "--best", "2", "-o", str(out)], capsys)
    assert code == 0, err
    assert ckpt.load(out).averaged_from == [str(ckpt.step_path(run_dir, s)) for s in best_steps(run_dir, 2)]


def test_average_state_keeps_dtypes_and_refuses_counters_that_differ():
    a = {"w": torch.tensor([1.0, 2.0], dtype=torch.float16), "n": torch.tensor(3)}
    b = {"w": torch.tensor([3.0, 4.0], dtype=torch.float16), "n": torch.tensor(3)}
    mean = average_state([a, b])
    assert mean["w"].dtype == torch.float16 and mean["w"].tolist() == [2.0, 3.0] and mean["n"].item() == 3
    from nmt.util.errors import UserError

    with pytest.raises(UserError, match="non-floating values differ"):
        average_state([a, {**b, "n": torch.tensor(4)}])


@pytest.mark.parametrize(
    "args, message",
    [
        (["{last}"], "averaging needs 2 or more checkpoints, got 1"),
        (["{last}", "{last}"], "a checkpoint is given twice"),
        (
            ["{run}", "--last", "9"],
            "kept 3 step checkpoint(s) for --last, 9 wanted; train with --set train.keep_last=9",
        ),
        (
            ["{run}", "--best", "3"],
            "kept 2 step checkpoint(s) for --best, 3 wanted; train with --set train.keep_best=3",
        ),
        (["{last}", "{best}", "--last", "2"], "--last and --best pick from run folders"),
        (["{run}", "--last", "2", "--best", "2"], "give --last or --best, not both"),
        (["{run}", "--last", "0"], "1 or more"),
        (["{missing}", "{last}"], "no such checkpoint file or run folder"),
        (["{last}", "{other}"], "its vocabulary differs"),
    ],
)
def test_average_bad_input_is_one_line_exit_2(run_dir, other_vocab, tmp_path, capsys, args, message):
    paths = {
        "last": run_dir / "checkpoints" / "last.pt",
        "best": run_dir / "checkpoints" / "best.pt",
        "run": run_dir,
        "other": other_vocab,
        "missing": tmp_path / "nope.pt",
    }
    argv = ["average", *[a.format(**paths) for a in args], "-o", str(tmp_path / "x.pt")]
    code, _, err = run_cli(argv, capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x.pt").exists()


def test_ensemble_eval_and_translate(run_dir, tmp_path, capsys):
    a, b = (ckpt.step_path(run_dir, s) for s in sorted(valid_scores(run_dir))[-2:])
    code, stdout, err = run_cli(
        ["eval", "--checkpoint", str(a), "--checkpoint", str(b), "--split", "test", "--beam", "2"], capsys
    )
    assert code == 0, err
    report = json.loads((run_dir / "eval-ensemble" / "report.json").read_text())  # not a member's eval/
    assert report["info"]["checkpoints"] == [str(a), str(b)] and not (run_dir / "eval").exists()
    src = tmp_path / "in.txt"
    src.write_text("owl cat\n\nbird\n")
    code, stdout, err = run_cli(
        [
            "translate",
            "--checkpoint",
            str(a),
            "--checkpoint",
            str(b),
            "-i",
            str(src),
            "--attention",
            str(tmp_path / "att"),
        ],
        capsys,
    )
    assert code == 0, err
    assert len(stdout.splitlines()) == 3 and stdout.splitlines()[1] == ""
    assert sorted(p.name for p in (tmp_path / "att").glob("*.png")) == [
        "000000.png",
        "000002.png",
    ]  # not the empty line


@pytest.mark.parametrize("command", ["translate", "eval"])
def test_an_ensemble_with_another_vocabulary_is_refused(run_dir, other_vocab, tmp_path, capsys, command):
    src = tmp_path / "in.txt"
    src.write_text("owl\n")
    argv = [command, "--checkpoint", str(run_dir / "checkpoints" / "best.pt"), "--checkpoint", str(other_vocab)]
    argv += ["-i", str(src)] if command == "translate" else ["--out", str(tmp_path / "eval")]
    code, stdout, err = run_cli(argv, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{other_vocab}: its source vocabulary differs" in err and stdout == ""


def _two_steps(run_dir: Path) -> list[Path]:
    return [ckpt.step_path(run_dir, s) for s in sorted(valid_scores(run_dir))[-2:]]


@pytest.mark.parametrize(
    "target, force, message",
    [
        ("input", False, "one of the checkpoints being averaged"),
        ("input", True, "one of the checkpoints being averaged"),
        ("symlink", True, "one of the checkpoints being averaged"),
        ("hardlink", True, "one of the checkpoints being averaged"),
        ("best", False, "a name the trainer writes"),
        ("new_step", False, "a name the trainer writes"),
        ("existing", False, "exists; give another file name, or --force"),
    ],
)
def test_average_never_overwrites_an_input_nor_without_force(run_dir, tmp_path, capsys, target, force, message):
    """-o an input (any path to it): refused even with --force; -o best.pt, a step file's name or an
    existing file: refused without it. One line, exit 2, every file as it was."""
    a, b = _two_steps(run_dir)
    existing = tmp_path / "mine.pt"
    existing.write_bytes(b"not yours")
    if target == "symlink":
        (tmp_path / "link.pt").symlink_to(b)
    elif target == "hardlink":
        os.link(b, tmp_path / "link.pt")
    output = {
        "input": b,
        "symlink": tmp_path / "link.pt",
        "hardlink": tmp_path / "link.pt",
        "best": run_dir / "checkpoints" / "best.pt",
        "new_step": ckpt.step_path(run_dir, 9_999_999),
        "existing": existing,
    }[target]
    watched = [a, b, existing, run_dir / "checkpoints" / "best.pt", run_dir / "checkpoints" / "last.pt"]
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in watched}
    listing = sorted(run_dir.rglob("*")), sorted(tmp_path.rglob("*"))
    code, stdout, err = run_cli(["average", str(a), str(b), "-o", str(output), *(["--force"] * force)], capsys)
    assert code == 2 and stdout == "" and message in err and len(err.strip().splitlines()) == 1, err
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in watched} == before
    assert (sorted(run_dir.rglob("*")), sorted(tmp_path.rglob("*"))) == listing  # nothing written


def test_average_force_replaces_an_existing_file_or_takes_a_trainer_name(run_dir, tmp_path, capsys):
    a, b = _two_steps(run_dir)
    existing = tmp_path / "mine.pt"
    existing.write_bytes(b"old average")
    trainer_name = tmp_path / "checkpoints" / "best.pt"  # a checkpoints folder of a run being set up by hand
    trainer_name.parent.mkdir()
    for output in (existing, trainer_name):
        code, _stdout, err = run_cli(["average", str(a), str(b), "-o", str(output), "--force"], capsys)
        assert code == 0, err
        assert ckpt.load(output).averaged_from == [str(a), str(b)]


def test_average_last_on_a_run_that_keeps_enough_says_to_train_longer(run_dir, tmp_path, capsys):
    """A run with train.keep_last=5 that has validated twice is not told to set keep_last=5."""
    young = tmp_path / "young"
    (young / "checkpoints").mkdir(parents=True)
    last = ckpt.load(run_dir / "checkpoints" / "last.pt")
    last.state.recent = last.state.recent[-2:]
    last.config["train"]["keep_last"] = 5
    ckpt.save(young / "checkpoints" / "last.pt", last)
    for step in last.state.recent:
        shutil.copy(ckpt.step_path(run_dir, step), ckpt.step_path(young, step))
    code, _, err = run_cli(["average", str(young), "--last", "5", "-o", str(tmp_path / "avg.pt")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "only 2 step checkpoint(s) for --last so far, 5 wanted" in err and "train it longer" in err
    assert "--set train.keep_last" not in err
    assert not (tmp_path / "avg.pt").exists()
