"""``nmt class pack`` (issue 72, item 3): the lecturer trains the baseline once; what the pack keeps is
what a comparison reuses, so a student's ``nmt.compare`` with the pack's arguments trains only the
student's arm and pairs it with the pack's seeds; an incomplete or foreign pack is refused in one line.
Tiny synthetic runs (``--smoke``), seconds each."""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

import nmt
from conftest import run_cli
from nmt.labs.class_pack import read_pack
from nmt.labs.classroom import class_setting


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A smoke pack made by the command, with its archive, in a folder of its own."""
    from nmt.cli import main

    folder = tmp_path_factory.mktemp("lecturer")
    before = Path.cwd()
    os.chdir(folder)  # a module fixture: monkeypatch is per test
    try:
        with pytest.raises(SystemExit) as done:
            main(["class", "pack", "--smoke", "--archive", "--no-progress"])
            raise SystemExit(0)
    finally:
        os.chdir(before)
    assert (done.value.code or 0) == 0
    return folder


def test_the_pack_keeps_what_a_comparison_reuses_and_no_optimizer_state(packed):
    pack = read_pack(packed / "class-pack")
    assert pack.setting == "smoke" and pack.seeds == [1, 2, 3] and pack.steps == 20
    manifest = json.loads((packed / "class-pack" / "pack.json").read_text())
    assert set(manifest["bleu"]) == {"1", "2", "3"} and manifest["nmt_version"] == nmt.__version__
    for seed in (1, 2, 3):
        run = packed / "class-pack" / "runs" / f"bahdanau_s{seed}"
        assert [p.name for p in (run / "checkpoints").iterdir()] == ["best.pt"]
        assert not (run / "tb").exists() and not (run / "attention").exists()
        assert (run / "compare-test" / "scored.json").is_file() and (run / "spm.src.model").is_file()
    with tarfile.open(packed / "class-pack.tar.gz") as archive:
        names = archive.getnames()
    assert "class-pack/pack.json" in names and "class-pack/runs/bahdanau_s2/checkpoints/best.pt" in names


def test_a_students_comparison_reuses_the_baseline_and_trains_only_the_new_arm(packed, tmp_path, monkeypatch):
    """Unpacked beside the notebooks: found without a setting file, and the baseline's checkpoints untouched."""
    monkeypatch.chdir(tmp_path)
    with tarfile.open(packed / "class-pack.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    (tmp_path / "nmt-class.yaml").write_text("setting: smoke\n", encoding="utf-8")
    pack = class_setting(tmp_path).pack
    assert pack is not None and pack.folder == tmp_path / "class-pack"
    best = {seed: (pack.runs / f"bahdanau_s{seed}" / "checkpoints" / "best.pt").read_bytes() for seed in pack.seeds}
    comparison = nmt.compare(**pack.compare_arguments(["bahdanau", "luong_dot"], tmp_path / "out"), progress=False)
    rows = {row["variant"]: row for row in comparison.records}
    assert rows["bahdanau"]["per_seed_bleu"] == pack.manifest["bleu"], "the pack's scores, read again"
    assert rows["luong_dot"]["seeds"] == [1, 2, 3] and rows["luong_dot"]["updates"] == 20
    for seed, weights in best.items():
        assert (pack.runs / f"bahdanau_s{seed}" / "checkpoints" / "best.pt").read_bytes() == weights
        assert (pack.runs / f"luong_dot_s{seed}" / "checkpoints" / "best.pt").is_file()


def test_the_baseline_must_come_first(packed):
    with pytest.raises(nmt.UserError, match="the pack's baseline is bahdanau: give it first"):
        read_pack(packed / "class-pack").compare_arguments(["luong_dot", "bahdanau"], Path("out"))


def test_a_pack_of_the_other_setting_is_refused(packed, tmp_path):
    (tmp_path / "class-pack").symlink_to(packed / "class-pack")
    with pytest.raises(nmt.UserError, match="a pack of the smoke setting, where the setting is class"):
        class_setting(tmp_path)


def test_an_incomplete_pack_names_what_it_lacks(packed, tmp_path, capsys):
    shutil.copytree(packed / "class-pack", tmp_path / "class-pack")
    (tmp_path / "class-pack" / "runs" / "bahdanau_s2" / "checkpoints" / "best.pt").unlink()
    with pytest.raises(nmt.UserError, match=r"an incomplete pack, without runs/bahdanau_s2/checkpoints/best\.pt"):
        read_pack(tmp_path / "class-pack")
    code, _, err = run_cli(["class", "pack", "--smoke", "--seeds", "1", "--out", str(tmp_path / "one")], capsys)
    assert code == 2 and "at least two different seeds" in err


def test_a_mirror_that_is_no_folder_is_refused_before_anything_trains(tmp_path, capsys):
    code, _, err = run_cli(["class", "pack", "--mirror", str(tmp_path / "none"), "--out", str(tmp_path / "p")], capsys)
    assert code == 2 and "--mirror" in err and "no such folder" in err
    assert not (tmp_path / "p").exists()
