"""Split names: Multi30k's upstream names are aliases of ours, and a split a prepared corpus lacks
is refused with the reason and the splits it has."""

from __future__ import annotations

from pathlib import Path

import pytest

from nmt import config as config_mod
from nmt.config.sections import DataConfig
from nmt.data.splits import check_split, split_name
from nmt.util.errors import UserError


def _prepared(root: Path, corpus: str, splits: list[str], *extra: str) -> DataConfig:
    data = config_mod.load(
        None, [f"data.root={root}", f"data.corpus={corpus}", "data.src=de", "data.tgt=en", *extra]
    ).data
    data.prepared_dir.mkdir(parents=True)
    for split in splits:
        for lang in ("de", "en"):
            (data.prepared_dir / f"{split}.{lang}").write_text("ein Satz\n", encoding="utf-8")
    return data


@pytest.mark.parametrize(
    "given, ours",
    [
        ("val", "valid"),
        ("test_2016_flickr", "test2016"),
        ("test_2017_flickr", "test2017"),
        ("test_2018_flickr", "test2018"),
        ("test_2017_mscoco", "test2017_mscoco"),
        ("test2016", "test2016"),
        ("train", "train"),
        ("anything", "anything"),
    ],
)
def test_upstream_multi30k_names_are_our_split_names(given, ours):
    assert split_name(given) == ours


def test_a_split_the_source_lacks_says_so_and_lists_the_splits_there_are(tmp_path):
    data = _prepared(tmp_path, "multi30k", ["train", "valid", "test2016"])
    assert check_split(data, "test2016") == "test2016"
    assert check_split(data, "test_2016_flickr") == "test2016"
    for given in ("test2017", "test_2017_flickr"):
        with pytest.raises(UserError) as info:
            check_split(data, given)
        assert str(info.value) == (
            f"--split {given}: the corpus prepared in {data.prepared_dir} has no split 'test2017': its source, "
            "Multi30k, had no test_2017_flickr files for de-en when it was prepared; "
            "choose from test2016, train, valid"
        )


def test_a_split_no_source_has_lists_the_splits_there_are(tmp_path):
    data = _prepared(tmp_path, "synthetic", ["train", "valid", "test"])
    with pytest.raises(UserError) as info:
        check_split(data, "dev", option="--valid")
    assert str(info.value) == (
        f"--valid dev: the corpus prepared in {data.prepared_dir} has no split 'dev'; choose from test, train, valid"
    )


def test_a_corpus_not_prepared_yet_is_told_to_prepare(tmp_path):
    data = config_mod.load(None, [f"data.root={tmp_path}", "data.corpus=synthetic"]).data
    with pytest.raises(UserError, match=r"no prepared corpus in .*; run nmt data prepare first$"):
        check_split(data, "test")
