"""Repeated n-grams (nmt.score.repetition) and the script that reads them off a comparison's runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from nmt.score.repetition import has_repeated_ngram, repeated_ngram_rate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import coverage_effects


def test_a_repeated_ngram_is_found_case_folded_and_only_at_its_length() -> None:
    assert has_repeated_ngram("a man in a blue shirt in a blue shirt", 3)
    assert has_repeated_ngram("A dog and a cat", 1) and not has_repeated_ngram("A dog and a cat", 2)
    assert not has_repeated_ngram("one", 2)
    assert repeated_ngram_rate(["a b a b", "a b c d", "x y x y", "p"], 2) == 50.0
    assert repeated_ngram_rate([], 2) == 0.0
    with pytest.raises(ValueError):
        repeated_ngram_rate(["a"], 0)


def test_the_script_reads_each_runs_translations_and_averages_a_variant_over_seeds(tmp_path: Path, capsys) -> None:
    refs = ["a dog runs on the grass .", "two children play in the park ."]
    outputs = {
        "plain_s1": ["a dog runs .", "two children play ."],
        "plain_s2": ["a dog dog runs on the grass .", refs[1]],
    }
    for run, hyps in outputs.items():
        folder = tmp_path / run / "compare-test2016"
        folder.mkdir(parents=True)
        result = {"hyps": hyps, "refs": refs, "bleu": 40.0}
        (folder / "scored.json").write_text(json.dumps({"key": {}, "result": result}), encoding="utf-8")
    assert coverage_effects.main([str(tmp_path / "plain_s1"), str(tmp_path / "plain_s2")]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(x["variant"], x["seed"]) for x in lines] == [("plain", 1), ("plain", 2)]
    assert lines[0]["length_ratio"] < 1 < lines[1]["length_ratio"]  # words dropped; a word twice
    assert lines[1]["repeated_2gram_pct"] == 0.0 and lines[0]["reference_repeated_2gram_pct"] == 0.0
    (tmp_path / "effects.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert coverage_effects.main(["--table", str(tmp_path / "effects.jsonl")]) == 0
    assert "| plain | 40.00 |" in capsys.readouterr().out
