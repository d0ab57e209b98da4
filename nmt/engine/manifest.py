"""``export.json``: what an export folder holds, read before any of its files, and how folders are written.

Every folder ``nmt export`` writes (safetensors for the torch engine, ONNX for onnxruntime, a
CTranslate2 model) holds one ``export.json``: its format and the version of that layout, the
nmt that wrote it, the model kind, the vocabulary sizes, the run's decode options (the search
defaults a translating engine starts from) and the files the folder must hold, each under the
one name its format gives it (:data:`EXPORT_FILES`).  Reading it first turns every way a folder
can be wrong (not an export, another program's JSON, a layout this nmt does not read, another
engine's format, a file deleted since, a file listed that no export holds) into one line before
any engine loads anything.

How a folder is written (whole, in a hidden sibling) is :mod:`nmt.engine.export_folder`.  This
module imports no torch: the onnxruntime and ctranslate2 engines run without it.

It also describes the model (:class:`ModelDescription`: attention type, languages, parameter
count, the run's config), counted and labelled at export time where torch holds the weights, so
that ``nmt serve`` says of an export what it says of the checkpoint (GET /models), whichever
engine runs it.  That key, ``model``, came after the first folders of format 1 were written, and
it is optional rather than a new :data:`FORMAT_VERSION`: a format version says how to *run* a
folder, and a reader that does not know a description can still translate with it.  So a folder
written before it still loads everywhere (its description is null: unknown, as before), a
folder written with it loads in an nmt that predates it (unknown keys are ignored), and an
export handed to someone without its checkpoint never needs exporting again.  A ``model`` that
is present must be whole and well typed, like every other key.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Optional

from nmt import __version__
from nmt.run.paths import CONFIG
from nmt.util.errors import UserError, short_repr
from nmt.util.fileio import atomic_write_bytes

MANIFEST = "export.json"
FORMAT_VERSION = 1
"""The layout of export folders this nmt writes and reads (1: the first)."""

ENGINES = {"safetensors": "torch", "onnx": "onnxruntime", "ctranslate2": "ctranslate2"}
"""Each export format and the ``--engine`` that runs it."""
ARCHS = ("rnn", "transformer")
SRC_SPM, TGT_SPM = "src_spm", "tgt_spm"
"""Roles of the SentencePiece models in :attr:`Manifest.files`; every format holds both."""
SPM_FILES = {SRC_SPM: "spm.src.model", TGT_SPM: "spm.tgt.model"}
EXPORT_FILES: dict[str, dict[str, str]] = {
    "safetensors": {"weights": "model.safetensors", "config": CONFIG, **SPM_FILES},  # the run's config.yaml
    "onnx": {"encoder": "encoder.onnx", "step": "step.onnx", **SPM_FILES},
    "ctranslate2": {  # the names CTranslate2's ``spec.save`` gives: one shared vocabulary, or one per side
        "weights": "model.bin",
        "ct2_config": "config.json",
        "shared_vocabulary": "shared_vocabulary.json",
        "source_vocabulary": "source_vocabulary.json",
        "target_vocabulary": "target_vocabulary.json",
        **SPM_FILES,
    },
}
"""Every file an export of each format may hold besides export.json, by its role in :attr:`Manifest.files`:
the one definition the exporters write by, the only names ``nmt export --force`` deletes, and the only
entries export.json may list (a name read from the file is never trusted: an edited export.json would
make a user's ``notes.txt`` or ``thesis.tex`` one of the export's files)."""
MAX_MANIFEST_BYTES = 1 << 20
"""Largest export.json read (a real one is under 16 KiB, most of it the run's config)."""


class ExportError(UserError):
    """An export folder that cannot be written or read: not an export, altered, or for another engine."""


@dataclass(frozen=True)
class ModelDescription:
    """What GET /models says of a model, as the checkpoint's torch engine would say it.

    Written by the exporter from the run's config and the model it loaded (so an engine without
    torch, or without the config, can tell it); read back into
    :class:`~nmt.decode.model_info.ModelInfo`.
    """

    attention: str  # nmt.decode.model_info.attention_label of the run's config
    languages: tuple[str, str]  # data.src, data.tgt
    parameters: int  # the model's parameters, each tied tensor once
    config: dict[str, Any]  # the run's whole config, as the torch engine shows it


@dataclass(frozen=True)
class Manifest:
    """The contents of ``export.json``.

    ``decode`` is the run's decode section as saved (beam, length_penalty, max_len_a, max_len_b,
    min_len, no_repeat_ngram, coverage_penalty, batch_size, ...); ``files`` maps a role
    (:data:`SRC_SPM`, ``weights``, ...) to a file name in the folder; ``step`` is the update the
    exported checkpoint was saved at; ``graph`` what an engine needs to know of the format's files
    (ONNX: the names of the arrays its two graphs pass), empty for the others; ``model`` what a
    server says of the model, None in a folder written before nmt recorded it (see the module).
    """

    format: str  # one of ENGINES
    arch: str  # one of ARCHS: model.arch of the run
    src_vocab: int
    tgt_vocab: int
    decode: dict[str, Any]
    files: dict[str, str]
    step: int = 0
    graph: dict[str, Any] = field(default_factory=dict)  # what the engine needs of the format (onnx: field names)
    model: Optional[ModelDescription] = None  # optional in the file: absent from the first folders of format 1
    nmt_version: str = __version__
    format_version: int = FORMAT_VERSION


OPTIONAL_KEYS = frozenset({"model"})
"""Keys of :class:`Manifest` that a folder of this :data:`FORMAT_VERSION` may lack (it was written
before they were added); every other key must be there."""


def write_manifest(folder: Path, manifest: Manifest) -> Path:
    """Write ``folder/export.json`` atomically; its path."""
    path = Path(folder) / MANIFEST
    atomic_write_bytes(path, (json.dumps(asdict(manifest), indent=2) + "\n").encode("utf-8"))
    return path


def read_manifest(folder: Path, expected_format: Optional[str] = None) -> Manifest:
    """The manifest of an export folder, checked; an :class:`ExportError` of one line if the folder is
    not an nmt export, its export.json is foreign or altered, its layout is not :data:`FORMAT_VERSION`,
    its format is not ``expected_format`` (when given), or a file it lists is missing."""
    folder = Path(folder)
    manifest = parse_manifest(folder, expected_format)
    for role, name in manifest.files.items():
        if not (folder / name).is_file():
            raise ExportError(
                f"{folder} lacks {name} ({role}), which its {MANIFEST} lists; export the checkpoint again"
            )
    return manifest


def check_vocab_sizes(folder: Path, manifest: Manifest, src_size: int, tgt_size: int) -> None:
    """Refuse SentencePiece models whose sizes are not export.json's (a model from another export swapped
    in: it would feed the graph ids it has no row for, or decode with the wrong pieces)."""
    for role, found, said in ((SRC_SPM, src_size, manifest.src_vocab), (TGT_SPM, tgt_size, manifest.tgt_vocab)):
        if found != said:
            raise ExportError(
                f"{Path(folder) / manifest.files[role]} has {found} pieces, {MANIFEST} says {said} "
                "(files from two exports?); export the checkpoint again"
            )


def parse_manifest(folder: Path, expected_format: Optional[str] = None) -> Manifest:
    """``folder``'s export.json read and checked as :func:`read_manifest` does, but whatever files the
    folder holds: what tells an export nmt wrote (and may replace) from a folder of someone else's.
    Another format than ``expected_format`` (when given) is said before any of its file names are."""
    raw = _read_json(folder)
    version = raw["format_version"]
    if isinstance(version, bool) or not isinstance(version, int) or version != FORMAT_VERSION:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION
        raise ExportError(
            f"{folder} was exported by nmt {_version_text(raw['nmt_version'])} in export format "
            f"{short_repr(version, 20)}; this nmt ({__version__}) reads format {FORMAT_VERSION}: "
            + ("upgrade nmt to load it" if newer else "export the checkpoint again with this nmt")
        )
    missing = [f.name for f in fields(Manifest) if f.name not in raw and f.name not in OPTIONAL_KEYS]
    if missing:
        raise ExportError(
            f"{folder / MANIFEST} lacks {', '.join(missing)} (an altered file?); export the checkpoint again"
        )
    values = {f.name: raw[f.name] for f in fields(Manifest) if f.name in raw}
    values["model"] = _description(folder, raw.get("model"))
    manifest = Manifest(**values)
    _check_types(folder, manifest)
    if expected_format is not None and manifest.format != expected_format:
        raise ExportError(
            f"{folder} holds {_a(manifest.format)} export; --engine {ENGINES[expected_format]} needs "
            f"{_a(expected_format)} export (give --engine {ENGINES[manifest.format]} for this folder)"
        )
    _check_files(folder, manifest)
    return manifest


def _read_json(folder: Path) -> dict[str, Any]:
    """export.json as a dict that names an nmt export's layout version, or an ExportError."""
    path = folder / MANIFEST
    if not folder.is_dir():
        what = "no such folder" if not folder.exists() else "not a folder"
        raise ExportError(f"{folder}: {what}; give the folder that `nmt export` wrote")
    if not path.is_file():
        raise ExportError(
            f"{folder} is not an nmt export (no {MANIFEST}); write one with `nmt export --checkpoint CKPT --format FORMAT -o {folder}`"
        )
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_MANIFEST_BYTES + 1)
        raw = json.loads(data) if len(data) <= MAX_MANIFEST_BYTES else None
    except OSError as exc:
        raise ExportError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past Python's stack
        raw = None
    if not isinstance(raw, dict) or "format_version" not in raw or "nmt_version" not in raw:
        raise ExportError(f"{path} is not an nmt export manifest (written by another program, or altered)")
    return raw


def _version_text(version: Any) -> str:
    """An nmt version as read from a manifest: plain when it is a short string, else quoted and cut."""
    return version if isinstance(version, str) and len(version) <= 20 else short_repr(version, 20)


def _a(word: str) -> str:
    """``word`` with its indefinite article ("an onnx", "a ctranslate2")."""
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _plain_name(name: Any) -> bool:
    """Whether ``name`` is one file directly in the folder (no path, no parent, not the manifest) whose
    name prints as itself (no NUL, newline or other control character, which nmt never writes)."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..", MANIFEST)
        and "/" not in name
        and "\\" not in name
        and _printable(name)
    )


def _printable(text: str) -> bool:
    """Whether ``text`` holds no control character (NUL, newline, escape), so a message can quote it as is."""
    return not any(unicodedata.category(c) == "Cc" for c in text)


def _description(folder: Path, raw: Any) -> Optional[ModelDescription]:
    """The ``model`` key read back: None when absent (an older folder), else whole and well typed or
    an ExportError naming it.  Keys a later nmt may add to it are ignored, as at the top level."""
    if raw is None:
        return None
    languages = raw.get("languages") if isinstance(raw, dict) else None
    if (
        not isinstance(raw, dict)
        or not isinstance(raw.get("attention"), str)
        or not raw["attention"]
        or not isinstance(languages, list)
        or len(languages) != 2
        or not all(isinstance(code, str) and code for code in languages)
        or not _is_int(raw.get("parameters"))
        or raw["parameters"] < 1
        or not isinstance(raw.get("config"), dict)
    ):
        raise ExportError(
            f"{folder / MANIFEST}: model is {short_repr(raw)}, which nmt never writes "
            "(an altered file?); export the checkpoint again"
        )
    return ModelDescription(raw["attention"], (languages[0], languages[1]), raw["parameters"], raw["config"])


def _check_types(folder: Path, m: Manifest) -> None:
    """Refuse, in one line naming the key, a value of the wrong type or out of range."""
    problems = {
        "format": not isinstance(m.format, str) or m.format not in ENGINES,  # a list or dict is unhashable
        "arch": not isinstance(m.arch, str) or m.arch not in ARCHS,
        "src_vocab": not _is_int(m.src_vocab) or m.src_vocab < 1,
        "tgt_vocab": not _is_int(m.tgt_vocab) or m.tgt_vocab < 1,
        "step": not _is_int(m.step) or m.step < 0,
        "nmt_version": not isinstance(m.nmt_version, str),
        "decode": not isinstance(m.decode, dict),
        "graph": not isinstance(m.graph, dict),
        "files": not isinstance(m.files, dict)
        or not all(isinstance(role, str) and _printable(role) and _plain_name(name) for role, name in m.files.items()),
    }
    for key, bad in problems.items():
        if bad:
            raise ExportError(
                f"{folder / MANIFEST}: {key} is {short_repr(getattr(m, key))}, which nmt never writes "
                "(an altered file?); export the checkpoint again"
            )


def _check_files(folder: Path, m: Manifest) -> None:
    """Refuse, in one line naming it, a ``files`` entry that is not its role's name in :data:`EXPORT_FILES`
    for the folder's format (a role no export has, or a file of the user's under a role an export has)."""
    names = EXPORT_FILES[m.format]
    for role, name in m.files.items():
        if names.get(role) != name:
            raise ExportError(
                f"{folder / MANIFEST}: files lists {role}: {short_repr(name)}, which {_a(m.format)} export never "
                f"holds (its files are {', '.join(sorted(set(names.values())))}; an altered file?); "
                "export the checkpoint again"
            )


def is_export_folder(path: Path) -> bool:
    """Whether ``--model``/``--checkpoint`` names a folder (read as an export) rather than a checkpoint file.

    Any folder counts, export.json or not, so that :func:`read_manifest` says what is wrong with
    one that is not an export instead of the checkpoint reader calling it "a directory".
    """
    return Path(path).is_dir()
