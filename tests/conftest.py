"""Shared pytest fixtures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from nmt.config.attention_space import ATTENTIONS
from nmt.config.combines import COMBINES
from nmt.config.decoder_loops import DECODER_LOOPS
from nmt.config.normalizations import NORMALIZATIONS
from nmt.config.schedules import TF_SCHEDULES
from nmt.data.toy import reversal_pairs, write_reversal
from nmt.training.learning_check import TINY
from nmt.util import registry

# Tiny models run fastest on one thread, and two test processes' threads never fight for
# the two cores of the reference machine.
torch.set_num_threads(1)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """List what the learning tests measured against their bounds, so CI logs show the margins."""
    rows = []
    for outcome in ("passed", "failed"):
        for report in terminalreporter.stats.get(outcome, []):
            found = dict(getattr(report, "user_properties", ()))
            if getattr(report, "when", "") == "call" and "bleu" in found:
                rows.append((report.nodeid.split("::")[-1], found["bleu"], found["bound"], outcome))
    if rows:
        terminalreporter.section("learning tests: greedy test BLEU against each bound")
        for name, bleu, bound, outcome in sorted(rows):
            terminalreporter.write_line(f"{name:70s} {bleu:6.2f}  bound {bound}  {outcome}")


# --- the command line ----------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]
NMT = [sys.executable, "-m", "nmt"]
"""``nmt`` as a real process (``python -m nmt``), for tests run from REPO."""


PROC_TIMEOUT = 300
"""Seconds after which a test's subprocess counts as hung: a guard against hangs, never a claim
about speed (generous, since the reference machine is shared and busy)."""


def wait_until(condition: Callable[[], bool], proc: subprocess.Popen, what: str, timeout: float = PROC_TIMEOUT) -> None:
    """Poll ``condition`` until it holds; fail, naming ``what``, if ``proc`` exits first or
    ``timeout`` seconds pass.  For waiting on something a process does, instead of sleeping."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None and not condition():
            pytest.fail(f"the process exited with status {proc.returncode} before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout} s")
        time.sleep(0.05)


def stop(proc: subprocess.Popen) -> None:
    """Kill ``proc`` if it still runs, and reap it (for ``finally`` blocks, so no test leaves one behind)."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=PROC_TIMEOUT)


@pytest.fixture()
def isolated_registries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What a test registers (energies, normalizations, combines, schedules, loops) or allows by name in this
    process (``run_cli``, ``nmt.train(modules=...)``) ends with it."""
    for table in (ATTENTIONS, NORMALIZATIONS, COMBINES, TF_SCHEDULES, DECODER_LOOPS):
        monkeypatch.setattr(table, "_entries", dict(table._entries))
    tokens = registry._ALLOWED.set(registry._ALLOWED.get()), registry._GIVEN.set(registry._GIVEN.get())
    yield
    registry._ALLOWED.reset(tokens[0])
    registry._GIVEN.reset(tokens[1])


def run_cli(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``nmt argv`` run in this process (the console entry point)."""
    from nmt.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return exit_info.value.code or 0, out, err


def run_tiny_lab(name: str, folder: Path, capsys: pytest.CaptureFixture, *extra: str) -> str:
    """``nmt lab NAME --tiny [EXTRA...]`` writing into ``folder`` (its runs in folder/runs); its stdout, the table."""
    argv = ["lab", name, "--tiny", "--out", str(folder), "--runs-dir", str(folder / "runs"), "--no-progress", *extra]
    code, out, err = run_cli(argv, capsys)
    assert code == 0, err
    return out


def train_losses(run_dir: Path) -> dict[int, float]:
    """Update -> training loss, as the run's metrics.jsonl logged them (the last line of an update logged twice)."""
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return {e["step"]: e["loss"] for e in map(json.loads, lines) if e["event"] == "train"}


def interrupt_at(monkeypatch: pytest.MonkeyPatch, step: int) -> None:
    """Deliver a real SIGINT to this process right after training update ``step``."""
    import signal

    from nmt.training.loop import Trainer

    original = Trainer.after_update

    def after_update(self: Trainer, update: object) -> None:
        original(self, update)  # type: ignore[arg-type]
        if self.state.step == step:
            signal.raise_signal(signal.SIGINT)  # handled in this thread before it returns

    monkeypatch.setattr(Trainer, "after_update", after_update)


def stop_count(run: Path) -> int:
    """How many times a run stopped (one per training, however many arms scored it)."""
    lines = (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return sum(json.loads(line)["event"] == "stop" for line in lines)


# --- data ----------------------------------------------------------------------------------

MULTI30K_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "multi30k"
"""Real Multi30k files (train/val/test_2016_flickr) shared by the workspace; never copied here."""

TOY_TRAIN = [
    ("Ein Hund läuft über die Wiese.", "A dog runs across the meadow."),
    ("Zwei Kinder spielen im Park.", "Two children play in the park."),
    ("Eine Frau liest ein Buch.", "A woman reads a book."),
    ("Der Mann fährt mit dem Fahrrad.", "The man rides a bike."),
    ("Ein kleines Mädchen lacht.", "A little girl laughs."),
    ("Die Katze schläft auf dem Sofa.", "The cat sleeps on the sofa."),
    ("", "An empty source line."),
    ("Ein Hund bellt laut.", "A dog barks loudly."),
] * 6


@pytest.fixture(scope="session")
def toy_pairs() -> list[tuple[str, str]]:
    """The toy training pairs (German, English), one of them with an empty source."""
    return list(TOY_TRAIN)


@pytest.fixture(scope="session")
def big_spm(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A SentencePiece model with more pieces (about 270) than any toy model's, to swap into an export."""
    from nmt.data.tokenizer import train_sentencepiece

    folder = tmp_path_factory.mktemp("big_spm")
    text = folder / "words.txt"
    text.write_text("".join(f"w{i} x{i * 7} y{i * 13}\n" for i in range(400)), encoding="utf-8")
    path = train_sentencepiece(
        [text], folder / "big", vocab_size=300, model_type="unigram", character_coverage=1.0, input_sentence_size=1000
    )
    return path.read_bytes()


@pytest.fixture(scope="session")
def multi30k_dir() -> Path:
    """The Multi30k mirror ($NMT_DATA_MIRROR, else ../shared beside the repository); skip if absent."""
    folder = Path(os.environ.get("NMT_DATA_MIRROR") or MULTI30K_SHARED)
    if not (folder / "train.de.gz").is_file():
        pytest.skip(f"Multi30k files not found in {folder} (set NMT_DATA_MIRROR)")
    return folder


@pytest.fixture()
def toy_raw() -> dict[str, tuple[list[str], list[str]]]:
    """A tiny de-en corpus: train with one empty source line, valid with oddly spaced lines."""
    de, en = [p[0] for p in TOY_TRAIN], [p[1] for p in TOY_TRAIN]
    valid_de = ["Ein  Hund\tläuft.", "", "Zwei Kinder spielen."]
    valid_en = ["A dog runs.", "An empty line above.", "  Two children play.  "]
    return {"train": (de, en), "valid": (valid_de, valid_en)}


@pytest.fixture(scope="session")
def toy_prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy corpus prepared once per session with a tiny joint vocabulary."""
    from nmt.data.prepare import prepare

    de, en = [p[0] for p in TOY_TRAIN], [p[1] for p in TOY_TRAIN]
    raw = {"train": (de, en), "valid": (["Ein Hund.", "", "Eine Katze."], ["A dog.", "Nothing.", "A cat."])}
    out = tmp_path_factory.mktemp("toy") / "de-en"
    prepare(
        "toy", raw, out, "de", "en", filters={}, spm={"vocab_size": 60, "num_threads": 1}, source_info={"kind": "test"}
    )
    return out


@pytest.fixture(scope="session")
def multi30k_prepared(multi30k_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Multi30k de-en prepared once per session with a small vocabulary (a few seconds).

    ``max_ratio`` is loose so that no training pair is dropped and the line counts are the
    published ones.
    """
    from nmt.data.prepare import prepare
    from nmt.data.sources import load_multi30k

    out = tmp_path_factory.mktemp("multi30k") / "de-en"
    raw = load_multi30k("de", "en", mirror=multi30k_dir, download_dir=out.parent / "download")
    prepare(
        "multi30k",
        raw,
        out,
        "de",
        "en",
        filters={"max_ratio": 10.0},
        spm={"vocab_size": 2000, "input_sentence_size": 30_000},
        source_info={"mirror": str(multi30k_dir)},
    )
    return out


# --- training: a toy task learned by a tiny model -------------------------------------------


def toy_task_pairs(n: int, seed: int, min_len: int = 2, max_len: int = 9) -> list[tuple[str, str]]:
    """The reversal task of :mod:`nmt.data.toy`: the target is the source reversed, each word upper-cased."""
    return reversal_pairs(n, seed, min_len, max_len)


def write_toy_task(folder: Path, sizes: dict[str, int]) -> dict[str, list[str]]:
    """Write the toy task as plain-text split files; returns data.local_files."""
    return write_reversal(folder, sizes, seed=100)


def toy_overrides(root: Path, files: dict[str, list[str]], **extra: object) -> list[str]:
    """--set overrides for a tiny, fast model on the toy task rooted in ``root``."""
    import json

    settings = {
        "name": "toy",
        "runs_dir": str(root / "runs"),
        "data.root": str(root / "data"),
        "data.local_files": json.dumps(files),
        **TINY,
        "train.log_every": 1,
    }
    settings.update({k.replace("__", "."): v for k, v in extra.items()})
    return [f"{k}={v}" for k, v in settings.items()]


TOY_TRANSFORMER = dict(
    model__arch="transformer",
    model__transformer__d_model=64,
    model__transformer__heads=4,
    model__transformer__ff_size=128,
    model__transformer__enc_layers=2,
    model__transformer__dec_layers=2,
    train__lr=0.002,
    train__warmup_steps=100,
)
"""A tiny Transformer for the toy task (2 layers, 4 heads)."""


def transformer_overrides(root: Path, files: dict[str, list[str]], **extra: object) -> list[str]:
    """:func:`toy_overrides` for :data:`TOY_TRANSFORMER` (without the RNN's sizes)."""
    rnn_only = ("model.emb_size=", "model.hidden_size=")
    return [o for o in toy_overrides(root, files, **{**TOY_TRANSFORMER, **extra}) if not o.startswith(rnn_only)]


@pytest.fixture(scope="session")
def toy_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]]]:
    root = tmp_path_factory.mktemp("toytask")
    return root, write_toy_task(root / "text", {"train": 3000, "valid": 100, "test": 100})


@pytest.fixture(scope="session")
def trained_toy(tmp_path_factory: pytest.TempPathFactory, toy_files) -> Path:
    """A tiny Bahdanau model trained on the toy task (shared by search, translate, eval tests)."""
    from nmt.training.entry import run_training

    _, files = toy_files
    root = tmp_path_factory.mktemp("trained")
    overrides = toy_overrides(root, files, train__max_epochs=6, train__valid_every=0)
    run_training(None, overrides, progress=False)
    return root / "runs" / "toy"


def repeats_an_ngram(tokens: list, n: int) -> bool:
    """Whether some n-gram occurs twice in ``tokens`` (words or ids)."""
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return len(grams) != len(set(grams))


# --- model: a small random batch -----------------------------------------------------------

V_SRC, V_TGT, BOS = 17, 19, 2


def random_batch(B: int = 3, S: int = 6, T: int = 5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Source ids (B, S) with lengths S, 3, 1, 4 (padding after), their lengths, and a target
    (B, T) starting with BOS; the same tensors on every call."""
    g = torch.Generator().manual_seed(1)
    lengths = torch.tensor([S, 3, 1, 4][:B])
    src = torch.randint(4, V_SRC, (B, S), generator=g)
    src[torch.arange(S) >= lengths.unsqueeze(1)] = 0
    tgt_in = torch.randint(4, V_TGT, (B, T), generator=g)
    tgt_in[:, 0] = BOS
    return src, lengths, tgt_in


# --- nmt serve ------------------------------------------------------------------------------

SCRIPTS = REPO / "scripts"
DOCS_BUILD = REPO / "docs_build"
for _folder in (SCRIPTS, DOCS_BUILD):
    # The helpers that start a server (_serve_process, scripts/) and a browser (_chromium, docs_build/)
    # live beside the scripts that use them too; test modules import them, and the scripts they test,
    # from there, as the scripts do.
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))


@contextmanager
def serving(args: list[str], log: Path) -> Iterator[str]:
    """Run ``nmt serve args --port 0`` as a real process from REPO; yield its base URL once /health answers."""
    from _serve_process import server_process

    with server_process(args, log, timeout=PROC_TIMEOUT, cwd=REPO) as url:
        yield url


# --- the serve page in a browser ------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``slow`` and ``browser`` markers (pytest warns about unknown ones)."""
    config.addinivalue_line(
        "markers",
        "slow: minutes rather than seconds (the variants' learning tests, the documented commands, most ONNX "
        "kinds); make test leaves them out, make test-slow runs them, CI runs both",
    )
    config.addinivalue_line(
        "markers",
        "browser: needs headless Chromium, chromedriver and selenium (skipped without them; under CI=true a failure)",
    )


def under_ci() -> bool:
    """Whether this is CI's run (``CI=true``: .ci/run sets it, as most CI services do)."""
    return os.environ.get("CI", "").lower() == "true"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A ``browser`` test without a browser skips on a developer's machine and fails under CI,
    where .ci/run installs Chromium, so the page is never reported tested when it was not.
    Decided before the test's fixtures run, so a skip trains no model for nothing."""
    if item.get_closest_marker("browser") is None:
        return
    from _chromium import missing

    why = missing()
    if why is not None and under_ci():
        pytest.fail(f"CI=true and no headless browser: {why}", pytrace=False)
    if why is not None:
        pytest.skip(f"no headless browser: {why}")
