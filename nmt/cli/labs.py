"""The ``nmt lab`` command: one lecture figure and its table, from scratch."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from nmt.cli.options import ModuleOpt, ProgressOpt, progress_shown, use_modules
from nmt.cli.stopping import saved_on_stop

if TYPE_CHECKING:
    from nmt.labs.base import Size


class LabSize(str, Enum):
    """The sizes of ``nmt lab`` (:data:`nmt.labs.base.SIZES`)."""

    tiny = "tiny"
    class_ = "class"
    full = "full"


def lab_cmd(
    command: typer.Context,
    name: Optional[str] = typer.Argument(None, help="The lab to run (nmt lab --list names them).", show_default=False),
    list_: bool = typer.Option(False, "--list", help="List the labs with their measured CPU minutes, and exit."),
    size: LabSize = typer.Option(
        LabSize.full,
        help="full: the lecture's experiment on Multi30k de-en, the length lab's on the Europarl sample "
        "(nmt data prepare europarl --config configs/europarl_de_en_bahdanau.yaml first) (minutes to hours on 2 CPU cores; nmt lab --list gives each lab's); "
        "class: the same on the class-size model with fewer updates and arms, at most 10 minutes on 2 cores; "
        "tiny: a few hundred synthetic pairs and a tiny model, the code path in seconds, not the result.",
    ),
    tiny: bool = typer.Option(False, "--tiny", help="Short for --size tiny."),
    mirror: Optional[Path] = typer.Option(
        None,
        help="Folder with the raw Multi30k files (class and full size; not the length lab's full size, which "
        "reads the prepared Europarl sample); without it they are downloaded.",
    ),
    out: Optional[Path] = typer.Option(
        None,
        help="Folder for NAME.md, NAME.png and NAME.json (default: runs/labs/NAME, at the other sizes "
        "runs/labs-SIZE/NAME; docs/labs/NAME and docs/labs/NAME/class hold the committed ones).",
    ),
    runs_dir: Optional[Path] = typer.Option(
        None,
        help="Folder for the lab's training runs (default: runs/labs/NAME/runs, shared by labs that "
        "train the same runs; at the other sizes under runs/labs-SIZE/); finished runs are reused.",
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace finished runs of another config (as nmt compare --force)."
    ),
    progress: Optional[bool] = ProgressOpt,
    jobs: int = typer.Option(
        1,
        min=1,
        help="Train up to N of the lab's runs at once, each in an nmt train process of its own (logs in "
        "the runs folder's logs/), as nmt compare --jobs does: for a machine that one run leaves partly idle. "
        "At most one per CPU core and per 512 MiB of memory.",
    ),
    dry_run: bool = typer.Option(
        False,
        help="Only list each run the lab needs as reuse (finished), resume (stopped part-way), train, "
        "replace, kept or refused, as nmt compare --dry-run does, and what would stop the lab; train nothing.",
    ),
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """Run one lecture lab: train (or reuse) its runs, then write its table, figure and numbers.

    Examples: nmt lab --list; nmt lab teacher_forcing --out docs/labs/teacher_forcing;
    nmt lab beam --size class --mirror DIR (local copies of the Multi30k files, else they are downloaded);
    nmt lab beam --tiny; nmt lab length --dry-run; nmt lab matrices --module examples/attention/cosine.py
    (an attention of your own beside nmt's)
    """
    use_modules(module)
    from nmt.labs import LAB_MODULES
    from nmt.labs.base import LabContext, load_lab, planned_lab_runs, run_lab
    from nmt.util.errors import UserError

    if list_:
        if name is not None:
            raise UserError("--list lists every lab: give it without a name")
        labs = [load_lab(lab_name) for lab_name in LAB_MODULES]
        width = max(len(lab.name) for lab in labs)
        typer.echo(
            f"{'lab':<{width}}  {'full':>8}  {'class':>8}  title (minutes on 2 CPU cores; full: as last run or estimated, class: measured)"
        )
        for lab in labs:
            typer.echo(f"{lab.name:<{width}}  {lab.cpu_minutes:>8}  {lab.class_minutes:>8.1f}  {lab.title}")
        return
    if name is None:
        raise UserError("name a lab (nmt lab --list names them)")
    source = command.get_parameter_source("size")  # typer's own click: its enum, compared by name
    size_given = source is not None and source.name != "DEFAULT"  # --size full typed, not the default
    if tiny and size is not LabSize.tiny and size_given:
        raise UserError(f"--tiny is --size tiny: give one of --tiny and --size {size.value}")
    chosen: Size = "tiny" if tiny else size.value
    lab = load_lab(name)
    ctx = LabContext(
        out=out or lab.default_out(chosen),
        runs_dir=runs_dir or lab.default_runs_dir(chosen),
        size=chosen,
        mirror=mirror,
        progress=progress_shown(progress),
        force=force,
        jobs=jobs,
    )
    if dry_run:
        typer.echo("\n".join(planned_lab_runs(name, ctx)))
        return
    with saved_on_stop(command):  # one line and 128 + the signal, the runs saved
        result = run_lab(name, ctx)
    typer.echo(result.table)
    typer.echo(f"nmt lab: wrote {ctx.out / name}.md, .png and .json", err=True)


def register(app: typer.Typer) -> None:
    """Add ``nmt lab`` to ``app``."""
    app.command("lab")(lab_cmd)
