"""What a lab is, where it writes, and the three sizes it runs at.

A lab trains (or reuses) the runs it needs under ``runs_dir``, then writes into ``out`` one
Markdown table (``<name>.md``), one figure (``<name>.png``) and the numbers behind both
(``<name>.json``).  Three sizes (:data:`SIZES`):

- ``full`` reads Multi30k de-en from ``mirror`` (or downloads it) with the lectures' Bahdanau
  config and takes the CPU time its ``cpu_minutes`` says on the reference machine (2 cores);
- ``class`` reads the same corpus with the class-size config (configs/multi30k_de_en_class.yaml)
  and fewer updates, arms or decodings, so that it runs within a class hour (``class_minutes``,
  measured, at most 10 on 2 cores) and still shows the lecture's point on real data;
- ``tiny`` runs the same code on a few hundred synthetic pairs with a tiny model in seconds, so
  the tests can run every lab.

Runs are fixed numbers of updates (as ``nmt compare`` trains them), so a lab trains the same runs
on a fast or a slow machine; its numbers match bit for bit where the runs had the same number of
CPU threads (docs/training.md, validation and stopping).
"""

from __future__ import annotations

import importlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional, TypeVar

from nmt.labs import LAB_MODULES
from nmt.util.errors import UserError
from nmt.util.fileio import atomic_write_bytes
from nmt.util.owned import check_ours, claim

if TYPE_CHECKING:
    from nmt.comparison.plan import Plan
    from nmt.comparison.runs import RunAction

PACKAGED_CONFIGS = Path(__file__).resolve().parent / "configs"
"""The base configs of the labs and the notebooks as the package ships them (links to the repository's
configs/ in a checkout), so both run outside a checkout, on Colab say."""


def lab_config(name: str) -> Path:
    """``configs/<name>`` where the current folder has it (a checkout's root: the path the lab pages
    name), else the copy the package ships, so a lab runs from any folder."""
    local = Path("configs") / name
    return local if local.is_file() else PACKAGED_CONFIGS / name


Size = Literal["tiny", "class", "full"]
SIZES: tuple[Size, ...] = ("tiny", "class", "full")
"""The sizes a lab runs at, smallest first (module docstring)."""

T = TypeVar("T")

FULL_CONFIG_NAME = "multi30k_de_en_bahdanau.yaml"
"""The base experiment of the full-size labs: Multi30k de-en, GRU 256, Bahdanau attention."""

CLASS_CONFIG_NAME = "multi30k_de_en_class.yaml"
"""The base experiment of the class-size labs: the class-size model, which learns more per update."""

TINY_CONFIG_NAME = "demo.yaml"
"""The base experiment of the tiny labs, shrunk by :data:`TINY_OVERRIDES`."""

TINY_OVERRIDES = (
    "data.synthetic_sizes={train: 600, valid: 20, test: 20}",
    "data.synthetic_max_words=8",
    "data.vocab_size=300",
    "model.emb_size=32",
    "model.hidden_size=32",
    "train.max_tokens=1000",
    "train.curriculum_epochs=0",
    "train.valid_max_sentences=20",
    "train.tensorboard=false",
    "train.valid_attention_map=false",
    "decode.batch_size=32",
)
"""A model and corpus small enough that a lab's runs take seconds: the code path, not the result."""


@dataclass(frozen=True)
class LabContext:
    """Where a lab reads and writes, and at which size it runs."""

    out: Path  # <name>.md, <name>.png and <name>.json go here
    runs_dir: Path  # the lab's training runs (reused when finished with the same config)
    size: Size = "full"  # tiny: the synthetic corpus (tests); class and full: Multi30k de-en (length, full: Europarl)
    mirror: Optional[Path] = None  # raw Multi30k files (class and full size); None downloads them
    progress: bool = True  # progress bars
    force: bool = False  # replace finished runs of another config (as nmt compare --force)
    jobs: int = 1  # runs trained at once, each in an nmt train process (as nmt compare --jobs)

    def __post_init__(self) -> None:
        if self.size not in SIZES:
            raise UserError(f"unknown lab size {self.size!r}; choose from {', '.join(SIZES)}")

    @property
    def tiny(self) -> bool:
        """Whether the lab runs on the synthetic corpus (whose test split is ``test``: :attr:`score_split`)."""
        return self.size == "tiny"

    @property
    def score_split(self) -> str:
        """The test split the lab's runs are scored on: Multi30k's test2016, or the synthetic corpus's test."""
        return "test" if self.tiny else "test2016"

    def pick(self, full: T, class_: T, tiny: T) -> T:
        """The value for this size."""
        return {"full": full, "class": class_, "tiny": tiny}[self.size]

    def base(self) -> tuple[Path, list[str]]:
        """The lab's base config and the overrides every run starts from."""
        if self.tiny:
            data_root = self.runs_dir / "data"
            return lab_config(TINY_CONFIG_NAME), [
                *TINY_OVERRIDES,
                f"data.root={data_root}",
                f"runs_dir={self.runs_dir}",
            ]
        mirror = [f"data.mirror={self.mirror}"] if self.mirror is not None else []
        config = CLASS_CONFIG_NAME if self.size == "class" else FULL_CONFIG_NAME
        return lab_config(config), [*mirror, f"runs_dir={self.runs_dir}"]

    def steps(self, full: int, class_: int, tiny: int = 12) -> int:
        """Updates per run at this size."""
        return self.pick(full, class_, tiny)

    def compare(self, plan: Plan, out: Optional[Path] = None) -> None:
        """Train (or reuse) the plan's runs and score them, as ``nmt compare`` does, with this
        lab's progress bars and ``--jobs``; the report goes to ``out`` (default: the compare's own)."""
        from nmt.comparison.command import run_compare

        run_compare(plan, out=out, progress=self.progress, jobs=self.jobs)


@dataclass(frozen=True)
class LabResult:
    """What a lab made: the Markdown table, the figure, and the numbers behind them (JSON)."""

    table: str
    figure: Path
    numbers: dict[str, Any]


@dataclass(frozen=True)
class Lab:
    """One lab: its name (``nmt lab NAME``), the lecture figure it makes, the CPU time it takes at
    full size on the reference machine, the function that runs it, and the comparisons (plans of
    ``nmt compare``) whose runs it trains or reuses, which ``run`` trains and ``nmt lab --dry-run`` lists."""

    name: str
    title: str
    cpu_minutes: int  # at full size on the reference machine (2 cores): as last run, or estimated
    class_minutes: float  # at class size, measured there too: at most 10
    run: Callable[[LabContext], LabResult]
    plans: Callable[[LabContext], list[Plan]]
    runs_group: str = ""  # labs that train the same runs share runs/labs/<group>/runs (default: the name)

    def default_out(self, size: Size) -> Path:
        """Where ``nmt lab`` writes without ``--out``: runs/labs/NAME, or runs/labs-SIZE/NAME."""
        return _size_folder(size) / self.name

    def default_runs_dir(self, size: Size) -> Path:
        """The lab's runs without ``--runs-dir``: shared by its group, and apart for each size, so a
        run of one size never meets (or, with --force, replaces) one of another."""
        return _size_folder(size) / (self.runs_group or self.name) / "runs"


def _size_folder(size: Size) -> Path:
    return Path("runs") / ("labs" if size == "full" else f"labs-{size}")


def load_lab(name: str) -> Lab:
    """The lab called ``name``; a UserError naming the known ones otherwise."""
    if name not in LAB_MODULES:
        raise UserError(f"unknown lab {name!r}; choose from {', '.join(LAB_MODULES)} (nmt lab --list)")
    lab = importlib.import_module(LAB_MODULES[name]).LAB
    assert isinstance(lab, Lab) and lab.name == name, f"{LAB_MODULES[name]}.LAB is not the lab {name!r}"
    return lab


def planned_lab_runs(name: str, ctx: LabContext) -> list[str]:
    """One line per run folder the lab needs, with what running it would do (as ``nmt compare
    --dry-run`` says: reuse, resume, train, replace, kept or refused), a folder that two of its
    comparisons share once; then a count of each action, and the error that would stop the lab
    before it trains anything (finished runs of another config, files nmt did not write), if any."""
    from nmt.comparison.command import planned_run_actions
    from nmt.comparison.runs import check_finished_work

    found: dict[Path, tuple[RunAction, str]] = {}
    for plan in load_lab(name).plans(ctx):
        for act, line in planned_run_actions(plan):
            found.setdefault(act.run_dir, (act, line))
    counts = Counter(act.action for act, _line in found.values())
    runs = f"{len(found)} run" + ("" if len(found) == 1 else "s")
    lines = [line for _act, line in found.values()]
    lines.append(f"{runs}: " + ", ".join(f"{n} {action}" for action, n in counts.items()))
    try:
        check_finished_work([act for act, _line in found.values()])
    except UserError as stop:
        lines.append(f"the lab would stop before training: {stop}")
    return lines


def lab_outputs(lab: Lab) -> tuple[str, str, str]:
    """The names a lab writes into its ``--out`` folder: its table, figure and numbers."""
    return f"{lab.name}.md", f"{lab.name}.png", f"{lab.name}.json"


def wrote_before_manifests(lab: Lab) -> Callable[[Path], bool]:
    """Whether a folder without a manifest holds this lab's outputs from before manifests: its
    NAME.json is the lab's numbers (a JSON object naming the lab and its title), which the lab wrote
    beside its table and figure.  A page alone, such as docs/labs/NAME.md, never counts."""

    def test(folder: Path) -> bool:
        try:
            numbers = json.loads((folder / f"{lab.name}.json").read_bytes())
        except (OSError, ValueError):
            return False
        return isinstance(numbers, dict) and numbers.get("lab") == lab.name and numbers.get("title") == lab.title

    return test


def check_outputs_are_ours(lab: Lab, out: Path) -> None:
    """Refuse, before any training, an ``out`` whose NAME.md, NAME.png or NAME.json this lab did not
    write (:mod:`nmt.util.owned`): a page beside the lab's folder, say ``--out docs/labs`` where
    docs/labs/NAME.md is the hand-written page, would be replaced."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is not a folder")
    check_ours(out, lab_outputs(lab), "--out", legacy=wrote_before_manifests(lab))


def run_lab(name: str, ctx: LabContext) -> LabResult:
    """Run one lab and write its table, figure and numbers into ``ctx.out``."""
    from nmt.comparison.jobs import check_jobs

    lab = load_lab(name)
    check_jobs(ctx.jobs)  # before anything is written
    check_outputs_are_ours(lab, ctx.out)
    claim(ctx.out, lab_outputs(lab))  # made with its folder; the lab may replace these from now on
    result = lab.run(ctx)
    numbers = {"lab": name, "title": lab.title, "size": ctx.size, "tiny": ctx.tiny, **result.numbers}
    atomic_write_bytes(ctx.out / f"{name}.json", json.dumps(numbers, indent=1).encode("utf-8"))
    atomic_write_bytes(ctx.out / f"{name}.md", f"# {lab.title}\n\n{result.table.rstrip()}\n".encode())
    return result
