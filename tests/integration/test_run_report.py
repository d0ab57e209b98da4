"""``nmt report RUN...``: run folders in, report.md + learning curves out, the results table on stdout.

Most run folders here are written by hand through the same writers the trainer uses
(:func:`nmt.run.events.append`) and with report.json files in ``nmt eval``'s layout, so every
expected number is derived from the inputs; one test reads what a real tiny training run
and a real ``nmt eval`` wrote, to keep the hand-made layout honest.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import run_cli
from nmt.evaluation.run_report import FIGURES, REPORT_NAME
from nmt.run import events

BLEU_SIG = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
CHRF_SIG = "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0"


def write_run(
    run: Path,
    valid: list[tuple[int, float, float]],
    *,
    params: int = 2_345_678,
    attention: str = "bahdanau",
    speeds: tuple[tuple[float, int], ...] = ((1000.0, 500), (3000.0, 3000)),
    stop: bool = True,
) -> None:
    """A run folder: config.yaml, and metrics.jsonl with a start event, train events of
    (tok_s, tgt_tokens), one validation per (step, elapsed_s, bleu) and a stop event."""
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(
        f"data:\n  src: de\n  tgt: en\nmodel:\n  arch: rnn\n  attention:\n    type: {attention}\n", encoding="utf-8"
    )
    events.append(
        run,
        events.Start(
            step=0,
            epoch=0,
            elapsed_s=0.0,
            params=params,
            hardware={"device": "cpu", "device_name": "Test CPU", "threads": 2, "torch": "t"},
        ),
    )
    for i, (tok_s, tokens) in enumerate(speeds, start=1):
        events.append(
            run,
            events.Train(
                step=i, epoch=1, loss=3.0, lr=1e-3, tf=1.0, tok_s=tok_s, tgt_tokens=tokens, elapsed_s=float(i)
            ),
        )
    for step, elapsed_s, bleu in valid:
        events.append(
            run,
            events.Valid(
                step=step,
                epoch=1 + step // 100,
                elapsed_s=elapsed_s,
                lr=1e-3,
                best=None,
                loss=2.0,
                ppl=7.4,
                bleu=bleu,
                chrf=bleu + 20,
                bleu_signature=BLEU_SIG,
            ),
        )
    if stop:
        last_step, last_s, _ = valid[-1]
        events.append(
            run,
            events.Stop(
                reason="max_steps", step=last_step, epoch=1 + last_step // 100, elapsed_s=last_s + 6.0, best=None
            ),
        )


def write_eval(folder: Path, bleu: float, chrf: float, beam: int, split: str = "test2016") -> None:
    """A report.json in the layout ``nmt eval --checkpoint ... --out FOLDER`` writes."""
    folder.mkdir(parents=True)
    report = {
        "info": {"checkpoints": ["best.pt"], "step": 300, "split": split, "beam": beam},
        "systems": {
            f"beam{beam}": {
                "bleu": bleu,
                "chrf": chrf,
                "bleu_signature": BLEU_SIG,
                "chrf_signature": CHRF_SIG,
                "n": 1000,
            }
        },
    }
    (folder / "report.json").write_text(json.dumps(report), encoding="utf-8")


def table_rows(text: str) -> dict[str, list[str]]:
    """The results table's rows by run name (column 3), each a list of its cells."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 9 and cells[0] not in ("pair", "---"):
            rows[cells[2]] = cells
    return rows


@pytest.fixture()
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    """``a``: scored greedily and with beam 5; ``b``: a no-attention run scored greedily only."""
    a, b = tmp_path / "runs" / "a", tmp_path / "runs" / "b"
    write_run(a, [(100, 60.0, 10.0), (200, 150.0, 25.5), (300, 240.0, 25.5)])  # a tie: the first counts
    write_run(b, [(100, 90.0, 5.0), (200, 180.0, 12.25)], params=987_654, attention="none", speeds=((2000.0, 1000),))
    write_eval(a / "eval-greedy", 24.123, 50.0, beam=1)
    write_eval(a / "eval-beam5", 26.789, 52.345, beam=5)
    write_eval(b / "eval-greedy", 11.0, 40.0, beam=1)
    return a, b


def test_report_table_figures_and_signatures(two_runs, tmp_path, capsys):
    a, b = two_runs
    out = tmp_path / "out"
    code, stdout, err = run_cli(["report", str(a), str(b), "--out", str(out)], capsys)
    assert code == 0, err
    report = (out / REPORT_NAME).read_text(encoding="utf-8")
    assert stdout.strip() in report  # the printed table is the report's table

    rows = table_rows(stdout)
    assert list(rows) == ["a", "b"]
    assert rows["a"][:5] == ["de-en", "bahdanau", "a", "2.3M", f"{(240 + 6) / 60:.1f} min, 4 epochs"]
    assert rows["a"][5] == f"25.50 after {150 / 60:.1f} min"  # the first of two equal validations
    assert rows["a"][6:] == ["24.12", "26.79", f"{52.345:.2f}"]
    assert rows["b"][:4] == ["de-en", "none", "b", "1.0M"]
    assert rows["b"][5:] == [f"12.25 after {180 / 60:.1f} min", "11.00", "n/a", "n/a"]  # no beam 5 folder

    for name in FIGURES.values():
        data = (out / name).read_bytes()
        assert data.startswith(b"\x89PNG") and f"]({name})" in report
    assert f"test BLEU beam 5 (test2016): `{BLEU_SIG}` (a)" in report
    assert f"test BLEU greedy (test2016): `{BLEU_SIG}` (a, b)" in report
    assert f"test chrF greedy (test2016): `{CHRF_SIG}` (a, b)" in report
    assert f"validation BLEU (greedy): `{BLEU_SIG}` (a, b)" in report
    # throughput: the logged updates' tokens over their time, not the mean of their speeds
    assert f"| a | 2,345,678 | 300 | 4 | {246 / 60:.1f} | {3500 / (0.5 + 1.0):,.0f} |" in report
    assert f"| b | 987,654 | 200 | 3 | {186 / 60:.1f} | 2,000 |" in report


def test_report_defaults_to_a_folder_beside_the_runs(two_runs, capsys):
    a, _ = two_runs
    code, stdout, err = run_cli(["report", str(a)], capsys)
    assert code == 0, err
    assert (a.parent / "report" / REPORT_NAME).is_file() and list(table_rows(stdout)) == ["a"]


def test_report_on_a_run_still_training_without_validations(tmp_path, capsys):
    run = tmp_path / "fresh"
    write_run(run, [], stop=False)
    code, stdout, err = run_cli(["report", str(run), "--out", str(tmp_path / "out")], capsys)
    assert code == 0, err
    report = (tmp_path / "out" / REPORT_NAME).read_text(encoding="utf-8")
    assert "no stop event" in report and "no curves" in report
    assert table_rows(stdout)["fresh"][5:] == ["n/a"] * 4
    assert not any((tmp_path / "out" / name).exists() for name in FIGURES.values())


@pytest.mark.parametrize("bad", ["empty", "missing", "file"])
def test_report_refuses_a_folder_without_metrics_in_one_line(two_runs, tmp_path, capsys, bad):
    path = {"empty": tmp_path / "empty", "missing": tmp_path / "nope", "file": tmp_path / "x.txt"}[bad]
    if bad == "empty":
        path.mkdir()
    elif bad == "file":
        path.write_text("hello\n", encoding="utf-8")
    out = tmp_path / "out"
    code, stdout, err = run_cli(["report", str(two_runs[0]), str(path), "--out", str(out)], capsys)
    assert code == 2 and stdout == ""
    assert err.startswith("nmt: error: ") and err.strip().count("\n") == 0 and str(path) in err
    assert not out.exists()  # every run is read before anything is written


def test_report_names_the_file_and_line_of_bytes_that_are_not_utf8(two_runs, tmp_path, capsys):
    run = tmp_path / "damaged"
    shutil.copytree(two_runs[0], run)
    metrics = run / events.FILE_NAME
    lines = metrics.read_bytes().split(b"\n")
    lines[1] = lines[1][:10] + b"\xcd" + lines[1][10:]
    metrics.write_bytes(b"\n".join(lines))
    code, stdout, err = run_cli(["report", str(run), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and stdout == "" and err.strip().count("\n") == 0, err
    assert err.startswith(f"nmt: error: {metrics}:2: not UTF-8 (byte 0xcd at column 11)"), err


def test_report_help_has_an_example(capsys):
    code, stdout, _ = run_cli(["report", "--help"], capsys)
    assert code == 0 and "Example" in stdout and "--out" in stdout


def test_report_reads_what_train_and_eval_wrote(trained_toy, tmp_path, capsys):
    """A tiny real run scored by ``nmt eval --beam 1 --out RUN/eval-greedy``: the row holds the
    trainer's parameter count, epochs and the report's BLEU; without the start event the count
    comes from best.pt and is the same."""
    run = tmp_path / "toy"
    shutil.copytree(trained_toy, run)
    code, _, err = run_cli(
        [
            "eval",
            "--checkpoint",
            str(run / "checkpoints/best.pt"),
            "--split",
            "test",
            "--beam",
            "1",
            "--out",
            str(run / "eval-greedy"),
        ],
        capsys,
    )
    assert code == 0, err
    (system,) = json.loads((run / "eval-greedy" / "report.json").read_text())["systems"].values()
    log = events.read(run)
    start, stop = events.of_kind(log, events.Start)[0], events.of_kind(log, events.Stop)[-1]

    code, stdout, err = run_cli(["report", str(run), "--out", str(tmp_path / "out")], capsys)
    assert code == 0, err
    row = table_rows(stdout)["toy"]
    assert row[3] == f"{start.params / 1e6:.1f}M" and row[4].endswith(f", {stop.epoch} epochs")
    assert row[6:] == [f"{system['bleu']:.2f}", "n/a", "n/a"]
    assert all((tmp_path / "out" / name).stat().st_size > 0 for name in FIGURES.values())
    assert f"| toy | {start.params:,} | {stop.step} | {stop.epoch} |" in (tmp_path / "out" / REPORT_NAME).read_text()

    lines = (run / events.FILE_NAME).read_text().splitlines(keepends=True)
    (run / events.FILE_NAME).write_text("".join(x for x in lines if '"event": "start"' not in x))
    code, _, err = run_cli(["report", str(run), "--out", str(tmp_path / "out2")], capsys)
    assert code == 0, err
    assert f"| toy | {start.params:,} |" in (tmp_path / "out2" / REPORT_NAME).read_text()


@pytest.mark.parametrize("inside", [False, True])
def test_report_refuses_an_out_that_is_a_file(two_runs, tmp_path, capsys, monkeypatch, inside):
    """--out FILE (or a folder under a file): one line, exit 2, before any run is read; the file is kept."""
    taken = tmp_path / "table.md"
    taken.write_text("mine\n", encoding="utf-8")
    out = taken / "sub" if inside else taken

    def no_reading(run):
        raise AssertionError("a run was read before --out was checked")

    monkeypatch.setattr("nmt.evaluation.run_report.summarize", no_reading)
    code, stdout, err = run_cli(["report", str(two_runs[0]), "--out", str(out)], capsys)
    assert code == 2 and stdout == "" and err.startswith("nmt: error: ") and err.strip().count("\n") == 0, err
    assert f"--out {out}" in err and "is not a folder" in err
    assert taken.read_text(encoding="utf-8") == "mine\n"


def write_scored(run: Path, split: str, beam: int, bleu: float, chrf: float) -> None:
    """``nmt compare``'s saved score of one run, in its layout (compare-<split>/scored.json)."""
    folder = run / f"compare-{split}"
    folder.mkdir(parents=True)
    result = {"bleu": bleu, "chrf": chrf, "beam": beam, "bleu_signature": BLEU_SIG, "hyps": [], "refs": []}
    (folder / "scored.json").write_text(json.dumps({"key": {}, "result": result}), encoding="utf-8")


def test_a_comparison_folder_reports_every_run_below_it_with_the_scores_compare_saved(tmp_path, capsys):
    cmp = tmp_path / "runs" / "cmp"
    for name, bleu in (("bahdanau_s1", 30.5), ("none_s1", 20.25)):
        write_run(cmp / name, [(100, 60.0, bleu - 1)])
        write_scored(cmp / name, "valid", 5, bleu - 2, 50.0)  # another split: the test one goes first
        write_scored(cmp / name, "test2016", 5, bleu, 55.0)
    write_run(cmp / "bahdanau_s1" / "nested", [(100, 60.0, 1.0)])  # a run's own subfolder is not searched
    (cmp / "logs").mkdir()  # nor is a folder without runs
    out = tmp_path / "out"
    code, stdout, err = run_cli(["report", str(tmp_path / "runs"), "--out", str(out)], capsys)
    assert code == 0, err
    rows = table_rows(stdout)
    assert list(rows) == ["bahdanau_s1", "none_s1"]
    assert rows["bahdanau_s1"][6:] == ["n/a", "30.50", "55.00"] and rows["none_s1"][7] == "20.25"
    record = json.loads((out / "record.json").read_text(encoding="utf-8"))  # the reproducibility record
    assert [Path(r).name for r in record["runs"]] == ["bahdanau_s1", "none_s1"]
    assert record["signatures"] == [BLEU_SIG] and record["software"]["sacrebleu"]
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _stdout, err = run_cli(["report", str(empty), "--out", str(tmp_path / "out2")], capsys)
    assert code == 2 and "no run folder (one holding metrics.jsonl) in it or below it" in err


def test_report_replaces_only_its_own_files_in_out(two_runs, tmp_path, capsys):
    """A user's report.md (or figure) in --out is refused, naming it; nmt report's own, from a run
    of before manifests too, is replaced."""
    out = tmp_path / "docs"
    out.mkdir()
    taken = out / REPORT_NAME
    taken.write_text("# My report\n", encoding="utf-8")
    code, stdout, err = run_cli(["report", str(two_runs[0]), "--out", str(out)], capsys)
    assert code == 2 and stdout == "" and f"{taken} was not written by nmt" in err and err.count("\n") == 1, err
    assert taken.read_text(encoding="utf-8") == "# My report\n"

    taken.unlink()
    for _ in range(2):  # its own report, written again
        code, _, err = run_cli(["report", str(two_runs[0]), "--out", str(out)], capsys)
        assert code == 0, err
    (out / ".nmt-outputs").unlink()  # as a report written before manifests: known by its headings
    code, _, err = run_cli(["report", str(two_runs[0]), "--out", str(out)], capsys)
    assert code == 0, err
