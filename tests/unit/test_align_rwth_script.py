"""scripts/align_rwth.py without a model: the archive read as the RWTH set is laid out (Latin-1,
1-based links, a blank last line), the run facts, eflomal's training text and the diagonal baseline."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import align_rwth
import pytest

from nmt.util.errors import UserError

DE = "Ich weiß , daß es stimmt .\nDas Haus\n\n"
EN = "I know that it is true .\nThe house\n\n"
GOLD = "1-1 2-2 3p3 4-3 5-4 6-6 6p5 7-7\n1-1 2-2\n\n"


def make_archive(path: Path, files: dict[str, str]) -> Path:
    """A gzipped tar holding ``files`` (member name -> text), written as Latin-1 like the RWTH set."""
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode("latin-1")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    files = {"DeEn/de": DE, "DeEn/en": EN, "DeEn/alignmentDeEn.talp": GOLD}
    return make_archive(tmp_path / "gold.tar.gz", files)


def test_reads_latin1_sentences_and_drops_the_blank_last_pair(archive: Path, tmp_path: Path) -> None:
    rwth = align_rwth.read_archive(archive, tmp_path / "out")
    assert rwth.sources == ["Ich weiß , daß es stimmt .", "Das Haus"]
    assert rwth.targets == ["I know that it is true .", "The house"]
    assert len(rwth.gold) == 2 and len(rwth.archive_sha256) == 64


def test_gold_links_count_from_one_and_possible_links_hold_the_sure_ones(archive: Path, tmp_path: Path) -> None:
    first = align_rwth.read_archive(archive, tmp_path / "out").gold[0]
    assert (0, 0) in first.sure and (2, 2) not in first.sure
    assert (2, 2) in first.possible and first.sure <= first.possible


def test_a_gold_link_outside_its_pair_is_refused(tmp_path: Path) -> None:
    bad = make_archive(
        tmp_path / "bad.tar.gz",
        {"DeEn/de": "Das Haus\n", "DeEn/en": "The house\n", "DeEn/alignmentDeEn.talp": "1-1 3-2\n"},
    )
    with pytest.raises(UserError, match="out of range"):
        align_rwth.read_archive(bad, tmp_path / "out")


@pytest.mark.parametrize("missing", ["DeEn/de", "DeEn/alignmentDeEn.talp"])
def test_an_archive_without_a_file_of_the_set_is_refused(tmp_path: Path, missing: str) -> None:
    files = {"DeEn/de": DE, "DeEn/en": EN, "DeEn/alignmentDeEn.talp": GOLD}
    del files[missing]
    with pytest.raises(UserError, match=missing):
        align_rwth.read_archive(make_archive(tmp_path / "part.tar.gz", files), tmp_path / "out")


def test_a_file_that_is_no_archive_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.tar.gz").write_text("not a tar")
    with pytest.raises(UserError, match="tar archive"):
        align_rwth.read_archive(tmp_path / "x.tar.gz", tmp_path / "out")


def test_diagonal_links_one_source_word_per_target_word_in_order(archive: Path, tmp_path: Path) -> None:
    record = align_rwth.diagonal(align_rwth.read_archive(archive, tmp_path / "out"))
    assert record["predicted"] == 7 + 2  # one link per English word
    assert 0.0 <= record["aer"] <= 1.0


def test_run_facts_come_from_config_and_scored_test(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "best.pt").write_bytes(b"")
    (run / "config.yaml").write_text("model:\n  arch: rnn\n  attention:\n    type: bahdanau\ntrain:\n  seed: 2\n")
    (run / "compare-test2016").mkdir()
    (run / "compare-test2016" / "scored.json").write_text(json.dumps({"result": {"bleu": 20.5}}))
    facts = {"variant": "bahdanau", "arch": "rnn", "seed": 2, "test2016_bleu": 20.5}
    assert align_rwth.run_facts(run, "test2016") == facts
    assert align_rwth.run_facts(run / "checkpoints" / "best.pt", "test2016") == facts
    assert align_rwth.run_facts(tmp_path / "elsewhere", "test2016")["variant"] is None


def test_punct_tokens_split_punctuation_off_words_and_skip_blank_pairs(tmp_path: Path) -> None:
    (tmp_path / "a.de").write_text('Zwei Männer, "draußen".\n\nEin Hund.\n', encoding="utf-8")
    (tmp_path / "a.en").write_text('Two men, "outside".\nA dog.\n\n', encoding="utf-8")
    pairs = align_rwth.training_pairs(tmp_path / "a.de", tmp_path / "a.en", "punct")
    assert pairs == [('Zwei Männer , " draußen " .', 'Two men , " outside " .')]
    assert align_rwth.training_pairs(tmp_path / "a.de", tmp_path / "a.en", "whitespace")[0][1] == 'Two men, "outside".'


def test_no_aligner_at_all_exits_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        align_rwth.main([])
    assert stop.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1
