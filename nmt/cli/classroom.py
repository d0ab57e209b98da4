"""``nmt class``: what a lecturer (or a student on their own machine) sets up before the notebooks run.

``nmt class setting`` writes the notebooks' one settings file, ``nmt-class.yaml``
(:mod:`nmt.labs.classroom`); ``nmt class pack`` trains the baseline a class compares against and
packs it (:mod:`nmt.labs.class_pack`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from nmt.cli.options import ProgressOpt, progress_shown
from nmt.cli.stopping import saved_on_stop

class_app = typer.Typer(
    help="Set up a class: the notebooks' setting file, and the baseline a lecturer trains once for every student.",
    no_args_is_help=True,
)


@class_app.command("setting")
def setting_cmd(
    folder: Path = typer.Option(
        Path("."), help="The notebooks' folder: the file is FOLDER/nmt-class.yaml, read there and one folder below."
    ),
    smoke: bool = typer.Option(
        False, "--smoke", help="The smoke setting: seconds per notebook on synthetic data (else the class setting)."
    ),
    mirror: Optional[Path] = typer.Option(
        None, help="Folder with the raw Multi30k files, read instead of downloading them."
    ),
    minutes: Optional[float] = typer.Option(
        None, help="Stop each class-setting training run after this many minutes too (a limit for a busy machine)."
    ),
    alignments: Optional[Path] = typer.Option(
        None,
        help="Folder of DeEnGoldAlignment.tar.gz for notebook 08 (default: data/alignments/, where "
        "nmt data fetch-alignments puts it).",
    ),
    pack: Optional[Path] = typer.Option(
        None, help="A lecturer's pack (nmt class pack) elsewhere than FOLDER/class-pack/, where it is found anyway."
    ),
    show: bool = typer.Option(False, "--show", help="Print the setting the notebooks in FOLDER read; write nothing."),
) -> None:
    """Write the notebooks' setting, FOLDER/nmt-class.yaml, and print what a notebook will read from it.

    Paths are written relative to FOLDER where they lie under it. Examples: nmt class setting --folder
    notebooks --mirror ../shared/data/multi30k; nmt class setting --smoke; nmt class setting --show
    """
    from nmt.labs.classroom import FILE_NAME, class_setting, write_setting
    from nmt.util.errors import UserError

    if show:
        if smoke or any(value is not None for value in (mirror, minutes, alignments, pack)):
            raise UserError("--show prints the setting and writes nothing: give it alone (with --folder)")
        typer.echo(str(class_setting(folder, hand_on_mirror=False)))
        return
    values = {
        "setting": "smoke" if smoke else "class",
        "mirror": _spelled(mirror, folder),
        "minutes": minutes,
        "alignments": _spelled(alignments, folder),
        "pack": _spelled(pack, folder),
    }
    written = write_setting(folder / FILE_NAME, values)
    typer.echo(str(written))


def _spelled(path: Optional[Path], folder: Path) -> Optional[str]:
    """``path`` as the setting file (in ``folder``) should hold it: relative to the folder where it lies
    under it, else absolute; None for None."""
    if path is None:
        return None
    resolved = path.expanduser().resolve()
    try:
        return str(resolved.relative_to(folder.resolve()))
    except ValueError:
        return str(resolved)


@class_app.command("pack")
def pack_cmd(
    command: typer.Context,
    out: Path = typer.Option(
        Path("class-pack"), help="The pack's folder; students put it (or its .tar.gz unpacked) beside the notebooks."
    ),
    seeds: str = typer.Option("1,2,3", help="The baseline's seeds, which each student's arm then trains too."),
    steps: Optional[int] = typer.Option(
        None, min=1, help="Updates per run (default 400 in the class setting, 20 with --smoke)."
    ),
    smoke: bool = typer.Option(False, "--smoke", help="A tiny synthetic pack in seconds (the tests' and a dry run's)."),
    mirror: Optional[Path] = typer.Option(
        None, help="Folder with the raw Multi30k files (else $NMT_DATA_MIRROR, else they are downloaded)."
    ),
    archive: bool = typer.Option(False, "--archive", help="Also write OUT.tar.gz, one file to hand out or host."),
    jobs: int = typer.Option(1, min=1, help="Train up to N runs at once, as nmt compare --jobs does."),
    progress: Optional[bool] = ProgressOpt,
) -> None:
    """Train the baseline of notebook 07's comparison (Bahdanau, class config, greedy test2016 BLEU) once, for a class.

    A notebook that finds the pack trains only the student's energy, at the pack's seeds and updates,
    and compares it with these runs seed by seed. An interrupted pack is made again from where it stopped. Example: nmt class pack --jobs 2 --archive
    """
    from nmt.comparison.plan import parse_list
    from nmt.labs.class_pack import make_pack
    from nmt.util.errors import UserError

    chosen = tuple(parse_list(seeds, "seeds", int))
    if mirror is not None:
        if not mirror.is_dir():
            raise UserError(f"--mirror {mirror}: no such folder")
        os.environ["NMT_DATA_MIRROR"] = str(mirror.resolve())  # data.mirror's fallback, for the runs' processes too
    with saved_on_stop(command):
        made = make_pack(
            out, smoke=smoke, seeds=chosen, steps=steps, jobs=jobs, progress=progress_shown(progress), archive=archive
        )
    typer.echo(f"{made.folder}: {made.summary()}")
    if archive:
        typer.echo(f"{made.folder.name}.tar.gz: the same in one file (tar xzf it beside the notebooks)")


def register(app: typer.Typer) -> None:
    """Add ``nmt class`` to ``app``."""
    app.add_typer(class_app, name="class")
