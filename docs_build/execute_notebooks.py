"""Executed copies of the notebooks for the documentation site: notebooks/*.ipynb run in one setting
into docs/notebooks/<name>.ipynb, each copy saying when, how and where it ran.

notebooks/ stays without outputs (tests/integration/test_notebooks.py checks it); the site shows
these copies instead (mkdocs-jupyter, mkdocs.yml). The copy's first cell and its metadata
(``nmt_execution``) record the setting, the date, the command and the machine, so a smoke-setting
copy, whose numbers say nothing about translation, can never pass for a class-setting result::

    python docs_build/execute_notebooks.py --setting smoke            # seconds each: tiny synthetic runs
    python docs_build/execute_notebooks.py --setting class 01 03      # about 10 minutes each on 2 CPU cores
    python docs_build/execute_notebooks.py --clean-only               # clean the copies in docs/notebooks again

A copy keeps what its cells printed and drew, not the noise around it: each cell's progress bars and
informational log lines are dropped, a training run's log becomes one summary line (its size, its
planned updates, its last validation and how long it took), warnings and errors stay, and absolute
paths of the machine that ran it become relative or neutral ones (:func:`clean`). The cleaning is
deterministic and a cleaned copy stays as it is, so ``--clean-only`` may run any number of times.

An exercise notebook (one with a lecturer's copy in notebooks/source/) runs as that copy, its answers
written, and its site copy shows the student version's cells with the outputs of that run.

The class setting reads Multi30k de-en from $NMT_DATA_MIRROR (or downloads it). Every notebook of
one call runs in the same working folder (``--workdir``, default a temporary one), which gets a
link to configs/, so the class notebooks prepare the corpus once and find the repository's configs,
and the notebooks' setting file, nmt-class.yaml (the setting, the mirror); ``--pack DIR`` copies a
lecturer's pack there as class-pack/, which notebook 07 then uses.
"""

from __future__ import annotations

import argparse
import bisect
import datetime
import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import nbformat
from nbclient import NotebookClient

from nmt.util.runtime import machine

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

LOG_START = re.compile(r"(?P<time>\d\d:\d\d:\d\d) (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) ")
"""The start of one of nmt's log records (nmt/util/logs.py: the time, the level, the message)."""
PIECE_END = re.compile(r"[\r\n]|(?=\d\d:\d\d:\d\d (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) )")
"""Where a piece of stderr ends: a line end, a carriage return (tqdm redraws its bar after one), or a log
record that starts right after a bar it interrupted (``...tok_s=4392]11:09:18 INFO valid step 1000``)."""
PROGRESS = re.compile(r"\d+%\||\d(?:it|batch|update)/s\b|\?(?:it|batch|update)/s|s/(?:it|batch|update)\b")
"""A tqdm bar: ``training:  44%|████▍     | 132/300 [02:46<03:45,  1.71s/update, epoch=1, loss=4.302, ...]``
(before one bar per run: ``epoch 2: ... 77/174 [...1.71s/batch...]``)."""
KEPT_LEVELS = ("WARNING", "ERROR", "CRITICAL")
"""Log records a copy keeps whole; the informational ones (data preparation, each validation) are noise
there, except what a training run's summary line takes from them."""
MODEL_LINE = re.compile(r"model: (?P<params>[\d,]+) parameters; .*?(?P<planned>\d+) updates planned")
VALID_LINE = re.compile(r"valid step (?P<step>\d+): (?P<scores>.*)")
MACHINE_PATH = re.compile(
    r"(?<![\w.~$<>-])/(?:work|home|root|tmp|Users|private|var/folders|mnt|scratch)/[^\s'\"<>;,:()\[\]]*"
)
"""An absolute path under a folder that only the machine that ran the notebook has (the data mirror
``/work/shared/data/multi30k``, a temporary folder, a home folder)."""


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


@dataclass
class TrainingLog:
    """What one training run's log says: the model's size, the updates planned, its last validation."""

    start: str  # the time of the model line, HH:MM:SS
    params: str
    planned: str
    end: str = ""
    last_valid: str = ""

    def summary(self) -> str:
        """The run's log in one line, as a copy keeps it."""
        start, end = (
            sum(int(part) * 60**i for i, part in enumerate(reversed(t.split(":")))) for t in (self.start, self.end)
        )
        minutes = ((end - start) % 86400) / 60  # a run past midnight ends "before" it started
        last = f"{minutes:.1f} min to the last validation, {self.last_valid}" if self.last_valid else "no validation"
        return f"[training] {self.params} parameters, {self.planned} updates planned; {last}\n"


def stderr_kept(streams: list[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """What a copy keeps of a cell's stderr, given as (output index, text) in order: warnings, errors and
    anything else that is neither a progress bar nor an informational log record, and for each training
    run one summary line where its last validation was logged.  Returned as (output index, order, text)."""
    text = "".join(chunk for _, chunk in streams)
    offsets = [0]
    for _, chunk in streams:
        offsets.append(offsets[-1] + len(chunk))

    def output_at(offset: int) -> int:
        return streams[min(bisect.bisect_right(offsets, offset), len(streams)) - 1][0]

    cuts = sorted({0, len(text), *(m.start() for m in PIECE_END.finditer(text))})
    kept: list[tuple[int, int, str]] = []
    runs: list[tuple[TrainingLog, int, int]] = []  # each run with where its summary goes
    level: Optional[str] = None  # the level of the log record that an indented line continues
    for order, (start, end) in enumerate(itertools.pairwise(cuts)):
        piece = text[start:end]
        if piece[:1] in ("\r", "\n"):
            piece, start = piece[1:], start + 1
        if not piece.strip():
            continue
        record = LOG_START.match(piece)
        if record:
            level, message = record["level"], piece[record.end() :]
            if model := MODEL_LINE.match(message):
                run = TrainingLog(record["time"], model["params"], model["planned"], end=record["time"])
                runs.append((run, output_at(start), order))
            elif (valid := VALID_LINE.match(message)) and runs:
                run = runs[-1][0]
                run.end, run.last_valid = record["time"], f"step {valid['step']}: {valid['scores']}"
                runs[-1] = (run, output_at(start), order)
            if level in KEPT_LEVELS:
                kept.append((output_at(start), order, piece + "\n"))
        elif PROGRESS.search(piece):
            level = None
        elif piece[0].isspace() and level is not None:  # a record's second line (validation's src/ref/hyp)
            if level in KEPT_LEVELS:
                kept.append((output_at(start), order, piece + "\n"))
        else:
            level = None
            kept.append((output_at(start), order, piece + "\n"))
    kept += [(index, order, run.summary()) for run, index, order in runs]
    return sorted(kept)


def machine_paths(workdir: Optional[Path] = None) -> list[tuple[str, str]]:
    """This machine's folders that a notebook's output may name, each with what a copy says instead,
    the longest first: the notebooks' working folder is ``.``, the checkout ``<repository>``, the data
    mirror ``$NMT_DATA_MIRROR``, the Python installation ``<site-packages>``/``<python>``, home ``~``."""
    named = {
        str(REPO): "<repository>",
        sysconfig.get_paths()["purelib"]: "<site-packages>",
        sysconfig.get_paths()["platlib"]: "<site-packages>",
        sysconfig.get_paths()["stdlib"]: "<python>",
        str(Path.home()): "~",
    }
    if os.environ.get("NMT_DATA_MIRROR"):
        named[os.environ["NMT_DATA_MIRROR"].rstrip("/")] = "$NMT_DATA_MIRROR"
    if workdir is not None:
        named[str(workdir)] = "."
    pairs: dict[str, str] = {}
    for path, neutral in named.items():
        for spelling in (path, os.path.realpath(path)):
            if len(spelling) > 1:
                pairs.setdefault(spelling, neutral)
    return sorted(pairs.items(), key=lambda pair: -len(pair[0]))


def neutral_paths(text: str, paths: list[tuple[str, str]]) -> str:
    """``text`` with this machine's absolute paths said in a relative or neutral form: the folders of
    ``paths`` by their names, any other path under a machine's own folder (``/work/``, ``/home/``,
    ``/tmp/``, ...) as ``…/`` and its last part."""
    for path, neutral in paths:
        text = re.sub(re.escape(path) + r"(?![\w.-])", neutral.replace("\\", "\\\\"), text)

    def last_part(match: re.Match[str]) -> str:
        path, dot = (match[0][:-1], ".") if match[0].endswith(".") else (match[0], "")
        return "…/" + next((part for part in reversed(path.split("/")) if part), "") + dot

    return MACHINE_PATH.sub(last_part, text)


def clean_outputs(outputs: list[Any], paths: list[tuple[str, str]]) -> list[Any]:
    """A cell's outputs as a copy keeps them: stdout and every display as they were, stderr by
    :func:`stderr_kept`, adjacent streams of one name joined, machine paths made neutral."""
    errors = [(i, o.text) for i, o in enumerate(outputs) if o.output_type == "stream" and o.name == "stderr"]
    items: list[tuple[int, int, Any]] = [(i, 0, o) for i, o in enumerate(outputs) if o.get("name") != "stderr"]
    items += [(i, order, ("stderr", text)) for i, order, text in stderr_kept(errors)]
    cleaned: list[Any] = []
    for _, _, item in sorted(items, key=lambda item: item[:2]):
        if isinstance(item, tuple) or item.output_type == "stream":
            name, text = item if isinstance(item, tuple) else (item.name, item.text)
            if cleaned and cleaned[-1].output_type == "stream" and cleaned[-1].name == name:
                cleaned[-1].text += text
            else:
                cleaned.append(nbformat.v4.new_output("stream", name=name, text=text))
            continue
        cleaned.append(item)
    for output in cleaned:
        if output.output_type == "stream":
            output.text = neutral_paths(output.text, paths)
        for key, value in output.get("data", {}).items():
            if key.startswith("text/") and isinstance(value, str):
                output.data[key] = neutral_paths(value, paths)
        if output.output_type == "error":
            output.evalue = neutral_paths(output.evalue, paths)
            output.traceback = [neutral_paths(line, paths) for line in output.traceback]
    return cleaned


def clean(nb: Any, paths: list[tuple[str, str]]) -> None:
    """Clean an executed notebook in place (:func:`clean_outputs` for every code cell, machine paths
    out of its label and metadata); a cleaned notebook cleans to itself."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = clean_outputs(cell.outputs, paths)
    run = nb.metadata.get("nmt_execution")
    if run is not None:
        run["command"] = neutral_paths(run["command"], paths)
        if nb.cells and nb.cells[0].cell_type == "markdown":
            nb.cells[0].source = neutral_paths(nb.cells[0].source, paths)


def lecturers_copy(notebook: Path) -> Path:
    """What runs for the site: an exercise notebook's source in notebooks/source/ (its answers and
    hidden tests in it), else the notebook itself."""
    source = notebook.parent / "source" / notebook.name
    return source if source.is_file() else notebook


def as_students_see_it(nb: Any) -> Any:
    """An executed exercise notebook with its answers replaced by the stub and its hidden tests
    removed, as the student version shows them (docs_build/release_notebooks.py), outputs kept: the
    site shows the student's cells and what the answered notebook printed and drew."""
    from release_notebooks import without_answers  # docs_build/, this script's folder

    return without_answers(nb)


def with_repository(pythonpath: Optional[str]) -> str:
    """``pythonpath`` with the repository first, once: a second notebook in one process does not add it again."""
    rest = [p for p in (pythonpath or "").split(os.pathsep) if p and p != str(REPO)]
    return os.pathsep.join([str(REPO), *rest])


def execute(source: Path, out: Path, setting: str, workdir: Path, command: str) -> None:
    """Run ``source`` in ``setting`` with ``workdir`` as its current folder and write the executed copy
    to ``out``; an exercise notebook runs as its lecturer's copy (:func:`lecturers_copy`) and is
    written as the student sees it (:func:`as_students_see_it`)."""
    runs = lecturers_copy(source)
    nb = nbformat.read(runs, as_version=4)
    os.environ["PYTHONPATH"] = with_repository(os.environ.get("PYTHONPATH"))
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    )
    client.execute()
    if runs != source:
        nb = as_students_see_it(nb)
    clean(nb, machine_paths(workdir))
    when = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    nb.metadata["nmt_name"] = source.name
    record(nb, setting, command, when, machine(), commit())
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)


def write_setting(workdir: Path, setting: str, pack: Optional[Path]) -> None:
    """The notebooks' setting in ``workdir`` (``nmt-class.yaml``): ``setting``, Multi30k from
    $NMT_DATA_MIRROR where it is set, and a fresh copy of ``pack`` as ``class-pack/`` (the notebooks write
    the student's runs into it, never into the lecturer's)."""
    from nmt.labs.class_pack import PACK_FOLDER
    from nmt.labs.classroom import FILE_NAME
    from nmt.labs.classroom import write_setting as write

    if (workdir / PACK_FOLDER).exists():
        shutil.rmtree(workdir / PACK_FOLDER)
    if pack is not None:
        shutil.copytree(pack, workdir / PACK_FOLDER, symlinks=True)
    mirror = os.environ.get("NMT_DATA_MIRROR") if setting == "class" else None
    print(write(workdir / FILE_NAME, {"setting": setting, "mirror": mirror}), flush=True)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog=SCRIPT, description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="notebooks by name or prefix (e.g. 01); default all")
    parser.add_argument("--setting", choices=sorted(SETTINGS), help="the setting to run them in")
    parser.add_argument(
        "--clean-only",
        action="store_true",
        help="run nothing: clean the copies already in --out (progress bars, log noise, machine paths)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "notebooks", help="folder of the copies")
    parser.add_argument("--workdir", type=Path, help="the notebooks' current folder (default: a temporary one)")
    parser.add_argument(
        "--pack",
        type=Path,
        help="a lecturer's pack (nmt class pack), copied into the working folder as class-pack/ for the notebooks to find",
    )
    args = parser.parse_args(argv)
    if (args.setting is None) == (not args.clean_only):
        parser.error("give --setting to run the notebooks, or --clean-only to clean their copies")
    sources = sorted((REPO / "notebooks").glob("*.ipynb"))
    if args.names:
        sources = [s for s in sources if any(s.stem == n or s.stem.startswith(n) for n in args.names)]
        if not sources:
            sys.exit(f"{SCRIPT}: error: no notebook matches {' '.join(args.names)}")
    if args.clean_only:
        for target in (args.out / source.name for source in sources):
            if target.is_file():
                print(f"{SCRIPT}: cleaning {target}", flush=True)
                nb = nbformat.read(target, as_version=4)
                clean(nb, machine_paths(args.workdir.resolve() if args.workdir else None))
                nbformat.write(nb, target)
        return
    with tempfile.TemporaryDirectory(prefix="nmt-notebooks-") as scratch:
        workdir = (args.workdir or Path(scratch)).resolve()
        command = neutral_paths(shlex.join(["python", f"docs_build/{SCRIPT}", *argv]), machine_paths(workdir))
        workdir.mkdir(parents=True, exist_ok=True)
        if not (workdir / "configs").exists():
            (workdir / "configs").symlink_to(REPO / "configs")
        write_setting(workdir, args.setting, args.pack)
        for source in sources:
            target = args.out / source.name
            print(f"{SCRIPT}: {source.name} in the {args.setting} setting -> {target}", flush=True)
            execute(source, target, args.setting, workdir, command)


if __name__ == "__main__":
    main(sys.argv[1:])
