"""``nmt align``, ``Translator.align`` and ``nmt translate --alignments`` on tiny models.

Properties rather than numbers: a forced target has one link per word, inside its pair; the command
writes what the library returns and scores it as :func:`nmt.alignment_error` does, whichever gold
form it reads; the toy model, which learned to reverse its input, aligns the reversal better than
the diagonal; a Transformer's heads average into the default, its last layer is what forced decoding
(and an engine without every layer's maps) gives; CTranslate2 is refused in one line.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import nmt
from conftest import run_cli
from nmt.score.alignment import GoldAlignment, score_alignments
from nmt.util.errors import UserError

PAIRS = 16


@pytest.fixture(scope="module")
def pairs(toy_files) -> tuple[list[str], list[str]]:
    """Test-split pairs of the toy task (the target is the source reversed, upper-cased) and a blank pair."""
    _, files = toy_files
    sources = Path(files["test"][0]).read_text(encoding="utf-8").splitlines()[:PAIRS]
    targets = Path(files["test"][1]).read_text(encoding="utf-8").splitlines()[:PAIRS]
    return [*sources, ""], [*targets, ""]


@pytest.fixture(scope="module")
def translator(trained_toy: Path) -> nmt.Translator:
    return nmt.load(trained_toy)


def reversal(sources: list[str]) -> list[str]:
    """The toy task's true alignment: target word j is source word n - 1 - j (Pharaoh lines)."""
    return [" ".join(f"{len(s.split()) - 1 - j}-{j}" for j in range(len(s.split()))) for s in sources]


def diagonal(sources: list[str]) -> list[str]:
    return [" ".join(f"{j}-{j}" for j in range(len(s.split()))) for s in sources]


def one_link_per_target_word(found: nmt.WordAlignment) -> bool:
    targets = sorted(j for _, j in found.links)
    inside = all(0 <= i < len(found.source_words) for i, _ in found.links)
    return targets == list(range(len(found.target_words))) and inside


def test_a_forced_target_has_one_link_per_target_word(translator, pairs) -> None:
    sources, targets = pairs
    found = translator.align(sources, targets)
    assert len(found) == len(sources)
    for pair, source, target in zip(found, sources, targets):
        assert pair.source_words == source.split() and pair.target_words == target.split()
        assert one_link_per_target_word(pair)
        assert pair.weights.shape == (len(pair.target_words), len(pair.source_words))
        if pair.links:
            np.testing.assert_allclose(pair.weights.sum(1), 1.0, atol=1e-6)
    assert found[-1].links == [] and found[-1].pharaoh == ""  # the blank pair keeps its place
    assert [a.pharaoh for a in translator.align(sources, targets, batch_size=3)] == [a.pharaoh for a in found]


def test_the_learned_reversal_shows_in_the_alignment(translator, pairs, tmp_path) -> None:
    sources, targets = pairs
    found = translator.align(sources, targets)
    gold = tmp_path / "gold.txt"
    gold.write_text("".join(line + "\n" for line in reversal(sources)), encoding="utf-8")
    against_reversal = nmt.alignment_error(found, gold, gold_format="pharaoh")
    gold.write_text("".join(line + "\n" for line in diagonal(sources)), encoding="utf-8")
    against_diagonal = nmt.alignment_error(found, gold, gold_format="pharaoh")
    assert against_reversal.aer < against_diagonal.aer


def test_the_command_writes_what_the_library_returns_and_scores_it(trained_toy, translator, pairs, tmp_path, capsys):
    sources, targets = pairs
    src, tgt, out = tmp_path / "src.txt", tmp_path / "tgt.txt", tmp_path / "out.align"
    src.write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    tgt.write_text("".join(t + "\n" for t in targets), encoding="utf-8")
    pharaoh, rwth = tmp_path / "gold.txt", tmp_path / "gold.talp"
    pharaoh.write_text("".join(line + "\n" for line in reversal(sources)), encoding="utf-8")
    one_based = [
        " ".join(f"{int(i) + 1}-{int(j) + 1}" for i, j in (x.split("-") for x in g.split())) for g in reversal(sources)
    ]
    rwth.write_text("".join(line + "\n" for line in one_based), encoding="utf-8")
    model = [
        "align",
        "--checkpoint",
        str(trained_toy / "checkpoints" / "best.pt"),
        "--src",
        str(src),
        "--tgt",
        str(tgt),
    ]

    code, printed, err = run_cli(
        [*model, "-o", str(out), "--gold", str(pharaoh), "--gold-format", "pharaoh", "--report", str(tmp_path / "r")],
        capsys,
    )
    assert code == 0, err
    found = translator.align(sources, targets)
    assert out.read_text(encoding="utf-8").splitlines() == [a.pharaoh for a in found]
    want = nmt.alignment_error(found, pharaoh, gold_format="pharaoh")
    assert printed.strip() == want.summary
    report = json.loads((tmp_path / "r" / "alignment_error.json").read_text(encoding="utf-8"))
    assert report["aer"] == pytest.approx(want.aer) and report["pairs"] == len(sources)
    assert report["settings"]["gold_format"] == "pharaoh" and "argmax" in report["settings"]["merge"]
    assert (tmp_path / "r" / "alignment_error.txt").read_text(encoding="utf-8") == want.summary + "\n"

    code, printed, err = run_cli([*model, "--gold", str(rwth), "--gold-format", "rwth"], capsys)
    assert code == 0, err
    assert printed.splitlines() == [a.pharaoh for a in found]  # without -o the alignments go to stdout
    assert err.strip().splitlines()[-1] == want.summary  # and the score to stderr


def test_the_links_of_words_the_training_text_holds_are_scored_apart(trained_toy, translator, tmp_path, capsys):
    """--seen-src/--seen-tgt: predicted and gold links of unseen words leave both sides; the rest scores alone."""
    src, tgt, gold = tmp_path / "src", tmp_path / "tgt", tmp_path / "gold"
    src.write_text("ant bee\nowl ant\n", encoding="utf-8")
    tgt.write_text("BEE ANT\nANT OWL\n", encoding="utf-8")
    gold.write_text("0-1 1-0\n0-1 1-0\n", encoding="utf-8")  # pharaoh: source word i - target word j
    seen_src, seen_tgt = tmp_path / "train.src", tmp_path / "train.tgt"
    seen_src.write_text("ant bee cat\n", encoding="utf-8")  # "owl" never seen
    seen_tgt.write_text("ANT BEE OWL\n", encoding="utf-8")
    argv = ["align", "--checkpoint", str(trained_toy / "checkpoints" / "best.pt"), "--src", str(src), "--tgt", str(tgt)]
    scored = ["--gold", str(gold), "--gold-format", "pharaoh", "-o", str(tmp_path / "out")]
    seen = ["--seen-src", str(seen_src), "--seen-tgt", str(seen_tgt), "--report", str(tmp_path / "r")]
    code, printed, err = run_cli([*argv, *scored, *seen], capsys)
    assert code == 0, err
    found = translator.align(["ant bee", "owl ant"], ["BEE ANT", "ANT OWL"])
    gold_links = [frozenset({(0, 1), (1, 0)}), frozenset({(1, 0)})]  # pair 2 keeps ant-ANT, not owl-OWL
    kept = [frozenset(found[0].links), frozenset(link for link in found[1].links if link[0] == 1)]  # not from owl
    want = score_alignments(kept, [GoldAlignment(g, g) for g in gold_links])
    every, on_seen = printed.strip().splitlines()
    assert on_seen == f"on links whose two words the training text holds: {want.summary}", printed
    assert want.sure == 3 and every.startswith("AER ") and "4 sure" in every
    report = json.loads((tmp_path / "r" / "alignment_error.json").read_text(encoding="utf-8"))
    assert (
        report["seen"]["sure"] == 3
        and report["sure"] == 4
        and report["settings"]["seen"] == [str(seen_src), str(seen_tgt)]
    )
    code, _, err = run_cli([*argv, "--seen-src", str(seen_src), "--seen-tgt", str(seen_tgt)], capsys)
    assert code == 2 and "--seen-src and --seen-tgt go with --gold FILE" in err
    code, _, err = run_cli([*argv, *scored, "--seen-src", str(seen_src)], capsys)
    assert code == 2 and "--seen-src and --seen-tgt go together" in err


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--gold", "GOLD"], "--gold GOLD: name its form with --gold-format: rwth or pharaoh"),
        (["--gold", "GOLD", "--gold-format", "talp"], "--gold-format talp: unknown"),
        (["--gold", "SHORT", "--gold-format", "pharaoh"], "2 lines of gold links for 3 sentence pairs"),
        (["--gold", "GOLD", "--gold-format", "rwth"], "holds index 0, but rwth files count words from 1"),
        (["--report", "R"], "--report go with --gold FILE"),
        (["--layer", "1"], "an RNN model has one attention (layer 0)"),
        (["--head", "0"], "head 0: the model's attention has one head"),
        (["--encoding", "ascii"], "line 3 is not valid ascii (byte 0xc3)"),
    ],
)
def test_the_command_refuses_in_one_line(trained_toy, tmp_path, capsys, extra, needle) -> None:
    src, tgt, gold, short = (tmp_path / name for name in ("src", "tgt", "GOLD", "SHORT"))
    src.write_text("ant bee\ncat\nowl ant\n", encoding="utf-8")
    tgt.write_text("BEE ANT\nCAT\nANT Ö\n", encoding="utf-8")
    gold.write_text("0-1 1-0\n0-0\n0-1 1-0\n", encoding="utf-8")
    short.write_text("0-1 1-0\n0-0\n", encoding="utf-8")
    argv = ["align", "--checkpoint", str(trained_toy / "checkpoints" / "best.pt"), "--src", str(src), "--tgt", str(tgt)]
    extra = [str(tmp_path / arg) if arg in ("GOLD", "SHORT", "R") else arg for arg in extra]
    code, _, err = run_cli([*argv, *extra], capsys)
    assert code == 2 and needle.replace("GOLD", str(gold)) in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("beam", [1, 2])
def test_translate_writes_the_alignment_of_its_own_output(trained_toy, pairs, tmp_path, capsys, beam) -> None:
    sources, _ = pairs
    given, out, aligned = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "out.align"
    given.write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    argv = ["translate", "--checkpoint", str(trained_toy / "checkpoints" / "best.pt"), "-i", str(given), "-o", str(out)]
    code, _, err = run_cli([*argv, "--beam", str(beam), "--n-best", str(beam), "--alignments", str(aligned)], capsys)
    assert code == 0, err
    rows = out.read_text(encoding="utf-8").splitlines()
    texts = [row.split("\t")[-1] for row in rows]  # n-best rows: index, score, text
    inputs = [sources[int(row.split("\t")[0])] for row in rows] if beam > 1 else sources
    links = aligned.read_text(encoding="utf-8").splitlines()
    assert len(links) == len(rows)
    for line, text, source in zip(links, texts, inputs):
        pairs_ = [tuple(map(int, link.split("-"))) for link in line.split()]
        assert sorted(j for _, j in pairs_) == list(range(len(text.split())))  # one link per output word
        assert all(i < len(source.split()) for i, _ in pairs_)


def test_translate_to_stdout_writes_the_alignments_file_and_refuses_to_overwrite_its_text(
    trained_toy, pairs, tmp_path, capsys
) -> None:
    sources, _ = pairs
    given, aligned = tmp_path / "in.txt", tmp_path / "in.align"
    given.write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    argv = ["translate", "--checkpoint", str(trained_toy / "checkpoints" / "best.pt"), "-i", str(given)]
    code, out, err = run_cli([*argv, "--alignments", str(aligned)], capsys)
    assert code == 0, err
    assert len(aligned.read_text(encoding="utf-8").splitlines()) == len(out.splitlines()) == len(sources)
    for where, needle in ((given, "is the input file"), (tmp_path, "is a directory")):
        code, _, err = run_cli([*argv, "--alignments", str(where)], capsys)
        assert code == 2 and needle in err, err
    code, _, err = run_cli([*argv, "-o", str(aligned), "--alignments", str(aligned)], capsys)
    assert code == 2 and "is the -o file" in err, err


# --- the Transformer: a tiny random one (alignment reads weights, it need not have learned) ----------------

TINY = [
    "model.arch=transformer",
    *(f"model.transformer.{o}" for o in ("d_model=16", "heads=2", "ff_size=32", "enc_layers=2", "dec_layers=3")),
]
GERMAN = ["Ein Hund läuft über die Wiese .", "Zwei Kinder spielen im Park .", "Die Katze schläft ."]
ENGLISH = ["A dog runs across the meadow .", "Two children play in the park .", "The cat sleeps ."]


@pytest.fixture(scope="module")
def transformer(tmp_path_factory: pytest.TempPathFactory, toy_prepared: Path) -> Path:
    """A randomly initialized 3-layer Transformer saved as training saves one."""
    from nmt import config as C
    from nmt.data.prepare import load_prepared
    from nmt.model.build import build_model
    from nmt.run import checkpoint as ckpt
    from nmt.run.state import TrainState

    cfg = C.load(None, TINY)
    _, tok, _ = load_prepared(toy_prepared)
    torch.manual_seed(0)
    model = build_model(cfg.model, tok.vocab_size, tok.vocab_size)
    saved = ckpt.Checkpoint(
        cfg.model_dump(mode="json"),
        model.state_dict(),
        {"src": tok.model_bytes, "tgt": tok.model_bytes},
        TrainState(step=3),
    )
    return ckpt.save(tmp_path_factory.mktemp("align_transformer") / "model.pt", saved)


def test_a_transformer_reads_the_penultimate_layer_with_its_heads_averaged(transformer) -> None:
    model = nmt.load(transformer)
    default = model.align(GERMAN, ENGLISH)
    assert [a.pharaoh for a in default] == [a.pharaoh for a in model.align(GERMAN, ENGLISH, layer=1)]
    assert all(one_link_per_target_word(a) for a in default)
    heads = [model.align(GERMAN, ENGLISH, layer=1, head=h) for h in (0, 1)]
    for k, pair in enumerate(default):  # the merge is linear: the heads' word weights average to the default's
        np.testing.assert_allclose((heads[0][k].weights + heads[1][k].weights) / 2, pair.weights, atol=1e-6)
    with pytest.raises(UserError, match=r"layer 3: the model has 3"):
        model.align(GERMAN, ENGLISH, layer=3)


def test_a_negative_head_counts_from_the_last_as_the_refusal_offers(transformer, tmp_path, capsys) -> None:
    """``--head -1`` is the last head, as ``--layer -1`` is the last layer and as the refusal of a
    head out of range offers (issue 70: it offered "-2 to -1" while the option refused -1)."""
    src, tgt = tmp_path / "src", tmp_path / "tgt"
    src.write_text("\n".join(GERMAN) + "\n", encoding="utf-8")
    tgt.write_text("\n".join(ENGLISH) + "\n", encoding="utf-8")
    argv = ["align", "--checkpoint", str(transformer), "--src", str(src), "--tgt", str(tgt)]
    code, _, err = run_cli([*argv, "--head", "2"], capsys)
    assert code == 2 and "head 2: the model has 2 (head 0 to 1, or -2 to -1)" in err, err
    code, last, err = run_cli([*argv, "--head", "-1"], capsys)
    assert code == 0, err
    assert last == run_cli([*argv, "--head", "1"], capsys)[1]
    assert last.splitlines() == [a.pharaoh for a in nmt.load(transformer).align(GERMAN, ENGLISH, head=-1)]


def test_the_last_layer_is_what_forced_decoding_and_an_ensemble_give(transformer, tmp_path, caplog) -> None:
    from nmt.decode.engines import open_engine
    from nmt.decode.word_merge import merge_pieces, word_pieces

    single = nmt.load(transformer)
    last = single.align(GERMAN, ENGLISH, layer=-1)
    scored = single.score(GERMAN, [" ".join(e.split()) for e in ENGLISH])
    tok = single.engine.tgt_tok
    for pair, result, (german, english) in zip(last, scored, zip(GERMAN, ENGLISH)):
        (_, src_owner), (_, tgt_owner) = word_pieces(tok, [german])[0], word_pieces(tok, [english])[0]
        merged = merge_pieces(
            result.attention[:-1], src_owner, tgt_owner, len(pair.source_words), len(pair.target_words)
        )
        np.testing.assert_allclose(merged, pair.weights, atol=1e-5)

    twin = tmp_path / "twin.pt"  # the same weights twice: the ensemble's mean is the model's own
    shutil.copy(transformer, twin)
    ensemble = nmt.Translator(open_engine("torch", [transformer, twin], None), transformer)
    with caplog.at_level(logging.WARNING, logger="nmt.decode.alignment"):
        both = ensemble.align(GERMAN, ENGLISH)
    assert "gives the last layer's cross-attention only" in caplog.text
    assert [a.pharaoh for a in both] == [a.pharaoh for a in last]
    with pytest.raises(UserError, match="last layer's cross-attention only"):
        ensemble.align(GERMAN, ENGLISH, layer=0)


def test_ctranslate2_is_refused_in_one_line(transformer, tmp_path, capsys) -> None:
    from nmt.export.ctranslate2 import export_ctranslate2

    folder = export_ctranslate2(transformer, tmp_path / "ct2")
    src, tgt = tmp_path / "src", tmp_path / "tgt"
    src.write_text("\n".join(GERMAN) + "\n", encoding="utf-8")
    tgt.write_text("\n".join(ENGLISH) + "\n", encoding="utf-8")
    engine = ["--engine", "ctranslate2", "--model", str(folder)]
    code, _, err = run_cli(["align", *engine, "--src", str(src), "--tgt", str(tgt)], capsys)
    assert code == 2 and "--engine ctranslate2 returns no attention weights, so it cannot align" in err
    out, aligned = tmp_path / "out", tmp_path / "out.align"
    code, _, err = run_cli(["translate", *engine, "-i", str(src), "-o", str(out), "--alignments", str(aligned)], capsys)
    assert code == 2 and "returns no attention weights" in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not aligned.exists()


@pytest.mark.slow
def test_onnxruntime_aligns_as_torch_reads_the_last_layer(transformer, tmp_path) -> None:
    from nmt.export.onnx_export import export_onnx

    exported = nmt.load(export_onnx(transformer, tmp_path / "onnx"))
    want = nmt.load(transformer).align(GERMAN, ENGLISH, layer=-1)
    for layer in (None, -1, 2):  # the export records 3 decoder layers: 2 is the last
        got = exported.align(GERMAN, ENGLISH, layer=layer)
        assert [a.pharaoh for a in got] == [a.pharaoh for a in want]
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.weights, b.weights, atol=1e-5)
    with pytest.raises(UserError, match="last layer's cross-attention only"):
        exported.align(GERMAN, ENGLISH, layer=1)


def test_the_reading_and_the_merge_rule_are_options_of_the_command_and_the_library(
    trained_toy, translator, pairs, tmp_path, capsys
):
    """--reading input (Chen et al. 2020's shift) and --merge mean|max give what Translator.align gives with
    them, and the report names both; an unknown value is one line."""
    sources, targets = pairs
    src, tgt, gold = tmp_path / "src.txt", tmp_path / "tgt.txt", tmp_path / "gold.txt"
    src.write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    tgt.write_text("".join(t + "\n" for t in targets), encoding="utf-8")
    gold.write_text("".join(line + "\n" for line in reversal(sources)), encoding="utf-8")
    model = [
        "align",
        "--checkpoint",
        str(trained_toy / "checkpoints" / "best.pt"),
        "--src",
        str(src),
        "--tgt",
        str(tgt),
    ]
    out, report = tmp_path / "out.align", tmp_path / "r"
    extra = ["--reading", "input", "--merge", "max", "-o", str(out), "--gold", str(gold), "--gold-format", "pharaoh"]
    code, _, err = run_cli([*model, *extra, "--report", str(report)], capsys)
    assert code == 0, err
    found = translator.align(sources, targets, reading="input", merge="max")
    assert out.read_text(encoding="utf-8").splitlines() == [a.pharaoh for a in found]
    settings = json.loads((report / "alignment_error.json").read_text(encoding="utf-8"))["settings"]
    assert settings["reading"] == "input" and "the max over a source word's pieces" in settings["merge"]
    assert [a.links for a in found] != [a.links for a in translator.align(sources, targets)]  # the shift moves links
    code, _, err = run_cli([*model, "--merge", "median"], capsys)
    assert code == 2 and "merge 'median': give one of sum, mean, max" in err
    with pytest.raises(UserError, match="reading='next'"):
        translator.align(sources, targets, reading="next")


def test_a_statistical_baseline_aligns_the_same_files_without_a_model(trained_toy, pairs, tmp_path, capsys) -> None:
    """nmt align --baseline eflomal: eflomal trained on a parallel corpus plus the pairs, its directions
    joined, written and scored as a model's alignments are; options of the other kind refused in one line."""
    sources, targets = pairs
    src, tgt, gold = tmp_path / "src.txt", tmp_path / "tgt.txt", tmp_path / "gold.txt"
    src.write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    tgt.write_text("".join(t + "\n" for t in targets), encoding="utf-8")
    gold.write_text("".join(line + "\n" for line in reversal(sources)), encoding="utf-8")
    base = ["align", "--src", str(src), "--tgt", str(tgt)]
    for extra, needle in (
        (
            ["--baseline", "eflomal", "--checkpoint", "x.pt"],
            "--baseline eflomal aligns without a model: leave out --checkpoint",
        ),
        (["--baseline", "fast_align"], "the baseline aligner nmt runs is eflomal"),
        (["--join", "intersection", "--checkpoint", "x.pt"], "--join go with --baseline eflomal"),
        (["--baseline", "eflomal", "--train-src", str(src)], "--train-src and --train-tgt go together"),
    ):
        code, _, err = run_cli([*base, *extra], capsys)
        assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    pytest.importorskip("eflomal")
    out, report = tmp_path / "eflomal.align", tmp_path / "r"
    train = ["--train-src", str(src), "--train-tgt", str(tgt)]  # the toy pairs again: a corpus of its own
    extra = ["--baseline", "eflomal", *train, "-o", str(out), "--gold", str(gold), "--gold-format", "pharaoh"]
    code, printed, err = run_cli([*base, *extra, "--report", str(report)], capsys)
    assert code == 0, err
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(sources) and lines[-1] == ""  # the blank pair keeps its place, unlinked
    record = json.loads((report / "alignment_error.json").read_text(encoding="utf-8"))
    assert record["settings"]["aligner"] == "eflomal" and record["settings"]["join"] == "grow-diag-final-and"
    assert printed.strip() == (report / "alignment_error.txt").read_text(encoding="utf-8").strip()
