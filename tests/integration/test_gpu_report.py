"""scripts/gpu_report.py --tiny: every measurement of the GPU report, run on CPU with tiny settings.

The GPU run happens rarely and on borrowed time; this test keeps its code paths working between
runs.  The compile measurements are skipped on CPU (compiling takes minutes there), which the
report must say in a line of its own.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
sys.path.insert(0, str(SCRIPTS))

import _gpu_report_budget as budget  # noqa: E402  (after the path insert)
from _gpu_report_table import Report, markdown  # noqa: E402

CONTEXT_KEYS = {"device", "device_name", "torch", "cuda"}
EAGER = {"bahdanau", "luong_general", "transformer"}
TINY_STEPS, TINY_UPDATES, TINY_VALID_EVERY, TINY_BATCH1, TINY_MIN_SECONDS = 4, 30, 10, 4, 0.2


def run_report(out: Path, *options: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``gpu_report.py --tiny --out-dir OUT OPTIONS`` from the repository root."""
    command = [sys.executable, str(SCRIPTS / "gpu_report.py"), "--tiny", "--out-dir", str(out), *options]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def tiny_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("gpu_report")
    proc = run_report(out, "--threads", "1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, out


def by_event(records: list[dict], event: str) -> list[dict]:
    return [r for r in records if r["event"] == event]


def test_stdout_is_json_lines_and_the_same_as_report_jsonl(tiny_report):
    proc, out = tiny_report
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    saved = [json.loads(line) for line in (out / "report.jsonl").read_text(encoding="utf-8").splitlines()]
    assert records == saved
    assert records[0]["event"] == "hardware" and records[-1]["event"] == "done"
    assert by_event(records, "error") == [], by_event(records, "error")
    assert records[-1]["errors"] == 0 and records[-1]["skipped"] == 2
    assert 0 < records[-1]["wall_s"] <= records[-1]["budget_s"]


def test_hardware_line_and_context_on_every_measurement(tiny_report):
    proc, _ = tiny_report
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    hardware = records[0]
    assert hardware["device"] == "cpu" and hardware["device_name"] and hardware["cpus"] >= 1
    assert hardware["torch"].split("+")[0].count(".") == 2 and "cuda" in hardware  # None on a CPU build
    assert "gpu_report.py --tiny" in hardware["command"] and hardware["date"].endswith("+00:00")
    for record in records[1:-1]:
        assert record.keys() >= CONTEXT_KEYS and record["torch"] == hardware["torch"], record


def test_throughput_lines(tiny_report):
    proc, _ = tiny_report
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    lines = {r["model"]: r for r in by_event(records, "throughput")}
    assert set(lines) == EAGER
    for record in lines.values():
        assert record["compile"] == "off" and record["updates"] == TINY_STEPS and record["amp"] == "off"
        assert record["target_tokens_per_s"] > 0 and record["ms_per_update"] > 0 and record["untimed_pass_s"] > 0
        assert record["tokens"] > 0 and record["params"] > 0 and record["peak_rss_mb"] > 0
        assert record["peak_gpu_mb"] is None  # a CPU run
        seconds = TINY_STEPS * record["ms_per_update"] / 1000
        assert record["target_tokens_per_s"] == pytest.approx(record["tokens"] / seconds, rel=0.01)
    assert lines["bahdanau"]["fast_path"] is False and lines["luong_general"]["fast_path"] is True
    assert lines["transformer"]["arch"] == "transformer" and lines["bahdanau"]["arch"] == "rnn"
    assert lines["luong_general"]["tokens"] == lines["bahdanau"]["tokens"]  # the same batches
    skipped = [r for r in by_event(records, "skipped") if r["phase"] == "throughput"]
    assert [r["measurement"] for r in skipped] == ["bahdanau, compile default", "bahdanau, compile reduce-overhead"]


def test_training_and_test_bleu_lines(tiny_report):
    proc, out = tiny_report
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    (level,) = by_event(records, "time_to_bleu")
    assert level["level"] == 30.0 and isinstance(level["reached"], bool)
    (run,) = by_event(records, "training")
    assert run["steps"] == run["max_updates"] == TINY_UPDATES and run["stop_reason"] == "max_steps"
    assert run["validations"] == TINY_UPDATES // TINY_VALID_EVERY and run["valid_every"] == TINY_VALID_EVERY
    assert 0 < run["elapsed_s"] <= run["time_budget_s"] and run["best_step"] in (10, 20, 30)
    assert Path(run["best_checkpoint"]).is_file() and Path(run["best_checkpoint"]).is_relative_to(out)
    tests = {r["beam"]: r for r in by_event(records, "test_bleu")}
    assert set(tests) == {1, 5}
    for record in tests.values():
        assert 0 <= record["bleu"] <= 100 and 0 <= record["chrf"] <= 100 and record["seconds"] > 0
        assert record["split"] == "test" and record["sentences"] == 24 and record["step"] == run["best_step"]


def test_decode_lines(tiny_report):
    proc, _ = tiny_report
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    lines = by_event(records, "decode")
    assert [(r["beam"], r["batch_size"]) for r in lines] == [(1, 256), (5, 256), (1, 64), (5, 64), (1, 1), (5, 1)]
    for record in lines:
        assert record["sentences"] == (TINY_BATCH1 if record["batch_size"] == 1 else 24)
        assert record["sentences_per_s"] > 0 and record["output_tokens_per_s"] > 0
        assert record["passes"] >= 1 and record["seconds"] >= TINY_MIN_SECONDS  # whole passes until timed enough
        total = record["passes"] * record["sentences"]
        assert record["sentences_per_s"] == pytest.approx(total / record["seconds"], rel=0.02)


def test_report_md_holds_the_tables(tiny_report):
    _, out = tiny_report
    page = (out / "report.md").read_text(encoding="utf-8")
    assert "Machine: " in page and "has not finished" not in page
    for row in ("| bahdanau | step | off |", "| luong_general | fast | off |", "| transformer | parallel | off |"):
        assert row in page
    assert "| bahdanau, compile default | skipped |" in page
    assert f"| {TINY_UPDATES} of {TINY_UPDATES} |" in page
    for beam, batch in ((1, 256), (5, 256), (1, 64), (5, 64), (1, 1), (5, 1)):
        assert f"\n| {beam} | {batch} | " in page
    assert "--cpu-compile runs it" in page  # the skips are listed with their reason


def test_a_failing_or_overrunning_measurement_becomes_an_error_line(tmp_path, capsys):
    report = Report(tmp_path)

    def broken() -> dict:
        raise RuntimeError("compile failed\nsecond line")

    def slow() -> dict:
        time.sleep(5)
        return {"event": "decode"}

    assert budget.attempt(report, "throughput", "broken", 60, broken) is None
    assert budget.attempt(report, "decode", "slow", 0.1 + budget.MIN_SECONDS, slow) is None
    assert budget.attempt(report, "decode", "late", budget.MIN_SECONDS / 2, slow) is None
    data = {"event": "data", "corpus": "multi30k", "pair": "de-en", "pairs": {"train": 3}}
    assert budget.attempt(report, "data", "fine", 60, lambda: [data]) == [data]
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["event"], r.get("error")) for r in lines] == [
        ("error", "RuntimeError"),
        ("error", "OutOfTime"),
        ("skipped", None),
        ("data", None),
    ]
    assert lines[0]["message"] == "compile failed"
    page = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert page == markdown(lines) and "| broken | error: RuntimeError |" in page and "train 3" in page
    assert "has not finished" in page  # no done line yet: a killed run still leaves its tables


def test_an_earlier_reports_checkpoint_is_not_decoded(tmp_path):
    """Test BLEU and decoding speed come from the model this report trained, never from an older best.pt."""
    import argparse

    import gpu_report

    from _gpu_report_measure import TRAIN_RUN_NAME

    best = tmp_path / "runs" / TRAIN_RUN_NAME / "checkpoints" / "best.pt"
    best.parent.mkdir(parents=True)
    best.write_bytes(b"an earlier report's model")
    args = argparse.Namespace(out_dir=tmp_path, started=time.time() + 60)  # this report started after it
    assert gpu_report.best_checkpoint(args) is None
    args.started = time.time() - 60  # written during this report
    assert gpu_report.best_checkpoint(args) == best


def test_a_negative_min_seconds_fails_in_one_line(tmp_path):
    proc = run_report(tmp_path, "--min-seconds", "-1", timeout=60)
    assert proc.returncode == 2 and proc.stdout == "" and not any(tmp_path.iterdir())
    assert proc.stderr.strip().count("\n") == 0 and "--min-seconds must be 0 or more" in proc.stderr
