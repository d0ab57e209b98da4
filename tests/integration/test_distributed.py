"""Several training processes: 2 CPU ranks with Gloo compute what 1 rank with accumulation 2 does.

The equalities are checked to float tolerance: the gradients of an update's batches are added
by an all-reduce instead of by autograd, in an order that need not match for other world sizes
(with 2 ranks on CPU they come out bit-identical).  Dropout is off and teacher forcing is 1,
so no random draw separates the runs (ranks draw from different streams).
"""

import faulthandler
import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from conftest import PROC_TIMEOUT, toy_overrides
from nmt import config as C
from nmt.data.batching import collate
from nmt.model.build import build_model
from nmt.run import checkpoint as ckpt
from nmt.training import distributed
from nmt.training.entry import run_training
from nmt.training.loop import Trainer
from nmt.util.errors import UserError

REPO = Path(__file__).resolve().parents[2]
STEPS = 4


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One prepared toy corpus for every run of this module (the first run prepares it)."""
    return tmp_path_factory.mktemp("ddp_data")


def overrides(root: Path, files, data_root: Path, **extra) -> list[str]:
    settings = dict(train__max_steps=STEPS, train__valid_every=0, data__root=str(data_root))
    return toy_overrides(root, files, **{**settings, **extra})


def as_cli(assignments: list[str]) -> list[str]:
    return [arg for a in assignments for arg in ("--set", a)]


def train_events(run_dir: Path) -> dict[int, dict]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    events = [e for e in map(json.loads, lines) if e["event"] == "train"]
    assert len({e["step"] for e in events}) == len(events), "a step logged twice"
    return {e["step"]: e for e in events}


def assert_same_training(run_dir: Path, reference: Path) -> None:
    """Same target tokens and (to float tolerance) losses per update, and the same final weights."""
    got, want = train_events(run_dir), train_events(reference)
    assert sorted(got) == sorted(want)
    for step in got:
        assert got[step]["tgt_tokens"] == want[step]["tgt_tokens"], step
        assert got[step]["loss"] == pytest.approx(want[step]["loss"], rel=1e-5), step
    params = ckpt.load(run_dir / "checkpoints" / "last.pt").model
    expected = ckpt.load(reference / "checkpoints" / "last.pt").model
    assert params.keys() == expected.keys()
    for name in params:
        torch.testing.assert_close(params[name], expected[name], rtol=1e-4, atol=1e-5, msg=name)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, toy_files, data_root) -> Path:
    """One process, accumulation 2: the run that 2 ranks with accumulation 1 must reproduce."""
    _, files = toy_files
    root = tmp_path_factory.mktemp("one_rank")
    run_training(None, overrides(root, files, data_root, train__accumulate=2), progress=False)
    return root / "runs" / "toy"


# ------------------------------------------------------------ pieces


def test_shards_partition_every_update():
    for world in (1, 2, 3, 4):
        for size in range(0, 9):
            group = [[i] for i in range(size)]
            shards = [distributed.shard(group, r, world) for r in range(world)]
            assert sorted(row for shard in shards for row in shard) == group
            assert max(map(len, shards)) - min(map(len, shards)) <= 1
            assert all(shards) == (size >= world)


def test_single_process_context_is_a_no_op():
    alone = distributed.Context()
    assert alone.is_main and not alone.enabled
    assert alone.all_sum([1.5, 2]) == [1.5, 2.0] and alone.all_max([0, 3]) == [0.0, 3.0]
    assert alone.gather("x") == ["x"] and alone.main_first(lambda: 7) == 7
    model = torch.nn.Linear(2, 2)
    assert alone.wrap(model) is model


def test_torchrun_command_and_no_nesting(monkeypatch):
    argv = distributed.torchrun_argv(2, ["train", "--config", "x.yaml"])
    assert argv[1:] == [
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "nmt",
        "train",
        "--config",
        "x.yaml",
    ]
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    with pytest.raises(UserError, match="under torchrun"):
        distributed.relaunch(2, ["train"])


TORCHRUN_SETS = {"RANK": "0", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
"""The rest of what torchrun sets in a worker's environment (nmt checks it before any command)."""


def _nmt(args: list[str], world_size: str) -> subprocess.CompletedProcess:
    """``nmt ARGS`` in a fresh interpreter with ``WORLD_SIZE`` set; it prints "teardown" from atexit."""
    program = "import atexit, sys; atexit.register(print, 'teardown'); from nmt.cli import main; main(sys.argv[1:])"
    return subprocess.run(
        [sys.executable, "-c", program, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=PROC_TIMEOUT,
        env={**os.environ, "WORLD_SIZE": world_size, **TORCHRUN_SETS},
    )


@pytest.mark.parametrize("world_size", ["1", "2"])
def test_a_worker_of_several_processes_skips_the_interpreter_teardown(world_size):
    """Under torchrun (WORLD_SIZE 2) nmt ends through end_rank: same status and output, no atexit.

    Gloo's threads outlive ``destroy_process_group`` once DDP wrapped a model; ending before the
    interpreter's teardown keeps them from aborting a finished run (see ``end_rank``).  One
    process (WORLD_SIZE 1) ends as any program does.  The cases: success, a bad option, and an
    error that --debug lets through.
    """
    cases = (["--version"], ["--no-such-option"], ["--debug", "config", "--config", "no/such.yaml"])
    runs = [_nmt(args, world_size) for args in cases]
    assert [run.returncode for run in runs] == [0, 2, 1]
    assert runs[0].stdout.startswith("nmt ") and "No such option: --no-such-option" in runs[1].stderr
    assert "Traceback" in runs[2].stderr and "no/such.yaml" in runs[2].stderr
    teardown = world_size == "1"
    assert [("teardown" in run.stdout) for run in runs] == [teardown] * len(cases)


def test_a_bad_world_size_is_one_line():
    """WORLD_SIZE that is not a positive whole number stops nmt before any command, in one line."""
    run = _nmt(["--version"], "two")
    assert run.returncode == 2 and run.stderr.startswith("nmt: error: WORLD_SIZE='two'"), run.stderr
    assert "Traceback" not in run.stderr


def test_nproc_relaunches_the_same_command_after_checking_it(tmp_path, monkeypatch, capsys):
    """``nmt train --nproc N`` hands torchrun its own arguments minus --nproc, once they pass the checks."""
    from nmt.cli import main

    calls = []
    monkeypatch.setattr(distributed, "relaunch", lambda n, args: (calls.append((n, args)), sys.exit(0)))
    with pytest.raises(SystemExit):
        main(["--quiet", "train", "--nproc", "3", "--set", f"runs_dir={tmp_path}", "--no-progress"])
    assert calls == [(3, ["--quiet", "train", "--set", f"runs_dir={tmp_path}", "--no-progress"])]

    with pytest.raises(SystemExit) as exit_info:  # a user error: one line, no torchrun
        main(["train", "--nproc", "2", "--resume", str(tmp_path / "nothing")])
    assert exit_info.value.code == 2 and "no checkpoints/last.pt" in capsys.readouterr().err
    assert len(calls) == 1


@pytest.mark.parametrize(
    "change",
    [
        [],
        ["model.cell=lstm", "model.init_state=last"],
        ["model.init_state=zero", "model.tie_embeddings=true"],
        ["model.enc_self_attention.layers=1", "model.dec_self_attention.enabled=true"],
        ["model.attention.type=custom", "model.attention.energy=location", "model.attention.input_feeding=false"],
        *[
            [f"model.attention.type={t}", "model.bidirectional=false"]
            for t in ("none", "luong_dot", "luong_general", "luong_concat", "scaled_dot", "qkv", "gaussian")
        ],
    ],
)
def test_every_parameter_gets_a_gradient(change):
    """DDP runs without the per-step search for unused parameters; that needs this."""
    cfg = C.load(None, ["model.emb_size=8", "model.hidden_size=8", *change]).model
    model = build_model(cfg, 20, 20)
    assert not list(model.buffers())
    src, tgt = torch.randint(4, 20, (3, 5)), torch.randint(4, 20, (3, 4))
    for p in (1.0, 0.5):
        model.zero_grad(set_to_none=True)
        logits, _ = model(src, torch.tensor([5, 3, 1]), tgt, teacher_forcing=p)
        logits.sum().backward()
        assert [n for n, w in model.named_parameters() if w.grad is None] == [], p


def test_target_tokens_from_lengths_match_collate(tmp_path, toy_files, data_root):
    _, files = toy_files
    cfg = C.load(None, overrides(tmp_path, files, data_root, train__max_len=6))
    trainer = Trainer(cfg, tmp_path, progress=False)
    for group in (trainer.sampler.batches(0)[i : i + 3] for i in range(0, 30, 3)):
        batches = [collate(trainer.train_split, idx, cfg.train.max_len) for idx in group]
        assert trainer.target_tokens(group) == sum(b.n_tgt_tokens for b in batches)


# ------------------------------------------------------------ two processes


def test_two_ranks_equal_one_rank_with_accumulation(tmp_path, toy_files, data_root, reference):
    """``nmt train --nproc 2`` (torchrun, Gloo): same updates, one set of files, one summary."""
    _, files = toy_files
    command = [
        sys.executable,
        "-m",
        "nmt",
        "train",
        "--nproc",
        "2",
        "--no-progress",
        *as_cli(overrides(tmp_path, files, data_root, train__accumulate=1)),
    ]
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=PROC_TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count(f"stopped (max_steps) at step {STEPS}") == 1  # rank 0 alone prints
    assert "2 process(es) (gloo)" in proc.stderr and "= 1200 tokens" in proc.stderr  # 2 x 1 x 600

    run_dir = tmp_path / "runs" / "toy"
    assert_same_training(run_dir, reference)
    assert {e["world_size"] for e in train_events(run_dir).values()} == {2}
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["best.pt", "last.pt"]
    events = [json.loads(line)["event"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert events.count("valid") == 1 and events.count("stop") == 1
    assert len(list((run_dir / "tb").glob("events.out.tfevents.*"))) == 1  # rank 0's TensorBoard writer alone
    last = ckpt.load(run_dir / "checkpoints" / "last.pt")
    assert last.world_size == 2 and len(last.rng_ranks) == 2
    assert not torch.equal(last.rng_ranks[0]["torch"], last.rng_ranks[1]["torch"])


def test_resume_one_rank_run_with_two_ranks(tmp_path, toy_files, data_root, reference):
    """Plain ``torchrun ... -m nmt train --resume``: the update slicing continues across world sizes."""
    _, files = toy_files
    run_training(None, overrides(tmp_path, files, data_root, train__accumulate=2, train__max_steps=2), progress=False)
    run_dir = tmp_path / "runs" / "toy"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "nmt",
        "train",
        "--no-progress",
        "--resume",
        str(run_dir),
        *as_cli(["train.accumulate=1", f"train.max_steps={STEPS}"]),
    ]
    proc = subprocess.run(
        command,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=PROC_TIMEOUT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "checkpoint written by 1 process(es), resuming with 2" in proc.stderr
    assert_same_training(run_dir, reference)


def _join_as(rank: int, port: int) -> None:
    """Set torchrun's variables by hand in a process started by mp.spawn.

    ``port`` is the test's rendezvous store (see :func:`spawn_two_ranks`); as under torchrun,
    every rank joins it as a client, so no rank has to bind a port of its own.  A rank that
    crashes prints where (faulthandler), into the failing test's captured stderr.
    """
    faulthandler.enable()
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE="2",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        TORCHELASTIC_USE_AGENT_STORE="True",
    )


def _rank(rank: int, port: int, assignments: list[str]) -> None:
    """One rank of a 2-process run started by mp.spawn; it ends as ``nmt train`` does under torchrun."""
    _join_as(rank, port)
    run_training(None, assignments, progress=False)
    distributed.end_rank(0)


def _rank_signalled_at(rank: int, port: int, assignments: list[str], victim: int, step: int) -> None:
    """One rank of a 2-process run (mp.spawn); rank ``victim`` gets SIGTERM after update ``step``."""
    original = Trainer.after_update

    def after_update(self, update):
        original(self, update)
        if self.dist.rank == victim and self.state.step == step:
            # raise() delivers to the calling (main) thread and runs the Python handler before it
            # returns; os.kill may land on another thread and be handled an update late under load.
            signal.raise_signal(signal.SIGTERM)

    Trainer.after_update = after_update
    _rank(rank, port, assignments)


def spawn_two_ranks(fn, args: tuple, timeout_s: float = PROC_TIMEOUT) -> None:
    """Run ``fn(rank, port, *args)`` in 2 processes, ``port`` being a rendezvous store's.

    The store binds port 0, so the OS picks a free port at bind time and holds it for the
    whole run: no window between choosing a port and binding it in which another process can
    take it (torchrun's agent hosts the store for its workers the same way).
    """
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=timeout_s))
    context = mp.spawn(fn, args=(store.port, *args), nprocs=2, join=False)
    deadline = time.monotonic() + timeout_s
    while not context.join(timeout=1):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail("distributed run did not finish")


def test_signal_on_one_rank_stops_all_then_resume_alone(tmp_path, toy_files, data_root, reference):
    """SIGTERM on rank 1 only: both ranks stop after the same update, rank 0 saves; one rank resumes."""
    _, files = toy_files
    spawn_two_ranks(_rank_signalled_at, (overrides(tmp_path, files, data_root), 1, 2))
    run_dir = tmp_path / "runs" / "toy"
    last = ckpt.load(run_dir / "checkpoints" / "last.pt")
    assert (last.state.step, last.world_size, len(last.rng_ranks)) == (2, 2, 2)
    stop = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert (stop["event"], stop["reason"], stop["step"]) == ("stop", "interrupted", 2)

    run_training(None, ["train.accumulate=2"], resume=run_dir, progress=False)
    assert_same_training(run_dir, reference)


def test_short_last_update_of_an_epoch(tmp_path, toy_files, data_root):
    """11 batches per epoch on 2 ranks: the 6th update has one batch, rank 1 joins with a zero gradient."""
    _, files = toy_files
    settings = dict(train__max_tokens=2000, train__max_steps="null", train__max_epochs=1)
    run_training(None, overrides(tmp_path / "one", files, data_root, train__accumulate=2, **settings), progress=False)
    spawn_two_ranks(_rank, (overrides(tmp_path / "two", files, data_root, **settings),))
    reference = tmp_path / "one" / "runs" / "toy"
    assert len(train_events(reference)) == 6
    assert_same_training(tmp_path / "two" / "runs" / "toy", reference)


def _rank_reporting(rank: int, port: int, assignments: list[str], out: Path) -> None:
    """Like :func:`_rank`, but writes the name of the exception that ended the rank to ``out``."""
    _join_as(rank, port)
    try:
        run_training(None, assignments, progress=False)
        outcome = "ok"
    except Exception as exc:
        outcome = type(exc).__name__
    (out / f"rank{rank}").write_text(outcome)
    distributed.end_rank(0)


def test_error_on_rank_zero_ends_every_rank(tmp_path, toy_files, data_root):
    """A run directory in the way: rank 0 reports it, rank 1 stops too instead of waiting for it."""
    _, files = toy_files
    (tmp_path / "runs" / "toy").mkdir(parents=True)
    (tmp_path / "runs" / "toy" / "metrics.jsonl").write_text("")
    spawn_two_ranks(_rank_reporting, (overrides(tmp_path, files, data_root), tmp_path))
    assert (tmp_path / "rank0").read_text() == "UserError"
    assert (tmp_path / "rank1").read_text() == "RankZeroFailed"


@pytest.mark.parametrize(
    "env, message",
    [
        ({"WORLD_SIZE": "2"}, "WORLD_SIZE=2 without RANK, MASTER_ADDR, MASTER_PORT: start the processes with torchrun"),
        ({"WORLD_SIZE": "2", "RANK": "0", "MASTER_PORT": "29500"}, "WORLD_SIZE=2 without MASTER_ADDR:"),
        ({"WORLD_SIZE": "2", "RANK": "0", "MASTER_ADDR": "localhost", "MASTER_PORT": "x"}, "MASTER_PORT='x'"),
        ({"WORLD_SIZE": "1", "RANK": "x"}, "RANK='x': expected a whole number"),  # trained, then failed
        ({"WORLD_SIZE": "2", "RANK": "2"}, "RANK='2': expected a whole number, 0 or more, less than WORLD_SIZE=2"),
        ({"LOCAL_RANK": "-1"}, "LOCAL_RANK='-1'"),
    ],
)
def test_a_torchrun_environment_that_cannot_work_is_one_line_before_any_work(
    tmp_path, capsys, monkeypatch, env, message
):
    from nmt.cli import main

    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("nmt.training.entry.run_training", lambda *a, **k: pytest.fail("training started"))
    with pytest.raises(SystemExit) as end:
        main(["train", "--set", f"runs_dir={tmp_path}", "--no-progress"])
    err = capsys.readouterr().err
    assert end.value.code == 2 and err == f"nmt: error: {err[12:]}" and message in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []
