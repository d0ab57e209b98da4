"""The notebooks' one settings file, nmt-class.yaml (issue 72, item 4): read from the folder or its
parent, relative paths from the file's folder, every wrong field refused in one line naming the file and
the field, a lecturer's pack found beside the notebooks, and ``nmt class setting`` writing what a
notebook reads back (and nothing where it would not read)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

import nmt
from conftest import run_cli
from nmt.labs.classroom import FILE_NAME, class_setting


def written(folder: Path, **fields: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / FILE_NAME).write_text(yaml.safe_dump(fields), encoding="utf-8")
    return folder


def test_without_a_file_every_field_has_its_default(tmp_path):
    setting = class_setting(tmp_path)
    assert setting == nmt.ClassSetting() and setting.source is None
    assert setting.overrides == {"train.time_budget_min": None}, "None lifts the class config's 10-minute cap"
    assert "no nmt-class.yaml here or in the parent folder" in str(setting)


def test_the_file_is_read_in_the_folder_or_its_parent_and_paths_from_its_own_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("NMT_DATA_MIRROR", raising=False)
    (tmp_path / "copies").mkdir()
    written(tmp_path, mirror="copies", minutes=8)
    (tmp_path / "notebooks").mkdir()
    setting = class_setting(tmp_path / "notebooks")
    assert setting.source == tmp_path / FILE_NAME
    assert setting.mirror == tmp_path / "copies" and setting.minutes == 8.0
    assert setting.overrides == {"train.time_budget_min": 8.0}
    assert os.environ["NMT_DATA_MIRROR"] == str(tmp_path / "copies"), "data.mirror's fallback for every run"
    assert "after 8 minutes" in str(setting)


def test_the_smoke_setting_has_no_time_limit(tmp_path):
    setting = class_setting(written(tmp_path, setting="smoke", minutes=3))
    assert setting.smoke and setting.overrides == {}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"setting": "lecture"}, "setting 'lecture': give class or smoke"),
        ({"minutes": "8²"}, "minutes '8²': give the minutes"),
        ({"minutes": 0}, "minutes 0: give the minutes"),
        ({"minutes": True}, "minutes True: give the minutes"),
        ({"mirror": "nowhere"}, "mirror nowhere: no such folder"),
        ({"alignments": 3}, "alignments 3: give a folder's path"),
        ({"pack": "nowhere"}, "pack nowhere: no such folder"),
        ({"minute": 8}, "unknown field(s) minute; the fields are setting, mirror, minutes, alignments, pack"),
    ],
)
def test_a_wrong_field_is_one_line_naming_the_file_and_the_field(tmp_path, fields, message):
    written(tmp_path, **fields)
    with pytest.raises(nmt.UserError) as refused:
        class_setting(tmp_path)
    assert str(refused.value).startswith(f"{tmp_path / FILE_NAME}: ") and message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_file_that_is_no_mapping_is_refused(tmp_path):
    (tmp_path / FILE_NAME).write_text("- class\n", encoding="utf-8")
    with pytest.raises(nmt.UserError, match="a mapping of setting, mirror, minutes, alignments, pack expected"):
        class_setting(tmp_path)


def test_a_folder_named_class_pack_that_is_no_pack_is_refused(tmp_path):
    (tmp_path / "class-pack").mkdir()
    with pytest.raises(nmt.UserError, match=r"no pack\.json, so not a pack that nmt class pack made"):
        class_setting(tmp_path)


def test_nmt_class_setting_writes_what_a_notebook_reads(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("NMT_DATA_MIRROR", raising=False)
    (tmp_path / "notebooks" / "copies").mkdir(parents=True)
    code, out, _ = run_cli(
        [
            "class",
            "setting",
            "--folder",
            str(tmp_path / "notebooks"),
            "--mirror",
            str(tmp_path / "notebooks" / "copies"),
            "--minutes",
            "7.5",
        ],
        capsys,
    )
    assert code == 0 and "after 7.5 minutes" in out
    assert yaml.safe_load((tmp_path / "notebooks" / FILE_NAME).read_text()) == {
        "setting": "class",
        "mirror": "copies",  # relative to the file's folder: the folder moves with it
        "minutes": 7.5,
    }
    assert class_setting(tmp_path / "notebooks").mirror == tmp_path / "notebooks" / "copies"
    code, out, _ = run_cli(["class", "setting", "--folder", str(tmp_path / "notebooks"), "--show"], capsys)
    assert code == 0 and "Multi30k read from" in out


def test_nmt_class_setting_keeps_the_old_file_when_the_new_one_would_be_refused(tmp_path, capsys):
    written(tmp_path, setting="smoke")
    code, _, err = run_cli(["class", "setting", "--folder", str(tmp_path), "--minutes", "-1"], capsys)
    assert code == 2 and "minutes -1.0: give the minutes" in err and err.count("\n") == 1
    assert yaml.safe_load((tmp_path / FILE_NAME).read_text()) == {"setting": "smoke"}


def test_show_writes_nothing_and_takes_no_field(tmp_path, capsys):
    code, _, err = run_cli(["class", "setting", "--folder", str(tmp_path), "--show", "--smoke"], capsys)
    assert code == 2 and "--show prints the setting and writes nothing" in err
    assert not (tmp_path / FILE_NAME).exists()
