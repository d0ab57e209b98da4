"""Tests for nmt.score.metrics (scoring, significance, reports, input) and nmt.util.plots."""

from __future__ import annotations

import json
import math
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
import sacrebleu
import torch

from nmt.score.metrics import (
    Score,
    bleu_by_length,
    compare_systems,
    score,
    write_report,
)
from nmt.util.errors import UserError
from nmt.util.fileio import read_lines
from nmt.util.plots import plot_attention, plot_bleu_by_length, plot_curves

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

REFS = [
    "The cat sat on the mat.",
    "A man is riding a bicycle down the street.",
    "Two children are playing in the park.",
    "She reads a book under the old tree.",
    "The dog runs after the red ball.",
    "People are waiting for the bus in the rain.",
]
HYPS = [
    "The cat sat on a mat.",
    "A man rides a bike down the street.",
    "Two kids are playing in the park.",
    "She is reading a book under the tree.",
    "The dog runs after the ball.",
    "People wait for a bus in the rain.",
]


def _corpus(n: int) -> list[str]:
    """n distinct reference sentences, long enough to have 4-gram matches."""
    words = ["red", "green", "blue", "small", "large", "old", "young", "happy", "quiet", "fast"]
    return [f"the {words[i % 10]} {words[(i * 3) % 10]} dog number {i} runs across the wide field" for i in range(n)]


def _drop_tail(sentence: str) -> str:
    """The sentence without its last two words: two deletions for TER."""
    return " ".join(sentence.split()[:-2])


def _garble(sentence: str) -> str:
    """Reverse word order: same words, (almost) no higher-order n-gram matches."""
    return " ".join(reversed(sentence.split()))


def test_score_matches_sacrebleu() -> None:
    result = score(HYPS, REFS)
    assert result.bleu == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS]).score)
    assert result.chrf == pytest.approx(sacrebleu.corpus_chrf(HYPS, [REFS]).score)
    assert result.ter == pytest.approx(sacrebleu.corpus_ter(HYPS, [REFS]).score)
    assert 0.0 < result.bleu < 100.0 and 0.0 < result.ter < 100.0
    assert result.n == len(REFS)
    assert "tok:13a" in result.bleu_signature and "smooth:exp" in result.bleu_signature
    assert "case:mixed" in result.bleu_signature
    assert result.chrf_signature.startswith("nrefs:1")
    assert result.ter_signature.startswith("nrefs:1") and "tok:tercom" in result.ter_signature
    assert result.length_ratio == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS]).ratio)
    assert Score(**result.to_dict()) == result


def test_the_length_ratio_is_what_the_brevity_penalty_reads() -> None:
    """Cut every hypothesis to its first half: the ratio falls below 1, and BLEU is the
    n-gram precisions' geometric mean times exp(1 - 1/ratio) (Papineni et al. 2002)."""
    halves = [" ".join(ref.split()[: max(1, len(ref.split()) // 2)]) for ref in REFS]
    result, copy = score(halves, REFS), score(REFS, REFS)
    assert copy.length_ratio == pytest.approx(1.0)
    assert 0.3 < result.length_ratio < 0.7
    found = sacrebleu.corpus_bleu(halves, [REFS])
    precisions = [p / 100 for p in found.precisions]
    geometric = math.exp(sum(math.log(p) for p in precisions) / 4)
    assert result.bleu == pytest.approx(100 * geometric * math.exp(1 - 1 / result.length_ratio), rel=1e-6)


def test_the_length_ratio_is_undefined_against_references_without_words() -> None:
    """sacreBLEU gives 0.0 for a ratio to no reference tokens, which reads as "no output at all";
    the reports write None (undefined) instead, for output and for empty output alike."""
    for hyps in (["a few words", "more"], ["", ""]):
        result = score(hyps, ["", " "])
        assert result.ref_len == 0 and result.to_dict()["length_ratio"] is None
    defined = score(["a b"], ["a b c d"])
    assert defined.ref_len == 4 and defined.to_dict()["length_ratio"] == pytest.approx(0.5)


def test_identical_hyps_score_100_and_ter_0() -> None:
    result = score(REFS, REFS)
    assert result.bleu == pytest.approx(100.0)
    assert result.chrf == pytest.approx(100.0)
    assert result.ter == 0.0


def test_ter_grows_as_hypotheses_are_damaged() -> None:
    """Each step damages one more sentence (drops its last two words): TER only goes up, BLEU down."""
    refs = _corpus(8)
    steps = [score([_drop_tail(r) if i < k else r for i, r in enumerate(refs)], refs) for k in range(len(refs) + 1)]
    ters = [s.ter for s in steps]
    assert ters[0] == 0.0
    assert all(a < b for a, b in pairwise(ters))
    assert all(a.bleu > b.bleu for a, b in pairwise(steps))
    assert score([_garble(r) for r in refs], refs).ter > ters[-1]  # reordering costs more than two deletions


def test_score_length_mismatch_names_both_counts() -> None:
    with pytest.raises(UserError, match=r"5 hypotheses.*6 references"):
        score(HYPS[:5], REFS)
    with pytest.raises(UserError):
        score([], [])


def test_bleu_by_length_buckets() -> None:
    refs = _corpus(40)
    hyps = [r if i % 2 else _garble(r) for i, r in enumerate(refs)]
    lengths = [(i * 7) % 70 for i in range(40)]  # spans every default bucket
    rows = bleu_by_length(lengths, hyps, refs)
    assert sum(row["n"] for row in rows) == len(refs)
    assert [row["bucket"] for row in rows] == ["0-9", "10-19", "20-29", "30-39", "40-49", "50-59", "60+"]
    assert rows[1]["n"] == sum(1 for n in lengths if 10 <= n < 20)
    assert all(0.0 <= row["bleu"] <= 100.0 + 1e-9 for row in rows)  # a bucket of exact copies scores 100 up to rounding
    copies = [row for row in bleu_by_length(lengths, refs, refs)]
    assert all(row["ratio"] == pytest.approx(1.0) for row in copies)
    halves = bleu_by_length(lengths, [" ".join(r.split()[: len(r.split()) // 2]) for r in refs], refs)
    assert all(row["ratio"] < 0.75 for row in halves)  # translations cut short: ratio well below 1

    # Edges are half-open and empty buckets are skipped.
    rows = bleu_by_length([5, 10, 10, 29], hyps[:4], refs[:4], edges=(0, 10, 20, 30))
    assert [(row["bucket"], row["n"]) for row in rows] == [("0-9", 1), ("10-19", 2), ("20-29", 1)]
    with pytest.raises(ValueError, match="outside"):
        bleu_by_length([30], hyps[:1], refs[:1], edges=(0, 10, 20, 30))


def test_compare_systems_paired_bootstrap() -> None:
    refs = _corpus(30)
    systems = {
        "garbled": [_garble(r) for r in refs],
        "perfect": list(refs),
        "half": [r if i % 2 else _garble(r) for i, r in enumerate(refs)],
    }
    rows = compare_systems(systems, refs, n_samples=200, seed=7)
    assert [row["name"] for row in rows] == list(systems)

    baseline, perfect = rows[0], rows[1]
    assert baseline["bleu_p_value"] is None and baseline["significant"] is None
    assert perfect["bleu"] == pytest.approx(100.0)
    assert perfect["bleu"] > baseline["bleu"]
    assert perfect["bleu_p_value"] < 0.05 and perfect["significant"] is True
    assert baseline["bleu"] == pytest.approx(score(systems["garbled"], refs).bleu)
    for row in rows:
        for metric in ("bleu", "chrf", "ter"):  # the resamples of a perfect system all score the same
            spread = row[f"{metric}_ci"]
            assert (spread == 0.0) if row is perfect else (spread > 0.0), (row["name"], metric)
            assert abs(row[f"{metric}_mean"] - row[metric]) <= max(spread, 1e-6), (row["name"], metric)
        assert "bs:200" in row["bleu_signature"] and "seed:7" in row["bleu_signature"]
        assert "bs:200" in row["ter_signature"] and "tok:tercom" in row["ter_signature"]
        assert not any("_ar_" in key for key in row)  # the default is the bootstrap alone
    assert perfect["ter"] == 0.0 and perfect["ter_p_value"] < 0.05

    again = compare_systems(systems, refs, n_samples=200, seed=7)
    assert again == rows


def test_compare_systems_approximate_randomization() -> None:
    refs = _corpus(30)
    systems = {
        "garbled": [_garble(r) for r in refs],
        "copy": [_garble(r) for r in refs],
        "perfect": list(refs),
    }
    rows = compare_systems(systems, refs, n_samples=100, seed=7, tests=("bootstrap", "ar"), ar_trials=200)
    baseline, copy, perfect = rows
    assert baseline["bleu_ar_p_value"] is None and baseline["ar_significant"] is None
    for metric in ("bleu", "chrf", "ter"):
        # A system against itself: no difference at all, from either test.
        assert copy[f"{metric}_ar_p_value"] == 1.0 and copy[f"{metric}_p_value"] == 1.0
        # A perfect system against a garbled one: as small as 200 trials can show.
        assert perfect[f"{metric}_ar_p_value"] == pytest.approx(1 / 201)
        assert "ar:200" in perfect[f"{metric}_ar_signature"] and "seed:7" in perfect[f"{metric}_ar_signature"]
    assert copy["ar_significant"] is False and copy["significant"] is False
    assert perfect["ar_significant"] is True and perfect["significant"] is True
    assert perfect["bleu"] == pytest.approx(score(refs, refs).bleu)

    only_ar = compare_systems(systems, refs, seed=7, tests=("ar",), ar_trials=200)
    assert [{k: v for k, v in row.items() if "_ar_" in k} for row in only_ar] == [
        {k: v for k, v in row.items() if "_ar_" in k} for row in rows
    ]  # same seed, same p-values
    assert "bleu_p_value" not in only_ar[1] and "significant" not in only_ar[1]
    with pytest.raises(ValueError, match="bootstrap, ar"):
        compare_systems(systems, refs, tests=("permutation",))


def test_a_system_that_scores_exactly_the_baselines_score_is_not_significantly_different() -> None:
    refs = _corpus(30)
    # Two different outputs that share no word with any reference: BLEU 0 for both, and for every
    # resample of them, so the bootstrap sees no difference anywhere.
    systems = {"zero": ["qqq www"] * len(refs), "other zero": ["zzz yyy xxx"] * len(refs)}
    rows = compare_systems(systems, refs, n_samples=100, seed=7, tests=("bootstrap", "ar"), ar_trials=100)
    assert rows[0]["bleu"] == rows[1]["bleu"] == 0.0
    assert rows[1]["bleu_p_value"] == 1.0 and rows[1]["bleu_ar_p_value"] == 1.0
    assert rows[1]["significant"] is False and rows[1]["ar_significant"] is False
    assert rows[1]["chrf"] != rows[0]["chrf"]  # chrF tells them apart: its p-value is sacreBLEU's
    assert rows[1]["chrf_p_value"] < 1.0


def test_compare_systems_rejects_misaligned_system() -> None:
    refs = _corpus(5)
    with pytest.raises(UserError, match="'short'"):
        compare_systems({"base": refs, "short": refs[:4]}, refs, n_samples=10)


def test_write_report(tmp_path: Path) -> None:
    result = score(HYPS, REFS)
    payload = {"test": result.to_dict(), "checkpoint": "best.pt", "note": "ümlaut"}
    rows = [{"name": "attn", "bleu": result.bleu, "chrf": result.chrf, "p_value": None}]
    json_path, md_path = write_report(tmp_path / "reports" / "newstest.2014", payload, rows)

    assert json_path == tmp_path / "reports" / "newstest.2014.json"
    assert md_path == tmp_path / "reports" / "newstest.2014.md"
    assert json.loads(json_path.read_text(encoding="utf-8")) == payload
    md_lines = md_path.read_text(encoding="utf-8").splitlines()
    assert "| name | bleu | chrf | p_value |" in md_lines
    assert f"| attn | {result.bleu:.2f} | {result.chrf:.2f} | - |" in md_lines
    assert f"- test.bleu_signature: `{result.bleu_signature}`" in md_lines
    assert sorted(p.name for p in json_path.parent.iterdir()) == ["newstest.2014.json", "newstest.2014.md"]


def test_write_report_with_own_markdown(tmp_path: Path) -> None:
    json_path, md_path = write_report(tmp_path / "report", {"a": 1}, [{"x": 1}], markdown="# mine\n")
    assert md_path.read_text(encoding="utf-8") == "# mine\n"
    assert json.loads(json_path.read_text(encoding="utf-8")) == {"a": 1}


def test_write_report_failure_leaves_no_partial_file(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        write_report(tmp_path / "bad", {"x": object()}, [])
    assert list(tmp_path.iterdir()) == []


def test_read_lines(tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_bytes("eins\r\nzwei\n\ndrei – vier".encode())
    assert read_lines(good) == ["eins", "zwei", "", "drei – vier"]

    bad = tmp_path / "bad.de"
    bad.write_bytes(b"ok\nalso ok\nbroken \xff\xfe here\nfine\n")
    with pytest.raises(UserError, match=r"bad\.de.*line 3"):
        read_lines(bad)
    with pytest.raises(UserError, match=r"missing\.txt"):
        read_lines(tmp_path / "missing.txt")


def _assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_plot_attention(tmp_path: Path) -> None:
    src, tgt = ["ein", "Hund", "läuft", "</s>"], ["a", "dog", "runs"]
    weights = torch.softmax(torch.randn(len(tgt), len(src)), dim=-1)
    _assert_png(plot_attention(weights, src, tgt, tmp_path / "attn.png", title="example"))
    _assert_png(plot_attention(weights.numpy(), src, tgt, tmp_path / "attn_np.png"))
    with pytest.raises(ValueError, match="shape"):
        plot_attention(weights.T, src, tgt, tmp_path / "wrong.png")
    with pytest.raises(ValueError):
        plot_attention(np.ones(4), src, tgt, tmp_path / "wrong.png")
    assert not (tmp_path / "wrong.png").exists()


def test_plot_bleu_by_length_and_curves(tmp_path: Path) -> None:
    series = {
        "attention": [{"bucket": "0-9", "n": 3, "bleu": 30.0}, {"bucket": "50+", "n": 2, "bleu": 25.0}],
        "no attention": [{"bucket": "0-9", "n": 3, "bleu": 28.0}, {"bucket": "10-19", "n": 4, "bleu": 12.0}],
    }
    _assert_png(plot_bleu_by_length(series, tmp_path / "by_length.png"))
    curves = {"attention": [(0.5, 3.0), (1.0, 9.5), (2.0, 14.0)], "baseline": [(0.5, 2.0), (1.5, 6.0)]}
    _assert_png(plot_curves(curves, tmp_path / "curves.png", xlabel="minutes", ylabel="valid BLEU"))
    with pytest.raises(ValueError):
        plot_curves({}, tmp_path / "empty.png", xlabel="x", ylabel="y")
