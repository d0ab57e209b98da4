"""Executed copies of the notebooks for the documentation site: notebooks/*.ipynb run in one setting
into docs/notebooks/<name>.ipynb, each copy saying when, how and where it ran.

notebooks/ stays without outputs (tests/integration/test_notebooks.py checks it); the site shows
these copies instead (mkdocs-jupyter, mkdocs.yml). The copy's first cell and its metadata
(``nmt_execution``) record the setting, the date, the command and the machine, so a smoke-setting
copy, whose numbers say nothing about translation, can never pass for a class-setting result::

    python scripts/execute_notebooks.py --setting smoke            # seconds each: tiny synthetic runs
    python scripts/execute_notebooks.py --setting class 01 03      # about 10 minutes each on 2 CPU cores

The class setting reads Multi30k de-en from $NMT_DATA_MIRROR (or downloads it). Every notebook of
one call runs in the same working folder (``--workdir``, default a temporary one), which gets a
link to configs/, so the class notebooks prepare the corpus once and find the repository's configs.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from _bench_common import machine

REPO = Path(__file__).resolve().parents[1]
SCRIPT = "execute_notebooks.py"
SETTINGS = {
    "smoke": "the **smoke setting**: tiny models trained for a few updates on a few hundred synthetic "
    "pairs, so that every cell runs in seconds. Its numbers and figures show that the code runs; they "
    "say nothing about translation, and the class setting's copy replaces this one once it has run.",
    "class": "the **class setting**: Multi30k de-en and the class-size models, as the notebook is meant "
    "to be run in class; the numbers and figures below are that run's.",
}
CELL_TIMEOUT = 1800
"""Seconds before a cell counts as hung (a class-setting training cell takes minutes)."""


def commit() -> str:
    """The checkout's commit, marked when the tree has changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True)
    except OSError:
        return "unknown"
    return head.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "") or "unknown"


def record(nb: Any, setting: str, command: str, when: str, where: str, code: str) -> None:
    """Put what the copy is in its metadata and in a first cell that the site shows above the notebook."""
    nb.metadata["nmt_execution"] = {"setting": setting, "date": when, "command": command, "machine": where}
    nb.metadata["nmt_execution"]["commit"] = code
    label = (
        f"> **An executed copy.** This page is `notebooks/{nb.metadata.get('nmt_name', '')}` run in "
        f"{SETTINGS[setting]}\n>\n> Run on {when} with `{command}` (commit {code}) on {where}."
    )
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(label))


def execute(source: Path, out: Path, setting: str, workdir: Path, command: str) -> None:
    """Run ``source`` in ``setting`` with ``workdir`` as its current folder and write the executed copy to ``out``."""
    nb = nbformat.read(source, as_version=4)
    env = {
        "NMT_NOTEBOOK": setting,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    os.environ.update(env)  # the kernel inherits this process's environment
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    )
    client.execute()
    when = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    nb.metadata["nmt_name"] = source.name
    record(nb, setting, command, when, machine(), commit())
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog=SCRIPT, description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="notebooks by name or prefix (e.g. 01); default all")
    parser.add_argument("--setting", choices=sorted(SETTINGS), required=True)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "notebooks", help="folder of the copies")
    parser.add_argument("--workdir", type=Path, help="the notebooks' current folder (default: a temporary one)")
    args = parser.parse_args(argv)
    sources = sorted((REPO / "notebooks").glob("*.ipynb"))
    if args.names:
        sources = [s for s in sources if any(s.stem == n or s.stem.startswith(n) for n in args.names)]
        if not sources:
            sys.exit(f"{SCRIPT}: error: no notebook matches {' '.join(args.names)}")
    command = shlex.join(["python", f"scripts/{SCRIPT}", *argv])
    with tempfile.TemporaryDirectory(prefix="nmt-notebooks-") as scratch:
        workdir = (args.workdir or Path(scratch)).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        if not (workdir / "configs").exists():
            (workdir / "configs").symlink_to(REPO / "configs")
        for source in sources:
            target = args.out / source.name
            print(f"{SCRIPT}: {source.name} in the {args.setting} setting -> {target}", flush=True)
            execute(source, target, args.setting, workdir, command)


if __name__ == "__main__":
    main(sys.argv[1:])
