"""nmt compare-groups: two nmt compare folders on the toy task, tabulated per group and across them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import run_cli, toy_overrides


def compare_group(root: Path, group: str, files: dict[str, list[str]], capsys, *sets: str) -> None:
    """``nmt compare --runs-dir root/groups/<group>`` of bahdanau and none over seeds 1 and 2, 20 updates each."""
    base = [s for s in toy_overrides(root, files) if not s.startswith(("name=", "runs_dir="))]
    args = ["compare", "--runs-dir", str(root / "groups" / group), "--no-progress"]
    args += [arg for s in [*base, *sets] for arg in ("--set", s)]
    args += ["--variants", "bahdanau,none", "--seeds", "1,2", "--steps", "20", "--beam", "1"]
    code, _out, err = run_cli(args, capsys)
    assert code == 0, err


def test_two_groups_give_pooled_effects_and_kendalls_w(tmp_path, toy_files, capsys):
    _, files = toy_files
    compare_group(tmp_path, "de-en", files, capsys)
    compare_group(tmp_path, "fr-en", files, capsys, "train.lr=0.01")  # another group: another learning rate
    folder = tmp_path / "groups"
    code, out, err = run_cli(["compare-groups", str(folder)], capsys)
    assert code == 0, err
    records = [json.loads(line) for line in (folder / "groups" / "groups.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 2 * 2 and {r["pair"] for r in records} == {"de-en", "fr-en"}
    assert (folder / "groups" / "groups.md").read_text(encoding="utf-8") == out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "pooled ΔBLEU (95% CI over 2 pairs)" in line)
    assert lines[header + 2].startswith("| none | ")  # the pooled effect of the one arm tested
    w = re.search(r"Kendall's W, all variants: (\S+) ", out)
    assert w is not None and 0.0 <= float(w.group(1)) <= 1.0
    # each group's combined test is its report's, carried by the records over the seeds both arms hold
    for pair in ("de-en", "fr-en"):
        report_rows = json.loads((folder / pair / "report" / "report.json").read_text())["variants"]
        want = next(row["p_ar_seeds"] for row in report_rows if row["variant"] == "none")
        got = {(r["p_ar"], tuple(r["ar_seeds"])) for r in records if r["pair"] == pair and r["variant"] == "none"}
        assert got == {(want, (1, 2))} and 0.0 < want <= 1.0
    assert "| variant | de-en p AR (Holm) | fr-en p AR (Holm) |" in out and "de-en 1, 2; fr-en 1, 2" in out
    # groups whose baselines differ are refused in one line, and nothing is written
    report = folder / "fr-en" / "report" / "report.json"
    payload = json.loads(report.read_text())
    payload["plan"]["baseline"] = "none"
    report.write_text(json.dumps(payload))
    code, _out, err = run_cli(["compare-groups", str(folder), "--out", str(tmp_path / "other")], capsys)
    assert code == 2 and "same arms and baseline" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "other").exists()


def test_a_folder_without_groups_fails_in_one_line(tmp_path, capsys):
    code, _out, err = run_cli(["compare-groups", str(tmp_path)], capsys)
    assert code == 2 and "no <group>/report/report.json" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "groups").exists()
