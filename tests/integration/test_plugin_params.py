"""An energy's options of its own (examples/attention/lowrank.py declares ``rank`` as a pydantic
model): read from ``model.attention.params``, checked with one-line errors naming the option,
filled in where ``nmt config`` and a saved run show them, building the model they describe, kept by
a checkpoint that a fresh process translates with, swept by ``nmt compare --sweep`` and honoured
by ``--match-params``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from example_runs import nmt_cli

import nmt
from conftest import run_cli, toy_overrides
from nmt import config as C
from nmt.model.build import build_model
from nmt.util import registry
from nmt.util.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "attention" / "lowrank.py"


@pytest.fixture(autouse=True)
def lowrank_allowed(isolated_registries: None) -> None:
    registry.allow([str(EXAMPLE)])


def lowrank(*sets: str) -> C.Config:
    return C.load(None, ["model.attention.type=lowrank", "model.attention.key_map=identity", *sets])


def test_params_are_checked_filled_in_and_build_the_model_they_describe() -> None:
    assert lowrank().model.attention.params == {"rank": 8}
    cfg = lowrank("model.attention.params.rank=4")
    assert cfg.model.attention.params == {"rank": 4}
    model = build_model(cfg.model, 50, 50)
    (u,) = [p for name, p in model.named_parameters() if name.endswith("score.u")]
    assert u.shape[-1] == 4
    for bad, words in (
        (
            "model.attention.params.rank=0",
            r"^model\.attention\.params\.rank: Input should be greater than or equal to 1",
        ),
        ("model.attention.params.ranks=4", r"^model\.attention\.params\.ranks: Extra inputs are not permitted"),
        ("model.attention.params.rank=four", r"^model\.attention\.params\.rank: Input should be a valid integer"),
    ):
        with pytest.raises(ConfigError, match=words) as caught:
            lowrank(bad)
        assert "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match=r"energy mlp takes no params"):
        C.load(None, ["model.attention.params.rank=4"])


def test_nmt_config_shows_them_and_a_checkpoint_keeps_them_for_a_fresh_process(tmp_path, toy_files, capsys) -> None:
    code, out, err = run_cli(
        [
            "config",
            "--module",
            str(EXAMPLE),
            "--set",
            "model.attention.type=lowrank",
            "--set",
            "model.attention.params.rank=4",
        ],
        capsys,
    )
    assert code == 0 and yaml.safe_load(out)["model"]["attention"]["params"] == {"rank": 4}, err
    _, files = toy_files
    sets = toy_overrides(tmp_path, files, train__max_steps=4, model__attention__type="lowrank")
    run = nmt.train(None, [*sets, "model.attention.params.rank=3"], progress=False, modules=[str(EXAMPLE)])
    assert yaml.safe_load((run.folder / "config.yaml").read_text())["model"]["attention"]["params"] == {"rank": 3}
    (tmp_path / "in.txt").write_text("ein hund\n", encoding="utf-8")
    done = nmt_cli(
        tmp_path,
        "translate",
        "--checkpoint",
        str(run.folder / "checkpoints" / "last.pt"),
        "-i",
        "in.txt",
        "--module",
        str(EXAMPLE),
    )
    assert done.returncode == 0 and done.stdout.strip(), done.stderr


def test_compare_sweeps_them_and_matches_parameters_with_them(tmp_path, toy_files, capsys) -> None:
    _, files = toy_files
    sets = [s for s in toy_overrides(tmp_path, files) if not s.startswith(("name=", "runs_dir="))]
    args = ["compare", "--runs-dir", str(tmp_path / "cmp"), "--no-progress", "--module", str(EXAMPLE)]
    args += [*(a for s in sets for a in ("--set", s)), "--seeds", "1", "--steps", "2", "--dry-run"]
    code, out, err = run_cli(
        [*args, "--set", "model.attention.type=lowrank", "--sweep", "model.attention.params.rank=2,16"], capsys
    )
    assert code == 0, err
    runs = [line.split()[-1].rsplit("/", 1)[-1] for line in out.strip().splitlines()]
    assert len(runs) == 2 and runs[0] != runs[1] and all("2" in r or "16" in r for r in runs), runs
    code, out, err = run_cli([*args, "--variants", "bahdanau,lowrank", "--match-params", "bahdanau"], capsys)
    assert code == 0 and "lowrank_match-bahdanau_s1" in out, err
