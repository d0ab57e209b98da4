"""An export folder's files are a fixed set of names per format, never whatever export.json lists.

An export.json edited to list a file of the user's (``"notes": "notes.txt"``, or the source
SentencePiece model renamed to ``thesis.tex``) made ``nmt export --force`` delete that file, and
the engines load the folder.  Now ``--force`` replaces only the names an export of that format
writes (:data:`nmt.engine.manifest.EXPORT_FILES`), and reading export.json refuses any entry that
is not one of them, in one line naming it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from nmt import config as C
from nmt.data.prepare import load_prepared
from nmt.decode import release
from nmt.engine.manifest import ENGINES, EXPORT_FILES, MANIFEST, ExportError, Manifest, read_manifest, write_manifest
from nmt.export.release import write_release
from nmt.model.build import build_model
from nmt.run import checkpoint as ckpt
from nmt.run.state import TrainState

CPU = torch.device("cpu")


@pytest.fixture()
def exported(tmp_path: Path, toy_prepared: Path) -> tuple[Path, Path]:
    """A checkpoint of a tiny freshly initialized RNN and its safetensors export."""
    _, tok, _ = load_prepared(toy_prepared)
    cfg = C.load(None, ["model.hidden_size=16", "model.emb_size=8"])
    model = build_model(cfg.model, tok.vocab_size, tok.vocab_size)
    tokenizers = {"src": tok.model_bytes, "tgt": tok.model_bytes}
    path = ckpt.save(
        tmp_path / "step7.pt",
        ckpt.Checkpoint(cfg.model_dump(mode="json"), model.state_dict(), tokenizers, TrainState(step=7)),
    )
    return path, write_release(path, tmp_path / "release", force=False)


def _edit_files(folder: Path, change: dict[str, str], drop: tuple[str, ...] = ()) -> None:
    raw = json.loads((folder / MANIFEST).read_text())
    raw["files"] = {**{k: v for k, v in raw["files"].items() if k not in drop}, **change}
    (folder / MANIFEST).write_text(json.dumps(raw))


def test_a_file_added_to_export_json_is_not_deleted_by_force(exported: tuple[Path, Path]) -> None:
    checkpoint, folder = exported
    (folder / "notes.txt").write_text("mine")
    _edit_files(folder, {"notes": "notes.txt"})
    with pytest.raises(ExportError, match=r"notes") as info:
        write_release(checkpoint, folder, force=True)
    assert "\n" not in str(info.value)
    assert (folder / "notes.txt").read_text() == "mine"


def test_a_renamed_entry_is_not_deleted_by_force(exported: tuple[Path, Path]) -> None:
    checkpoint, folder = exported
    (folder / "spm.src.model").unlink()
    (folder / "thesis.tex").write_text("chapter one")
    _edit_files(folder, {"src_spm": "thesis.tex"})
    with pytest.raises(ExportError, match=r"thesis\.tex"):
        write_release(checkpoint, folder, force=True)
    assert (folder / "thesis.tex").read_text() == "chapter one"


@pytest.mark.parametrize(
    ("change", "drop", "named"),
    [
        ({"notes": "notes.txt"}, (), "notes"),
        ({"src_spm": "thesis.tex"}, (), "thesis.tex"),
        ({"weights": "model.bin"}, (), "model.bin"),  # a CTranslate2 name in a safetensors export
    ],
    ids=["added", "renamed", "another-format-s-name"],
)
def test_loading_refuses_an_entry_an_export_never_holds(
    exported: tuple[Path, Path], change: dict[str, str], drop: tuple[str, ...], named: str
) -> None:
    _, folder = exported
    for name in change.values():
        (folder / name).write_text("mine")
    _edit_files(folder, change, drop)
    with pytest.raises(ExportError, match=f"{named}.*safetensors export") as info:
        release.load_release(folder, CPU)
    assert "\n" not in str(info.value)
    with pytest.raises(ExportError, match=named):
        read_manifest(folder)


def test_force_replaces_an_unaltered_export(exported: tuple[Path, Path]) -> None:
    checkpoint, folder = exported
    write_release(checkpoint, folder, force=True)
    assert release.load_release(folder, CPU).step == 7
    assert {p.name for p in folder.iterdir()} == {MANIFEST, *EXPORT_FILES["safetensors"].values()}


@pytest.mark.parametrize("fmt", sorted(ENGINES))
def test_every_format_has_its_fixed_names_and_refuses_others(tmp_path: Path, fmt: str) -> None:
    """Each format's own names read back; a name of the user's under a known role does not."""
    names = EXPORT_FILES[fmt]
    assert names and MANIFEST not in names.values()
    folder = tmp_path / fmt
    folder.mkdir()
    for name in names.values():
        (folder / name).write_bytes(b"")
    manifest = Manifest(format=fmt, arch="transformer", src_vocab=8, tgt_vocab=8, decode={}, files=dict(names))
    write_manifest(folder, manifest)
    assert read_manifest(folder, fmt).files == names
    role = next(iter(names))
    (folder / "mine.txt").write_text("mine")
    write_manifest(folder, Manifest(**{**manifest.__dict__, "files": {**names, role: "mine.txt"}}))
    with pytest.raises(ExportError, match=rf"{role}: 'mine\.txt'.*{fmt} export") as info:
        read_manifest(folder, fmt)
    assert "\n" not in str(info.value)
