"""What the notebooks read from their setting, refused in one line where it is wrong (issue 70, then
issue 72's nmt-class.yaml): minutes that are no positive number (digits other than 0-9 such as ``²``
passed ``str.isdigit`` and then crashed in ``float`` when they came from an environment variable), and
notebook 08's archive in the setting's ``alignments`` folder when it is no tar, lacks a member, holds
an empty one or a gold file of one line.  Each cell runs alone, as a kernel runs it; nothing trains."""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path

import nbformat
import pytest
import yaml

import nmt
from conftest import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
ALIGN = next(p for p in NOTEBOOKS if p.name.startswith("08_"))
MEMBERS = {"de": "DeEn/de", "en": "DeEn/en", "gold": "DeEn/alignmentDeEn.talp"}


def code_cell(path: Path, marker: str) -> str:
    return next(
        c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code" and marker in c.source
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
@pytest.mark.parametrize("minutes", ["²", "١٠", "½", "8²", "⁵.5", "ten", 0, -3, True, float("nan"), float("inf")])
def test_class_minutes_that_are_no_positive_number_are_refused_naming_the_file(
    path, minutes, tmp_path, monkeypatch, capsys
):
    setup = code_cell(path, "CLASS = nmt.class_setting()")
    (tmp_path / "nmt-class.yaml").write_text(yaml.safe_dump({"minutes": minutes}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        nmt.UserError, match=r"nmt-class\.yaml: minutes .*: give the minutes a training run may take"
    ) as refused:
        exec(compile(setup, "setup", "exec"), {})
    assert "\n" not in str(refused.value)


def archive(folder: Path, members: dict[str, bytes]) -> Path:
    """DeEnGoldAlignment.tar.gz in ``folder`` holding ``members`` (name in the archive -> bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "DeEnGoldAlignment.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def pairs(n: int) -> dict[str, bytes]:
    """An archive's three members for ``n`` pairs of one-word sentences, linked 1-1."""
    return {
        MEMBERS["de"]: "Hund\n".encode("latin-1") * n,
        MEMBERS["en"]: b"dog\n" * n,
        MEMBERS["gold"]: b"1-1\n" * n,
    }


def run_gold_cell(folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    setting = nmt.ClassSetting(alignments=folder)  # `alignments: FOLDER` in nmt-class.yaml
    names = {"tarfile": tarfile, "tempfile": tempfile, "Path": Path, "nmt": nmt, "SMOKE": False, "CLASS": setting}
    exec(compile(code_cell(ALIGN, "SMOKE_GOLD = ["), "gold", "exec"), names)
    return names


def refused(folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    with pytest.raises(ValueError) as error:
        run_gold_cell(folder, monkeypatch)
    message = str(error.value)
    assert "\n" not in message and str(folder / "DeEnGoldAlignment.tar.gz") in message, message
    return message


def test_an_archive_that_is_no_tar_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "DeEnGoldAlignment.tar.gz").write_bytes(b"not a tar at all")
    assert "not the RWTH archive" in refused(tmp_path, monkeypatch)


def test_an_archive_without_a_member_is_one_line_naming_it(tmp_path, monkeypatch):
    members = pairs(508)
    del members[MEMBERS["gold"]]
    archive(tmp_path, members)
    message = refused(tmp_path, monkeypatch)
    assert "not the RWTH archive" in message and MEMBERS["gold"] in message


@pytest.mark.parametrize("member", list(MEMBERS.values()))
def test_an_archive_with_an_empty_member_is_one_line(tmp_path, monkeypatch, member):
    archive(tmp_path, {**pairs(508), member: b""})
    assert "where the RWTH set has 508 pairs" in refused(tmp_path, monkeypatch)


def test_a_gold_file_of_one_line_is_one_line(tmp_path, monkeypatch):
    archive(tmp_path, {**pairs(508), MEMBERS["gold"]: b"1-1\n"})
    assert "508 German, 508 English and 1 gold lines" in refused(tmp_path, monkeypatch)


def test_a_malformed_gold_link_names_the_archive_not_a_temporary_folder(tmp_path, monkeypatch):
    archive(tmp_path, {**pairs(508), MEMBERS["gold"]: b"1-1\n" * 3 + b"1-x\n" + b"1-1\n" * 504})
    message = refused(tmp_path, monkeypatch)
    assert f"DeEnGoldAlignment.tar.gz/{MEMBERS['gold']}: line 4: '1-x' is not a link" in message
    assert tempfile.gettempdir() not in message.replace(str(tmp_path), "")


def test_a_well_formed_archive_reads_until_the_pair_it_draws(tmp_path, monkeypatch):
    """The made-up archive has 508 pairs but not RWTH's drawn pair: the cell reads them all and stops there."""
    archive(tmp_path, pairs(508))
    with pytest.raises(ValueError, match="is not in list"):
        run_gold_cell(tmp_path, monkeypatch)
