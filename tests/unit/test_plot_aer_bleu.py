"""scripts/plot_aer_bleu.py on made-up align_rwth.py lines: the PNG written, one point per variant from
its default lines only, the rank correlations right on a hand-checked case, bad input refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import plot_aer_bleu


def model(variant: str, seed: int, aer: object, bleu: float | None, **extra: object) -> dict:
    """A model's line as align_rwth.py writes it (made-up numbers)."""
    run = {"aligner": "nmt", "run": f"runs/{variant}_s{seed}", "variant": variant, "seed": seed}
    return {**run, "aer": aer, "test2016_bleu": bleu, "layer": None, "head": None, "default": True, **extra}


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# Means by variant, AER (%) 10, 20, 30, 40 against BLEU 1, 3, 2, 4: one pair of the six (20-30) is
# discordant, so Kendall's tau = (5 - 1) / 6 = 2/3 and, exactly, P(at most 1 inversion of 4 items)
# = (1 + 3) / 24, two-sided 1/3; the ranks differ by 0, 1, 1, 0, so Spearman's rho = 1 - 6 * 2 /
# (4 * 15) = 0.8, t = 0.8 sqrt(2 / 0.36) with 2 degrees of freedom, p = 1 - t / sqrt(t^2 + 2) = 0.2.
LINES = [
    model("bahdanau", 1, 0.09, 0.5),
    model("bahdanau", 2, 0.11, 1.5),
    model("luong_general", 1, 0.19, 2.5),
    model("luong_general", 2, 0.21, 3.5),
    model("qkv", 1, 0.29, 1.5, heads=2),
    model("qkv", 1, 0.05, 9.0, heads=2, head=0, default=False),  # a head: not drawn
    model("qkv", 2, 0.31, 2.5, heads=2),
    model("transformer", 1, 0.39, 3.5, heads=4, layer=1),
    model("transformer", 1, 0.01, 9.0, heads=4, layer=0, default=False),  # another layer: not drawn
    model("transformer", 2, 0.41, 4.5, heads=4, layer=1),
    model("luong_dot", 1, 0.5, None),  # no BLEU: skipped with a note
    {"aligner": "diagonal", "variant": "diagonal", "aer": 0.744},
    {"aligner": "eflomal", "variant": "eflomal grow-diag-final-and", "aer": 0.30, "train_tokens": "punct, lowercased"},
    {"aligner": "eflomal", "variant": "eflomal grow-diag-final-and", "aer": 0.32, "train_tokens": "punct, lowercased"},
    {"aligner": "eflomal", "variant": "eflomal forward", "aer": 0.36, "train_tokens": "punct, lowercased"},
]


def test_one_point_per_variant_and_the_rank_correlations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = {k: v for k, v in model("luong_general", 3, 0.20, 3.0).items() if k not in ("layer", "head", "default")}
    files = [write(tmp_path / "a.jsonl", LINES), write(tmp_path / "b.jsonl", [old])]  # a line from before "default"
    assert plot_aer_bleu.main([*map(str, files), "--out", str(tmp_path / "fig.png"), "--title", "T"]) == 0
    out, err = capsys.readouterr()
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (result,) = [json.loads(line) for line in out.splitlines()]
    means = {m["variant"]: m for m in result["means"]}
    assert list(means) == ["bahdanau", "luong_general", "qkv (2 heads)", "transformer (4 heads)"]
    assert [means[v]["seeds"] for v in means] == [2, 3, 2, 2]
    assert [round(m["aer_percent"], 9) for m in means.values()] == [10, 20, 30, 40]
    assert [round(m["bleu"], 9) for m in means.values()] == [1, 3, 2, 4]
    assert result["variants"] == 4
    assert result["kendall_tau_b"] == pytest.approx(2 / 3) and result["kendall_p"] == pytest.approx(1 / 3)
    assert result["kendall_p_method"] == "exact"
    assert result["spearman_rho"] == pytest.approx(0.8) and result["spearman_p"] == pytest.approx(0.2)
    assert result["references_aer_percent"] == pytest.approx({"diagonal": 74.4, "eflomal grow-diag-final-and": 31.0})
    assert "runs/luong_dot_s1 skipped: no test2016_bleu" in err


def test_arch_keeps_the_models_of_one_architecture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--arch rnn: the attention variants of one design, without a Transformer trained to other updates."""
    lines = [{**r, "arch": "transformer" if r.get("variant") == "transformer" else "rnn"} for r in LINES]
    path = write(tmp_path / "a.jsonl", lines)
    assert plot_aer_bleu.main([str(path), "--out", str(tmp_path / "rnn.png"), "--arch", "rnn"]) == 0
    (result,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [m["variant"] for m in result["means"]] == ["bahdanau", "luong_general", "qkv (2 heads)"]
    assert result["variants"] == 3 and result["arch"] == "rnn"
    only = write(tmp_path / "t.jsonl", [r for r in lines if r.get("arch") != "transformer"])
    with pytest.raises(SystemExit) as stop:
        plot_aer_bleu.main([str(only), "--out", str(tmp_path / "t.png"), "--arch", "transformer"])
    assert stop.value.code == 2 and "no model line of arch transformer" in capsys.readouterr().err


def test_kendall_p_is_exact_without_ties_and_approximate_with_them() -> None:
    assert plot_aer_bleu.kendall_p([1, 2, 3, 4, 5], [5, 4, 3, 2, 1]) == (pytest.approx(2 / 120), "exact")
    assert plot_aer_bleu.kendall_p([1, 2], [1, 2]) == (1.0, "exact")
    p, method = plot_aer_bleu.kendall_p([1, 2, 2, 3, 4], [1, 2, 3, 4, 5])
    assert method == "normal approximation" and p is not None and 0.0 < p < 0.2
    assert plot_aer_bleu.kendall_p([1, 1, 1], [1, 2, 3])[0] is None
    assert plot_aer_bleu.spearman([1, 2, 3], [3, 2, 1]) == (-1.0, 0.0)
    assert plot_aer_bleu.spearman([1, 2], [1, 2]) == (1.0, None)


def test_the_plot_notes_eflomal_settings_apart(tmp_path: Path) -> None:
    records = [
        {"variant": "eflomal grow-diag-final-and", "aer": 0.3, "train_tokens": t, "_where": "x"}
        for t in ("punct, lowercased", "whitespace, lowercased")
    ]
    assert set(plot_aer_bleu.references(records)) == {
        "eflomal grow-diag-final-and, punct tokens",
        "eflomal grow-diag-final-and, whitespace tokens",
    }


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json\n", "a.jsonl:1: not a JSON line"),
        ("[1, 2]\n", 'a.jsonl:1: not a line of scripts/align_rwth.py (no "aligner")'),
        (json.dumps(model("bahdanau", 1, "high", 20.0)) + "\n", "aer is 'high', not a finite number"),
        (json.dumps({"aligner": "diagonal", "variant": "diagonal", "aer": 0.7}) + "\n", "no model line with AER"),
        (None, "a.jsonl: cannot read it"),
    ],
)
def test_bad_input_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], content, needle) -> None:
    given = tmp_path / "a.jsonl"
    if content is not None:
        given.write_text(content, encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        plot_aer_bleu.main([str(given), "--out", str(tmp_path / "fig.png")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and needle in err, err
    assert err.count("\n") == 1 and not (tmp_path / "fig.png").exists()


def test_no_out_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        plot_aer_bleu.main([str(write(tmp_path / "a.jsonl", LINES))])
    assert stop.value.code == 2 and capsys.readouterr().err.count("\n") == 1
