"""A run folder written before the package move still works: translate, resume, average, eval.

The fixture (tests/fixtures/run_premove, see its README) was trained by commit c031205, and
``expected.json`` holds what that code printed for the same commands.  Today's code must read
the same checkpoints and config, and give the same tokens and the same resumed training curve.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO
from conftest import run_cli as run

FIXTURE = REPO / "tests" / "fixtures" / "run_premove"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
BEST = "runs/premove/checkpoints/best.pt"
LAST = "runs/premove/checkpoints/last.pt"


@pytest.fixture()
def premove(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the fixture as the working directory (its config's paths are relative to it)."""
    folder = tmp_path / "premove"
    shutil.copytree(FIXTURE, folder)
    monkeypatch.chdir(folder)
    (folder / "sents.txt").write_text("".join(s + "\n" for s in EXPECTED["sentences"]), encoding="utf-8")
    return folder


def translate(capsys: pytest.CaptureFixture, checkpoint: str, *options: str) -> list[str]:
    """``nmt translate`` of the recorded sentences; its output lines."""
    code, _, err = run(["translate", "--checkpoint", checkpoint, "-i", "sents.txt", "-o", "out.txt", *options], capsys)
    assert code == 0, err
    return Path("out.txt").read_text(encoding="utf-8").split("\n")[:-1]


def events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("beam", [1, 3])
def test_old_best_checkpoint_translates_as_the_old_code_did(premove: Path, capsys, beam: int) -> None:
    assert translate(capsys, BEST, "--beam", str(beam)) == EXPECTED[f"beam{beam}"]


def test_old_best_checkpoint_gives_the_old_nbest_lists_and_scores(premove: Path, capsys) -> None:
    rows = [row.split("\t") for row in translate(capsys, BEST, "--beam", "3", "--n-best", "2")]
    expected = EXPECTED["beam3_nbest2"]
    assert [(int(i), text) for i, _, text in rows] == [(i, text) for i, _, text in expected]
    assert [float(score) for _, score, _ in rows] == pytest.approx([s for _, s, _ in expected], abs=2e-4)


def test_old_run_resumes_on_the_old_curve_and_rotates_its_step_files(premove: Path, capsys) -> None:
    """Four more updates with a validation every two: the losses the old code logged when it
    resumed the same run, and the old step file 40 removed by train.keep_last=2."""
    run_dir = premove / "runs" / "premove"
    before = len(events(run_dir))
    code, _, err = run(
        [
            "train",
            "--resume",
            "runs/premove",
            "--no-progress",
            "--set",
            "train.max_steps=44",
            "--set",
            "train.valid_every=2",
            "--set",
            "train.device=cpu",
        ],
        capsys,
    )  # the old curve's device
    assert code == 0, err
    new = events(run_dir)[before:]
    want = EXPECTED["resume_to_44_valid_every_2"]
    assert (new[0]["event"], new[0]["step"]) == ("start", 40)
    losses = {str(e["step"]): e["loss"] for e in new if e["event"] == "train"}
    assert losses.keys() == want["train_loss"].keys()
    assert list(losses.values()) == pytest.approx(list(want["train_loss"].values()), rel=1e-4)
    bleu = {str(e["step"]): e["bleu"] for e in new if e["event"] == "valid"}
    assert bleu == pytest.approx(want["valid_bleu"], abs=1e-6)
    assert (new[-1]["event"], new[-1]["reason"], new[-1]["step"]) == ("stop", "max_steps", 44)
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == want["checkpoints"]
    assert len(translate(capsys, LAST, "--beam", "1")) == len(EXPECTED["sentences"])  # the new last.pt loads


def test_old_checkpoints_average_and_evaluate_as_before(premove: Path, capsys) -> None:
    code, _, err = run(["average", BEST, LAST, "-o", "avg.pt"], capsys)
    assert code == 0, err
    assert translate(capsys, "avg.pt", "--beam", "1") == EXPECTED["average_of_best_and_last_beam1"]
    code, _, err = run(
        ["data", "prepare", "local", "--pair", "xx-yy", "--config", "runs/premove/config.yaml", "--no-progress"], capsys
    )
    assert code == 0, err
    code, _, err = run(["eval", "--checkpoint", BEST, "--split", "test", "--beam", "1", "--out", "evalout"], capsys)
    assert code == 0, err
    want = EXPECTED["eval_test_beam1"]
    assert Path("evalout/test.hyp.yy").read_text(encoding="utf-8").split("\n")[:-1] == want["hypotheses"]
    report = json.loads(Path("evalout/report.json").read_text())["systems"]["beam1"]
    assert report["bleu"] == pytest.approx(want["bleu"]) and report["chrf"] == pytest.approx(want["chrf"])
