"""A run trained beside a copy of one of examples/attention/ (an attention or normalization from a file
outside the package), in a fresh ``nmt`` process: what the tests of user code share."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from conftest import toy_overrides

REPO = Path(__file__).resolve().parents[2]


def nmt_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``nmt ARGS`` in a fresh process (nothing imported or registered beforehand), in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "nmt", *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def as_yaml(overrides: list[str]) -> dict:
    """--set overrides as the nested mapping a YAML config holds."""
    raw: dict = {}
    for assignment in overrides:
        key, value = assignment.split("=", 1)
        node = raw
        *sections, last = key.split(".")
        for section in sections:
            node = node.setdefault(section, {})
        node[last] = yaml.safe_load(value)
    return raw


def trained_beside(folder: Path, example: Path, attention: dict[str, Any], files: Any, steps: int, inputs: str) -> Path:
    """``folder`` holding a copy of ``example``, a config (the toy task, ``steps`` updates) whose
    ``model.attention`` is ``attention`` (naming the copy by import path), ``in.txt`` holding ``inputs``,
    and the run ``nmt train`` made of it, started from the repository root (not the config's folder)."""
    shutil.copy(example, folder / example.name)
    raw = as_yaml(toy_overrides(folder, files, train__max_steps=steps, train__valid_every=steps))
    raw["model"]["attention"] = attention
    config = folder / f"{example.stem}.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    (folder / "in.txt").write_text(inputs, encoding="utf-8")
    done = nmt_cli(REPO, "train", "--config", str(config), "--no-progress")
    assert done.returncode == 0, done.stderr
    return folder
