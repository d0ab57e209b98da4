"""The class setting of the notebooks: one small YAML file, ``nmt-class.yaml``, instead of environment variables.

A notebook reads it in its setup cell with ``nmt.class_setting()``; ``nmt class setting`` writes it
(a lecturer once for a room, or a student for their own machine), and a lecturer's pack
(:mod:`nmt.labs.class_pack`) is found beside it.  Every field has a default, so a folder without the
file runs the class setting on Multi30k, downloaded::

    setting: class        # class (Multi30k, the class-size model) or smoke (seconds, synthetic data)
    mirror: null          # a folder with the raw Multi30k files, read instead of downloading
    minutes: null         # each class-setting training run also stops after this many minutes
    alignments: null      # the folder of DeEnGoldAlignment.tar.gz (notebook 08), if not data/alignments/
    pack: null            # a lecturer's pack (nmt class pack); null: class-pack/ of this folder if present

Relative paths are read from the file's own folder, so a file in ``notebooks/`` may say ``mirror:
../data-copy``.  A field the file does not know, a setting other than the two, minutes that are no
positive number or a folder that does not exist is refused in one line naming the file and the field.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from nmt.labs.class_pack import PACK_FOLDER, ClassPack, read_pack
from nmt.util.errors import UserError
from nmt.util.fileio import atomic_write_bytes

FILE_NAME = "nmt-class.yaml"
"""The class setting's file, looked for in the current folder and then in its parent."""
SETTINGS = ("class", "smoke")
FIELDS = ("setting", "mirror", "minutes", "alignments", "pack")
MIRROR_VARIABLE = "NMT_DATA_MIRROR"
"""What ``data.mirror`` falls back to (nmt.data.sources); the setting's mirror is handed on through it."""


@dataclass(frozen=True)
class ClassSetting:
    """What a notebook needs to know about the room it runs in (the module's docstring lists the fields)."""

    setting: str = "class"
    mirror: Optional[Path] = None
    minutes: Optional[float] = None
    alignments: Optional[Path] = None
    pack: Optional[ClassPack] = None
    source: Optional[Path] = field(default=None, compare=False)
    """The file read; None where there was none and every field has its default."""

    @property
    def smoke(self) -> bool:
        return self.setting == "smoke"

    @property
    def overrides(self) -> dict[str, Any]:
        """Config overrides for every class-setting training run: the time limit (``None`` lifts the class
        config's own 10-minute cap, so a run ends after its updates on a fast or a slow machine)."""
        return {} if self.smoke else {"train.time_budget_min": self.minutes}

    def lines(self) -> list[str]:
        """What the setup cell prints: the setting, where it came from, and each field that is not its default."""
        where = (
            f"from {_shown(self.source)}"
            if self.source
            else f"no {FILE_NAME} here or in the parent folder: the defaults"
        )
        lines = [f"setting {self.setting} ({where})"]
        if self.mirror:
            lines.append(f"Multi30k read from {_shown(self.mirror)}, not downloaded")
        if not self.smoke:
            lines.append(
                f"each training run stops after its updates or after {self.minutes:g} minutes, whichever comes first"
                if self.minutes
                else "each training run stops after its updates (minutes: N in the setting would also stop it)"
            )
        if self.alignments:
            lines.append(f"RWTH gold alignments looked for in {_shown(self.alignments)}")
        if self.pack:
            lines.append(f"lecturer's pack {_shown(self.pack.folder)}: {self.pack.summary()}")
        return lines

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _shown(path: Path) -> str:
    """``path`` as a notebook prints it: relative to the current folder where it is this folder's or its parent's."""
    try:
        return os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd().parent) else str(path)
    except ValueError:  # another drive (Windows)
        return str(path)


def find_setting_file(folder: Path) -> Optional[Path]:
    """``nmt-class.yaml`` in ``folder`` or its parent (a notebook runs in notebooks/ of a checkout)."""
    for candidate in (folder / FILE_NAME, folder.parent / FILE_NAME):
        if candidate.is_file():
            return candidate
    return None


def class_setting(folder: Optional[Path] = None, *, hand_on_mirror: bool = True) -> ClassSetting:
    """The class setting of ``folder`` (default the current folder): its ``nmt-class.yaml`` or its
    parent's, else the defaults; a lecturer's pack named there or in ``class-pack/`` of the folder.

    With ``hand_on_mirror`` the mirror becomes this process's ``$NMT_DATA_MIRROR``, the
    fallback of every config's ``data.mirror``, so data preparation, training and ``nmt.compare``'s
    processes all read the local files without an override in each call."""
    folder = Path.cwd() if folder is None else Path(folder)
    path = find_setting_file(folder)
    values = _read(path) if path else {}
    base = path.parent if path else folder
    setting = values.get("setting", "class")
    if setting not in SETTINGS:
        raise UserError(f"{path}: setting {setting!r}: give class or smoke")
    mirror = _folder(values.get("mirror"), base, path, "mirror")
    alignments = _folder(values.get("alignments"), base, path, "alignments")
    minutes = _minutes(values.get("minutes"), path)
    pack_folder = _folder(values.get("pack"), base, path, "pack")
    if pack_folder is None and (folder / PACK_FOLDER).is_dir():
        pack_folder = folder / PACK_FOLDER
    pack = read_pack(pack_folder) if pack_folder else None
    if pack is not None and pack.setting != setting:
        raise UserError(
            f"{pack.folder}: a pack of the {pack.setting} setting, where the setting is {setting} ({path or 'the default'})"
        )
    if hand_on_mirror and mirror is not None:
        os.environ[MIRROR_VARIABLE] = str(mirror)
    return ClassSetting(setting, mirror, minutes, alignments, pack, path)


def _read(path: Path) -> dict[str, Any]:
    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise UserError(f"{path}: not a readable YAML file ({type(error).__name__})") from None
    values = {} if values is None else values
    if not isinstance(values, dict):
        raise UserError(f"{path}: a mapping of {', '.join(FIELDS)} expected, not {type(values).__name__}")
    unknown = sorted(str(key) for key in values if key not in FIELDS)
    if unknown:
        raise UserError(f"{path}: unknown field(s) {', '.join(unknown)}; the fields are {', '.join(FIELDS)}")
    return values


def _folder(value: Any, base: Path, path: Optional[Path], name: str) -> Optional[Path]:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise UserError(f"{path}: {name} {value!r}: give a folder's path")
    folder = (base / Path(value).expanduser()) if not Path(value).expanduser().is_absolute() else Path(value)
    if not folder.is_dir():
        raise UserError(f"{path}: {name} {value}: no such folder ({folder})")
    return folder


def _minutes(value: Any, path: Optional[Path]) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise UserError(f"{path}: minutes {value!r}: give the minutes a training run may take, e.g. 8")
    return float(value)


def write_setting(path: Path, values: dict[str, Any]) -> ClassSetting:
    """Write ``values`` (fields of :data:`FIELDS`, None left out) to ``path`` after checking them as a
    notebook will read them; returns the setting read back."""
    kept = {key: values[key] for key in FIELDS if values.get(key) is not None}
    text = "# The class setting of the notebooks in this folder (nmt class setting --help says each field).\n"
    text += yaml.safe_dump(kept, sort_keys=False) if kept else "{}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    previous = path.read_bytes() if path.is_file() else None
    atomic_write_bytes(path, text.encode("utf-8"))
    try:
        return class_setting(path.parent, hand_on_mirror=False)
    except UserError:
        if previous is None:
            path.unlink()
        else:
            atomic_write_bytes(path, previous)
        raise
