"""A config's code runs only where nmt trains from a config the user passes, or where its module is
allowed by name: resuming a run, reading a run's saved config (``Run.open``, a comparison's groups),
printing a config, preparing data from it and planning a comparison import nothing it names.

Each refusal is checked against a marker module that leaves a file behind when imported, placed
where a careless import would look for it: beside the config, in the run folder and in the working
folder.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import nmt
from conftest import run_cli, toy_overrides
from nmt import config as C
from nmt.comparison.groups import variant_flops
from nmt.config.attention_space import ATTENTIONS
from nmt.config.named_code import importing_config_code
from nmt.config.schedules import TF_SCHEDULES
from nmt.training.entry import run_training
from nmt.util import registry
from nmt.util.errors import UserError

MARKER_MODULE = """\
import pathlib

import nmt

pathlib.Path(__file__).with_name("IMPORTED").write_text("imported")


class Evil(nmt.Energy):
    defaults = {"key_map": "linear"}

    def forward(self, q, k):
        return q @ k.transpose(-1, -2)


def sched(step, train):
    return 1.0
"""

NAMED = {
    "attention": ("model", "attention", "type", "marker_evil:Evil"),
    "schedule": ("train", "tf_schedule", None, "marker_evil:sched"),
}


def plant(*folders: Path) -> None:
    """The marker module in each folder."""
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "marker_evil.py").write_text(MARKER_MODULE, encoding="utf-8")


def imported(root: Path) -> bool:
    return any(root.rglob("IMPORTED"))


def name_code(raw: dict, what: str) -> dict:
    """``raw`` with its attention or its schedule named by the marker's import path."""
    section, key, sub, path = NAMED[what]
    node = raw.setdefault(section, {})
    if sub is None:
        node[key] = path
    else:
        node.setdefault(key, {})[sub] = path
        node[key].pop("energy", None)
    return raw


@pytest.fixture()
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The working folder (tmp_path/work) and a configs folder, each holding the marker module."""
    plant(tmp_path / "work", tmp_path / "configs")
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.syspath_prepend(str(tmp_path / "work"))  # on the path too, as with PYTHONPATH
    for table in (ATTENTIONS, TF_SCHEDULES):
        monkeypatch.setattr(table, "_entries", dict(table._entries))
    allowed = registry._ALLOWED.set(frozenset())  # nothing allowed by an earlier test's --module
    yield tmp_path
    registry._ALLOWED.reset(allowed)
    sys.modules.pop("marker_evil", None)


@pytest.mark.parametrize("what", ["attention", "schedule"])
def test_resume_imports_nothing_a_runs_config_names(planted: Path, toy_files, capsys, what: str) -> None:
    _, files = toy_files
    run_training(None, toy_overrides(planted, files, train__max_steps=1), progress=False)
    run = planted / "runs" / "toy"
    plant(run)
    saved = run / "config.yaml"
    saved.write_text(yaml.safe_dump(name_code(yaml.safe_load(saved.read_text()), what)), encoding="utf-8")
    code, _out, err = run_cli(["train", "--resume", str(run), "--no-progress"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "code outside nmt" in err and "--module marker_evil" in err
    assert not imported(planted)
    with pytest.raises(UserError, match="modules=\\['marker_evil'\\]"):
        nmt.train(resume=run, progress=False)
    assert not imported(planted)
    with pytest.raises(UserError, match="code outside nmt"):
        _ = nmt.Run.open(run).config
    assert not imported(planted)


@pytest.mark.parametrize("what", ["attention", "schedule"])
def test_reading_printing_and_planning_from_a_config_import_nothing(planted: Path, capsys, what: str) -> None:
    config = planted / "configs" / "downloaded.yaml"
    config.write_text(yaml.safe_dump(name_code({"name": "x"}, what)), encoding="utf-8")
    for argv in (
        ["config", "--config", str(config)],
        ["data", "prepare", "synthetic", "--config", str(config)],
        ["compare", "--config", str(config), "--dry-run", "--seeds", "1", "--steps", "2"],
    ):
        code, _out, err = run_cli(argv, capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, (argv, err)
        assert "--module marker_evil" in err, err
        assert not imported(planted), argv
    code, out, err = run_cli(["config", "--config", str(config), "--module", "marker_evil"], capsys)
    assert code == 0 and "marker_evil:" in out, err  # allowed by name: imported, and printed
    assert imported(planted)


def test_a_saved_config_admits_only_allowed_code_even_while_a_comparison_trains(planted: Path) -> None:
    saved = planted / "configs" / "config.yaml"
    saved.write_text(yaml.safe_dump(name_code({}, "attention")), encoding="utf-8")
    with importing_config_code(), pytest.raises(UserError, match="code outside nmt"):
        C.load(saved, saved=True)
    with pytest.raises(UserError, match="code outside nmt"):
        variant_flops(None, ["model.attention.type=marker_evil:Evil"])  # nmt compare-groups, from report.json
    assert not imported(planted)
    with importing_config_code():
        assert C.load(saved, import_code=False).model.attention.type == "marker_evil:Evil"  # the user's config
    assert imported(planted)
