"""The benchmark scripts, run as a user runs them, with tiny settings on the toy task."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
sys.path.insert(0, str(SCRIPTS))

from example_runs import as_yaml  # noqa: E402

import bench_train  # noqa: E402  (after the path insert)
from conftest import toy_overrides, transformer_overrides  # noqa: E402
from nmt.util.errors import UserError  # noqa: E402

COMMON_KEYS = {"bench", "threads", "keep_memory", "torch", "device"}
TRAIN_KEYS = COMMON_KEYS | {
    "variant",
    "attention",
    "style",
    "fast_path",
    "cell",
    "params",
    "target_tokens_per_s",
    "ms_per_update",
    "updates",
    "tokens",
    "peak_rss_mb",
}
DECODE_KEYS = COMMON_KEYS | {"beam", "batch_size", "sentences", "sentences_per_s", "seconds"}


def run_script(name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPTS / name), *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def json_lines(stdout: str) -> list[dict]:
    """Every stdout line must be one JSON object."""
    return [json.loads(line) for line in stdout.splitlines()]


def test_variant_names_map_to_overrides():
    dot = bench_train.parse_variant("luong_dot")
    assert "model.bidirectional=false" in dot.overrides and dot.fast is None
    feed_lstm = bench_train.parse_variant("luong_general+feed+lstm")
    assert {"model.attention.input_feeding=true", "model.cell=lstm"} <= set(feed_lstm.overrides)
    assert bench_train.parse_variant("luong_general-fast").fast is False
    for name in bench_train.DEFAULT_VARIANTS:
        assert bench_train.parse_variant(name).name == name
    for bad in ("luong", "bahdanau+fast", "qkv-lstm"):
        with pytest.raises(UserError, match="unknown variant"):
            bench_train.parse_variant(bad)


def test_bench_train_one_line_per_variant(trained_toy):
    proc = run_script(
        "bench_train.py",
        "--config",
        str(trained_toy / "config.yaml"),
        "--variants",
        "luong_dot,luong_general-fast,transformer",
        "--steps",
        "2",
        "--warmup",
        "1",
        "--set",
        "train.max_tokens=300",
        "--threads",
        "1",
        "--no-keep-memory",
    )
    assert proc.returncode == 0, proc.stderr
    records = json_lines(proc.stdout)
    assert [r["variant"] for r in records] == ["luong_dot", "luong_general-fast", "transformer"]
    for record in records:
        assert record.keys() >= TRAIN_KEYS and record["bench"] == "train"
        assert record["target_tokens_per_s"] > 0 and record["ms_per_update"] > 0 and record["params"] > 0
        assert record["updates"] == 2 and record["isolated"] and record["keep_memory"] is False
    by_name = {r["variant"]: r for r in records}
    assert by_name["luong_dot"]["bidirectional"] is False and by_name["luong_dot"]["fast_path"] is True
    assert by_name["luong_general-fast"]["fast_path"] is False
    assert by_name["luong_general-fast"]["bidirectional"] is True
    assert by_name["transformer"]["arch"] == "transformer" and by_name["luong_dot"]["arch"] == "rnn"
    assert records[0]["tokens"] == records[1]["tokens"] == records[2]["tokens"]  # the same batches for every variant


def test_bench_train_rejects_unknown_variant_in_one_line(trained_toy):
    proc = run_script("bench_train.py", "--config", str(trained_toy / "config.yaml"), "--variants", "nope")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and "unknown variant 'nope'" in proc.stderr


def test_bench_decode_quick_on_the_test_split(trained_toy):
    proc = run_script(
        "bench_decode.py",
        "--checkpoint",
        str(trained_toy / "checkpoints/best.pt"),
        "--quick",
        "--limit",
        "12",
        "--beams",
        "1,3",
        "--batch-sizes",
        "1,8",
        "--threads",
        "1",
        "--min-seconds",
        "0.3",
    )
    assert proc.returncode == 0, proc.stderr
    records = json_lines(proc.stdout)
    assert [(r["beam"], r["batch_size"]) for r in records] == [(1, 1), (1, 8), (3, 8)]  # beam 3 x 1 skipped
    assert "skipping beam 3 with batch size 1" in proc.stderr
    for record in records:
        assert record.keys() >= DECODE_KEYS and record["bench"] == "decode"
        assert record["sentences"] == 12 and record["sentences_per_s"] > 0 and isinstance(record["keep_memory"], bool)
        assert Path(record["input"]).name == "test.xx"
        assert record["passes"] >= 1 and record["seconds"] >= 0.3  # whole passes until 0.3 s are timed
        assert record["sentences_per_s"] == pytest.approx(record["passes"] * 12 / record["seconds"], rel=0.02)
        assert record["arch"] == "rnn" and record["cell"] in ("gru", "lstm") and "d_model" not in record


def test_bench_decode_without_checkpoint_fails_in_one_line():
    proc = run_script("bench_decode.py")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and "--checkpoint is required" in proc.stderr


@pytest.fixture(scope="module")
def barely_trained_transformer(tmp_path_factory: pytest.TempPathFactory, toy_files) -> Path:
    """A toy Transformer after three updates: enough to export and time, not to translate well."""
    from nmt.training.entry import run_training

    _, files = toy_files
    root = tmp_path_factory.mktemp("bench_transformer")
    run_training(None, transformer_overrides(root, files, train__max_steps=3, train__valid_every=0), progress=False)
    return root / "runs" / "toy" / "checkpoints" / "best.pt"


@pytest.mark.slow  # exports for two engines and decodes with four
def test_bench_decode_engines_side_by_side(barely_trained_transformer, tmp_path):
    """Every engine on the same sentences and threads, with BLEU; the exports are written once and reused."""
    tiny = ["--checkpoint", str(barely_trained_transformer), "--device", "cpu", "--threads", "1", "--limit", "5"]
    tiny += ["--batch-sizes", "3", "--export-dir", str(tmp_path), "--min-seconds", "0"]
    engines = ["--engine", "torch,onnxruntime,ctranslate2", "--compute-type", "float32,int8"]
    proc = run_script("bench_decode.py", *tiny, *engines, "--beams", "1,2", timeout=400)
    assert proc.returncode == 0, proc.stderr
    records = json_lines(proc.stdout)
    runs = [("torch", "float32"), ("onnxruntime", "float32"), ("ctranslate2", "float32"), ("ctranslate2", "int8")]
    assert [(r["engine"], r["compute_type"], r["beam"]) for r in records] == [(*run, b) for run in runs for b in (1, 2)]
    for record in records:
        assert record.keys() >= DECODE_KEYS and record["threads"] == 1 and record["sentences"] == 5
        assert record["sentences_per_s"] > 0 and isinstance(record["bleu"], float) and record["arch"] == "transformer"
        assert record["attention"] == "transformer" and "cell" not in record and record["d_model"] > 0
        assert Path(record["reference"]).name == "test.yy" and record["engine_version"]
    by_run = {(r["engine"], r["compute_type"], r["beam"]): r for r in records}
    for beam in (1, 2):  # nmt's own searches on the exported graphs: the same translations as torch
        onnx, torch_run = by_run["onnxruntime", "float32", beam], by_run["torch", "float32", beam]
        assert (onnx["output_tokens"], onnx["bleu"]) == (torch_run["output_tokens"], torch_run["bleu"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best-ctranslate2", "best-onnx"]
    again = run_script("bench_decode.py", *tiny, "--engine", "onnxruntime", "--beams", "1", timeout=400)
    assert again.returncode == 0, again.stderr
    assert "reusing the onnx export" in again.stderr and "exporting" not in again.stderr


def test_bench_decode_skips_ctranslate2_for_an_rnn(trained_toy, tmp_path):
    ckpt = str(trained_toy / "checkpoints/best.pt")
    args = ["--engine", "ctranslate2", "--compute-type", "float32,int8", "--export-dir", str(tmp_path)]
    proc = run_script("bench_decode.py", "--checkpoint", ckpt, "--device", "cpu", "--limit", "4", *args)
    assert proc.returncode == 0, proc.stderr
    records = json_lines(proc.stdout)
    assert [(r["engine"], r["compute_type"]) for r in records] == [("ctranslate2", "float32"), ("ctranslate2", "int8")]
    assert all("Transformers only" in r["skipped"] and "sentences_per_s" not in r for r in records)
    assert not any(tmp_path.iterdir())  # nothing exported for a skip


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--engine", "tensorflow"], "unknown 'tensorflow'"),
        (["--engine", "torch,torch"], "at most once"),
        (["--compute-type", "int8"], "ctranslate2 only"),
        (["--engine", "ctranslate2", "--compute-type", "int4"], "unknown 'int4'"),
        (["--min-seconds", "-1"], "--min-seconds must be 0 or more"),
    ],
)
def test_bench_decode_bad_engine_options_fail_in_one_line(args, needle, tmp_path):
    proc = run_script("bench_decode.py", "--checkpoint", str(tmp_path / "none.pt"), *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and needle in proc.stderr


# --- bench_time_to_quality.py ----------------------------------------------------------------

TTQ = "bench_time_to_quality.py"
TTQ_HARDWARE = {"device", "device_name", "cpus", "threads", "torch"}


def ttq_args(tmp_path: Path, toy_files, *extra: str, **settings: object) -> list[str]:
    """A minimal config file plus the toy task's --set options and the run folder tmp_path/runs."""
    root, files = toy_files
    config = tmp_path / "toy.yaml"
    config.write_text("name: toy\n", encoding="utf-8")
    sets = [arg for item in toy_overrides(root, files, **settings) for arg in ("--set", item)]
    return ["--config", str(config), *sets, "--runs-dir", str(tmp_path / "runs"), *extra]


def test_bench_time_to_quality_levels_on_the_toy_task(tmp_path, toy_files):
    levels = [1.0, 5.0]
    proc = run_script(
        TTQ,
        *ttq_args(
            tmp_path,
            toy_files,
            "--levels",
            "1",
            "5",
            "--steps",
            "60",
            "--valid-every",
            "10",
            "--device",
            "cpu",
            "--threads",
            "1",
        ),
    )
    assert proc.returncode == 0, proc.stderr
    *rows, done = json_lines(proc.stdout)
    assert [r["level"] for r in rows] == levels and done["event"] == "done"
    for row in rows:
        assert row.keys() >= TTQ_HARDWARE and row["device"] == "cpu" and row["threads"] == 1
        if row["reached"]:
            assert row["bleu"] >= row["level"] and 1 <= row["step"] <= done["steps"]
        else:
            assert row["step"] is row["elapsed_s"] is row["bleu"] is None
    reached = [r for r in rows if r["reached"]]
    assert [r["reached"] for r in rows] == [True] * len(reached) + [False] * (len(rows) - len(reached))
    assert [r["step"] for r in reached] == sorted(r["step"] for r in reached)
    assert [r["elapsed_s"] for r in reached] == sorted(r["elapsed_s"] for r in reached)
    assert rows[0]["reached"]  # a BLEU floor: 60 updates learn more than nothing of the toy task
    assert done["steps"] <= 60 and done["levels_reached"] == len(reached)
    assert done["best_bleu"] >= max((r["bleu"] for r in reached), default=0.0)
    if done["stop_reason"] == "quality_reached":  # stopped at the validation that reached the top level
        assert rows[-1]["reached"] and rows[-1]["step"] == done["steps"]
    events = [json.loads(line) for line in (Path(done["run_dir"]) / "metrics.jsonl").read_text().splitlines()]
    valid_steps = [e["step"] for e in events if e["event"] == "valid"]
    assert len(valid_steps) == done["validations"] and 10 in valid_steps  # --valid-every 10 took effect


@pytest.mark.parametrize(
    "bad, message",
    [
        (["--steps", "0"], "--steps must be positive"),
        (["--steps", "-3"], "--steps must be positive"),
        (["--levels", "25", "20"], "strictly increasing"),
        (["--levels", "20", "20"], "strictly increasing"),
        (["--levels"], "at least one BLEU level"),
        (["--levels", "abc"], "invalid float value"),
    ],
)
def test_bench_time_to_quality_bad_options_fail_in_one_line(tmp_path, toy_files, bad, message):
    proc = run_script(TTQ, *ttq_args(tmp_path, toy_files, *bad))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith("bench_time_to_quality: error: ")
    assert message in proc.stderr and not (tmp_path / "runs").exists()


def test_bench_time_to_quality_refuses_a_corpus_without_valid_split(tmp_path, toy_files):
    _, files = toy_files
    no_valid = json.dumps({split: paths for split, paths in files.items() if split != "valid"})
    proc = run_script(TTQ, *ttq_args(tmp_path, toy_files, data__local_files=no_valid))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith("bench_time_to_quality: error: ")
    assert "no 'valid' split" in proc.stderr and not (tmp_path / "runs").exists()


def test_bench_time_to_quality_knows_which_corpora_have_a_valid_split():
    import bench_time_to_quality as ttq
    from nmt.config import DataConfig

    assert ttq.has_valid_split(DataConfig(corpus="multi30k"))
    assert ttq.has_valid_split(DataConfig(corpus="synthetic"))
    assert not ttq.has_valid_split(DataConfig(corpus="synthetic", synthetic_sizes={"train": 10, "valid": 0}))
    assert ttq.has_valid_split(DataConfig(corpus="local", local_files={"train": ["a"], "valid": ["b"]}))
    assert not ttq.has_valid_split(DataConfig(corpus="local", local_files={"train": ["a"]}))
    assert not ttq.has_valid_split(DataConfig(corpus="hub", hub_name="x", hub_splits={"train": "train"}))
    assert ttq.check_levels([20.0, 25.0]) is None and ttq.check_levels([0.0, 5.0]) is not None


# --- bench_scale.py ---------------------------------------------------------------------------

SCALE_KEYS = {
    "bench",
    "pairs",
    "prepare_s",
    "prepare_s_per_pair",
    "prepare_peak_rss_mb",
    "train_s",
    "train_s_per_pair",
    "train_peak_rss_mb",
    "train_loop_s",
    "device",
    "device_name",
    "cpus",
    "date",
}


def test_bench_scale_quick_prepares_and_trains_one_epoch(tmp_path):
    proc = run_script("bench_scale.py", "--quick", "--valid", "10", "--work-dir", str(tmp_path), "--keep")
    assert proc.returncode == 0, proc.stderr
    (record,) = json_lines(proc.stdout)
    assert record.keys() >= SCALE_KEYS and record["bench"] == "scale" and record["device"] == "cpu"
    assert record["pairs"] == record["train_pairs"] == 300 and record["threads"] == 1
    assert record["prepare_s"] > 0 and record["train_s"] > record["train_loop_s"] > 0
    assert record["prepare_s_per_pair"] == pytest.approx(record["prepare_s"] / 300, rel=0.01)
    assert 50 < record["prepare_peak_rss_mb"] < 8192 and 50 < record["train_peak_rss_mb"] < 8192
    # the corpus really went through the CLI: a prepared folder, a cached id array, one epoch's run
    (prepared,) = (tmp_path / "data-300" / "local" / "en-de").iterdir()  # one folder per set of local files
    assert (prepared / "manifest.json").is_file() and list((prepared / "cache").glob("train.en.*.ids.npy"))
    assert "stopped (max_epochs)" in (tmp_path / "logs" / "train-300.log").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "bad, message",
    [
        (["--sizes", "3k"], "comma-separated whole numbers"),
        (["--sizes", "0"], "at least one positive"),
        (["--max-tokens", "0"], "--max-tokens must be positive"),
    ],
)
def test_bench_scale_bad_options_fail_in_one_line(tmp_path, bad, message):
    proc = run_script("bench_scale.py", *bad, "--work-dir", str(tmp_path / "w"))
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.strip().count("\n") == 0
    assert proc.stderr.startswith("bench_scale: error: ") and message in proc.stderr
    assert not (tmp_path / "w").exists()


# --- bench_equal_time.py and its table ---------------------------------------------------------

EQUAL = "bench_equal_time.py"


def config_file(path: Path, overrides: list[str]) -> Path:
    """``overrides`` (KEY=VALUE, dotted keys) written as one YAML config."""
    import yaml

    path.write_text(yaml.safe_dump(as_yaml(overrides)), encoding="utf-8")
    return path


def equal_time_args(tmp_path: Path, toy_files, minutes: str = "0.1") -> list[str]:
    """An RNN and a Transformer config of the toy task, checkpoints for an average of 2, six seconds a run."""
    root, files = toy_files
    short = dict(train__valid_every=10, train__keep_last=2)
    rnn = config_file(tmp_path / "toy_rnn.yaml", toy_overrides(root, files, **short))
    transformer = config_file(tmp_path / "toy_tf.yaml", transformer_overrides(root, files, **short))
    runs = tmp_path / "runs"
    return ["--configs", str(rnn), str(transformer), "--seeds", "1", "--minutes", minutes, "--runs-dir", str(runs)] + [
        "--last",
        "2",
        "--beam",
        "2",
    ]


def test_bench_equal_time_trains_side_by_side_and_reads_test_once(tmp_path, toy_files):
    args = equal_time_args(tmp_path, toy_files)
    proc = run_script(EQUAL, *args, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json_lines(proc.stdout)
    assert [(Path(r["config"]).name, r["arch"], r["seed"]) for r in rows] == [
        ("toy_rnn.yaml", "rnn", 1),
        ("toy_tf.yaml", "transformer", 1),
    ]
    for row in rows:  # the time budget alone ends a run: the script lifts the update and epoch caps
        assert row["stop_reason"] == "time_budget" and row["minutes"] >= 0.1 and row["updates"] > 10
        assert row["minutes_budget"] == 0.1 and row["side_by_side"] == 2 and row["commit"]
        assert row["chosen"] in ("best", "avg_last2") and row["test_split"] == "test" and row["test_read"] == 1
        assert 0.0 <= row["test_bleu"] <= 100.0 and row["valid_bleu"] is not None and row["threads"] == 1
        assert row["valid_curve"][-1][0] == row["updates"]  # the learning curve ends at the final model's validation
        assert all(len(point) == 4 and point[3] > 0 for point in row["valid_curve"])  # update, minutes, BLEU, lr
    runs = tmp_path / "runs"
    assert {p.name for p in runs.glob("*.log")} == {"toy_rnn_s1.log", "toy_tf_s1.log"}
    metrics = {name: runs / name / "metrics.jsonl" for name in ("toy_rnn_s1", "toy_tf_s1")}
    before = {name: m.read_bytes() for name, m in metrics.items()}
    again = run_script(EQUAL, *args, timeout=300)  # finished and read: nothing trained, test not read again
    assert again.returncode == 0, again.stderr
    assert json_lines(again.stdout) == rows and {n: m.read_bytes() for n, m in metrics.items()} == before
    out = tmp_path / "equal.jsonl"
    out.write_text(proc.stdout, encoding="utf-8")
    table = subprocess.run(
        [sys.executable, str(REPO / "docs_build" / "equal_time_table.py"), str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert table.returncode == 0, table.stderr
    assert "| baseline |" in table.stdout and "(1 seed)" in table.stdout and "toy_tf.yaml" in table.stdout
    assert "mix" not in table.stdout and "Stopped before" not in table.stdout
    assert "| the end (minute 0.1) |" in table.stdout  # the curves at equal time
    other = run_script(EQUAL, *equal_time_args(tmp_path, toy_files, minutes="0.2"))  # other settings: refused
    assert other.returncode == 2 and other.stderr.count("\n") == 1 and "train.time_budget_min" in other.stderr
    stop = metrics["toy_tf_s1"].read_text().splitlines()
    metrics["toy_tf_s1"].write_text("\n".join(stop[:-1]) + "\n")  # the Transformer's run cut short
    third = run_script(EQUAL, *args, timeout=300)  # both arms again, side by side: neither trains alone
    assert third.returncode == 0, third.stderr
    assert all(m.read_bytes() != before[n] for n, m in metrics.items())
    assert [r["test_read"] for r in json_lines(third.stdout)] == [2, 2]  # the run names' second reading, said so


def test_bench_equal_time_records_the_commit_the_runs_start_from(tmp_path, monkeypatch):
    """The code a run imports is the checkout's as it starts: a commit made while the arms train
    (half an hour) must not be the one their lines report."""
    import argparse

    import bench_equal_time

    checkout = {"commit": "aaa"}
    monkeypatch.setattr(bench_equal_time, "git_commit", lambda: checkout["commit"])

    def training(commands, runs_dir, what):
        checkout["commit"] = "bbb"  # committed while the runs train

    monkeypatch.setattr(bench_equal_time, "side_by_side", training)
    monkeypatch.setattr(bench_equal_time, "train_command", lambda args, config, seed: ["true"])
    runs = {Path("a.yaml"): tmp_path / "a_s1", Path("b.yaml"): tmp_path / "b_s1"}
    for run in runs.values():
        run.mkdir()
    args = argparse.Namespace(minutes=1.0, threads=1, runs_dir=tmp_path)
    bench_equal_time.train_seed(args, 1, runs)
    assert {json.loads(bench_equal_time.sidecar_path(run).read_text())["commit"] for run in runs.values()} == {"aaa"}


@pytest.mark.parametrize(
    "bad, message",
    [
        (["--seeds", "1,x"], "comma-separated whole numbers"),
        (["--seeds", "1,1"], "give each seed once"),
        (["--minutes", "0"], "--minutes must be positive"),
        (["--threads", "0"], "--threads must be 1 or more"),
        (["--last", "3"], "train.keep_last is 2"),
    ],
)
def test_bench_equal_time_bad_options_fail_in_one_line(tmp_path, toy_files, bad, message):
    proc = run_script(EQUAL, *equal_time_args(tmp_path, toy_files), *bad)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith("bench_equal_time: error: ")
    assert message in proc.stderr and not (tmp_path / "runs").exists()


def test_bench_equal_time_needs_two_configs(tmp_path, toy_files):
    args = equal_time_args(tmp_path, toy_files)
    proc = run_script(EQUAL, *args[:2], *args[3:])
    assert proc.returncode == 2 and "two or more configs" in proc.stderr
