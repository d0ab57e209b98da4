"""docs_build/seeds_table.py, run as a user runs it: seeds, checkpoint averages and ensembles of a
setting, read from the reports `nmt eval` wrote."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "docs_build" / "seeds_table.py"


def run_seeds_table(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def json_lines(stdout: str) -> list[dict]:
    """Every stdout line must be one JSON object."""
    return [json.loads(line) for line in stdout.splitlines()]


def test_seeds_table_aggregates_seeds_and_ensembles(trained_toy, tmp_path):
    """Two 'seeds' (the toy checkpoint and its average with itself, so equal scores) and an
    ensemble, scored by `nmt eval`: means, spreads and member counts come from their reports."""
    best = trained_toy / "checkpoints" / "best.pt"

    def evaluate(out: Path, *checkpoints: Path) -> float:
        args = [a for c in checkpoints for a in ("--checkpoint", str(c))]
        proc = subprocess.run(
            [sys.executable, "-m", "nmt", "eval", *args, "--split", "test", "--beam", "1", "--out", str(out)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        (system,) = json.loads((out / "report.json").read_text())["systems"].values()
        return system["bleu"]

    single = evaluate(tmp_path / "toy_s1" / "eval-best-test", best)
    assert evaluate(tmp_path / "toy_s2" / "eval-best-test", best) == single
    ens = evaluate(tmp_path / "toy_ens" / "eval-best-test", best, trained_toy / "checkpoints" / "last.pt")
    proc = run_seeds_table(str(tmp_path / "toy"), "--splits", "test")
    assert proc.returncode == 0, proc.stderr
    rows = {r["candidate"]: r for r in json_lines(proc.stdout)}
    assert set(rows) == {"best", "ens-best"}  # nothing else was scored
    assert rows["best"]["bleu"] == {"mean": round(single, 2), "sd": 0.0, "values": [round(single, 2)] * 2}
    assert rows["ens-best"]["members"] == 2 and rows["ens-best"]["bleu"]["values"] == [round(ens, 2)]
    proc = run_seeds_table(str(tmp_path / "toy"), "--splits", "test", "--markdown")
    assert f"| toy | best | {single:.2f} ± 0.00 |" in proc.stdout


def test_seeds_table_without_runs_fails_in_one_line(tmp_path):
    proc = run_seeds_table(str(tmp_path / "nothing"))
    assert proc.returncode != 0 and proc.stdout == "" and "no runs" in proc.stderr
