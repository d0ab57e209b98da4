"""``nmt.train`` from Python: a config given as a mapping, the Run it returns, Ctrl-C in a notebook."""

from __future__ import annotations

import importlib
import json
import logging
from pathlib import Path

import pytest

import nmt
from conftest import interrupt_at
from nmt.util.errors import UserError
from nmt.util.logs import ensure_configured


def toy_config(root: Path, files: dict[str, list[str]], name: str) -> dict:
    """The toy task's tiny model (tests/conftest.py's toy_overrides) as the nested mapping a YAML file holds."""
    return {
        "name": name,
        "runs_dir": str(root / "runs"),
        "data": {"corpus": "local", "src": "xx", "tgt": "yy", "root": str(root / "data"), "local_files": files},
        "model": {"emb_size": 32, "hidden_size": 32, "dropout": 0.0, "emb_dropout": 0.0},
        "train": {"max_tokens": 600, "lr": 0.005, "log_every": 1, "valid_every": 10, "max_steps": 20, "threads": 1},
        "decode": {"batch_size": 32},
    }


def test_train_from_a_mapping_returns_its_run(toy_files, tmp_path):
    _, files = toy_files
    config = toy_config(tmp_path, files, "api")
    before = json.dumps(config, sort_keys=True)
    run = nmt.train(config, {"train.valid_max_sentences": 40}, progress=False)
    assert json.dumps(config, sort_keys=True) == before  # the caller's mapping is not changed
    assert isinstance(run, nmt.Run) and run.folder == tmp_path / "runs" / "api"
    assert run.best is not None and run.last is not None and run.stop_reason == "max_steps"
    assert run.config.train.valid_max_sentences == 40
    lines = [json.loads(line) for line in (run.folder / "metrics.jsonl").read_text().splitlines()]
    valid = [{k: v for k, v in e.items() if k != "event"} for e in lines if e["event"] == "valid"]
    assert [e["step"] for e in run.history] == [10, 20]
    assert list(run.history) == valid
    assert len(run.train_log) == 20
    assert run.history.to_pandas()["step"].tolist() == [10, 20]
    shown = str(run.history).splitlines()  # a notebook cell's `run.history` is a table, not a list of dicts
    assert shown[0].split()[:2] == ["step", "epoch"] and len(shown) == 4 and shown[-1].startswith("[2 rows x ")
    translated = run.translator().translate(["ant bee"])
    assert translated[0].text == nmt.load(run.best).translate(["ant bee"])[0].text
    assert "stopped (max_steps)" in run.summary


def test_a_keyboard_interrupt_saves_stops_and_resumes(toy_files, tmp_path, monkeypatch):
    """Ctrl-C (a real SIGINT, as a notebook's "interrupt kernel" sends) saves last.pt and stops the
    cell with TrainingInterrupted; nmt.train(resume=...) continues to the end."""
    _, files = toy_files
    interrupt_at(monkeypatch, 5)
    with pytest.raises(KeyboardInterrupt) as info:
        nmt.train(toy_config(tmp_path, files, "stopped"), progress=False)
    assert isinstance(info.value, nmt.TrainingInterrupted)
    run = info.value.run
    assert run.last is not None and run.stop_reason == "interrupted"
    assert "nmt.train(resume=" in str(info.value)
    monkeypatch.undo()
    resumed = nmt.train(resume=run.folder, progress=False)
    assert resumed.folder == run.folder and resumed.stop_reason == "max_steps"


def test_bad_input_raises_one_line(tmp_path):
    for call, needle in (
        (lambda: nmt.train({"model": {"hidden_size": -3}}), "hidden_size"),
        (lambda: nmt.train(tmp_path / "missing.yaml"), "missing.yaml"),
        (lambda: nmt.train(None, "train.lr=1"), "not one string"),
        (lambda: nmt.Run.open(tmp_path), "not a run folder"),
    ):
        with pytest.raises(UserError, match=needle) as info:
            call()
        assert "\n" not in str(info.value)


def test_the_library_sets_up_the_cli_log_only_where_none_is(monkeypatch):
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", logging.WARNING)
    ensure_configured()
    assert len(root.handlers) == 1 and root.level == logging.INFO
    ensure_configured()  # a second call adds nothing
    assert len(root.handlers) == 1


def test_in_a_jupyter_kernel_the_library_logs_warnings_only_unless_asked(monkeypatch, capsys):
    """A class's training cell shows no INFO lines; nmt's logger set to INFO shows them again."""
    import sys
    import types

    from nmt.util import logs

    class ZMQInteractiveShell:  # what ipykernel's get_ipython() returns, by its name
        pass

    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=ZMQInteractiveShell))
    assert logs.in_kernel()
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", logging.NOTSET)
    ensure_configured()
    assert root.level == logging.WARNING
    nmt_log = logging.getLogger("nmt.training")
    nmt_log.info("model: 1 parameters")
    assert "model: 1 parameters" not in capsys.readouterr().err
    before = logging.getLogger("nmt").level
    logging.getLogger("nmt").setLevel("INFO")  # what the docs tell a class to write, to see them
    try:
        nmt_log.info("asked for")
    finally:
        logging.getLogger("nmt").setLevel(before)
    assert "asked for" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))
    assert not logs.in_kernel()  # a terminal's IPython or plain Python: INFO as the CLI logs


def test_nmt_train_is_the_function_and_no_package():
    """The stages are nmt.training and nmt.evaluation, so the functions need no trick, and an old
    module path (``import nmt.train.loop``) fails when imported instead of finding a function."""
    import nmt.api
    import nmt.training.loop

    assert nmt.train is nmt.api.train and nmt.evaluate is nmt.api.evaluate and nmt.compare is nmt.api.compare
    assert nmt.training.loop.Trainer is not None
    for old in ("nmt.train", "nmt.train.loop", "nmt.evaluate", "nmt.evaluate.compare", "nmt.compare"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)


def test_nmt_shows_every_name_of_the_library():
    import nmt.api

    assert sorted(nmt._EXPORTS) == sorted(nmt.api.__all__)
    assert all(getattr(nmt, name) is getattr(nmt.api, name) for name in nmt._EXPORTS)
