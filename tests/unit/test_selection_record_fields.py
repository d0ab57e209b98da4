"""selection.json read field by field (issue 70): ``"format": true`` is not format 1, and a test read
or an earlier choice of the wrong kind is refused in one line naming the field, not a crash of the
readers (``nmt report``'s count of test reads among them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nmt.run import selection
from nmt.run.test_reads import read_counts
from nmt.util.errors import UserError


@pytest.mark.parametrize(
    "record, why",
    [
        ({"format": True, "chosen": None, "earlier": [], "tests": []}, 'no "format": 1'),
        ({"format": 1.0, "chosen": None, "earlier": [], "tests": []}, 'no "format": 1'),
        ({"format": 1, "chosen": None, "earlier": [], "tests": [1]}, '"tests"[0] is no test read'),
        ({"format": 1, "chosen": None, "earlier": [], "tests": [{"read": 1}]}, '"tests"[0] is no test read'),
        ({"format": 1, "chosen": None, "earlier": [], "tests": [{"split": ["test"]}]}, '"tests"[0] is no test'),
        ({"format": 1, "chosen": None, "earlier": [], "tests": [{"split": "test"}, None]}, '"tests"[1] is no'),
        ({"format": 1, "chosen": None, "earlier": [7], "tests": []}, '"earlier" holds something other'),
    ],
)
def test_a_record_with_a_field_of_the_wrong_kind_is_refused_in_one_line(tmp_path: Path, record, why) -> None:
    path = tmp_path / "selection.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(UserError, match="not a record nmt select wrote") as refused:
        selection.read(path)
    assert why in str(refused.value) and str(path) in str(refused.value) and "\n" not in str(refused.value)
    assert json.loads(path.read_text(encoding="utf-8")) == record  # untouched


@pytest.mark.parametrize("text", ["[" * 100_000, '{"format": 1, "tests": ' + "[" * 100_000])
def test_json_nested_too_deep_for_the_parser_is_not_json(tmp_path: Path, text: str) -> None:
    path = tmp_path / "selection.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError, match="not JSON, so it is not a record nmt select wrote"):
        selection.read(path)


def test_the_count_of_test_reads_refuses_a_malformed_record_in_one_line(tmp_path: Path) -> None:
    """read_counts (what nmt report shows) crashed with AttributeError on a test read that is no mapping."""
    run = tmp_path / "run"
    run.mkdir()
    record = {**selection.empty(), "tests": [{"split": "test2016"}, 5]}
    (run / "selection.json").write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(UserError, match=r'"tests"\[1\] is no test read'):
        read_counts(run)
    record["tests"] = [{"split": "test2016"}, {"split": "test2016"}]
    (run / "selection.json").write_text(json.dumps(record), encoding="utf-8")
    assert read_counts(run) == {"test2016": 2}
