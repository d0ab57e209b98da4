"""scripts/align_rwth.py: the archive read as the RWTH set is laid out (Latin-1, 1-based links, a blank
last line), the run facts, eflomal's training text, its joined directions and the diagonal baseline;
then, on tiny random models (alignment reads weights, the models need not have learned), one line per
attention a model reads: each Transformer layer (and head), an RNN's heads averaged and each head."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

import _align_readings
import align_rwth
import nmt
from nmt.evaluation import statistical_aligner as _align_eflomal
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
    assert "seen_aer" not in record  # no training text given: no seen-word scores
    assert record["predicted"] == 7 + 2  # one link per English word
    assert 0.0 <= record["aer"] <= 1.0


def test_seen_scores_keep_only_links_whose_two_words_the_training_text_holds(archive: Path, tmp_path: Path) -> None:
    rwth = align_rwth.read_archive(archive, tmp_path / "out")
    predicted = [[(0, 0), (1, 1), (2, 2), (3, 3)], [(0, 0), (1, 0)]]
    every = (
        frozenset(w for s in rwth.sources for w in s.split()),
        frozenset(w for t in rwth.targets for w in t.split()),
    )
    whole = align_rwth.scores(nmt.alignment_error(predicted, rwth.gold))
    assert {k[5:]: v for k, v in align_rwth.seen_scores(predicted, rwth, every).items()} == whole
    # "weiß" (German word 1 of pair 0) and "house" (English word 1 of pair 1) unseen: every link of theirs goes
    seen = align_rwth.seen_scores(predicted, rwth, (every[0] - {"weiß"}, every[1] - {"house"}))
    assert seen["seen_predicted"] == whole["predicted"] - 1  # (1, 1) of pair 0; pair 1's links hold neither word
    assert seen["seen_sure"] == whole["sure"] - 2  # (1, 1) of pair 0 (weiß-know) and of pair 1 (Haus-house)
    assert seen["seen_possible"] == whole["possible"] - 2


def test_seen_needs_both_training_texts_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.de").write_text("Das Haus\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        align_rwth.main(["--diagonal", "--seen-src", str(tmp_path / "t.de")])
    assert stop.value.code == 2 and "--seen-tgt" in capsys.readouterr().err


@pytest.mark.parametrize("given", ["input,sideways", ""])
def test_an_unknown_reading_is_refused_in_one_line(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        align_rwth.main(["--diagonal", "--readings", given])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and "predict, input" in err


def test_run_facts_come_from_config_and_scored_test(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "best.pt").write_bytes(b"")
    config = "data:\n  corpus: europarl\nmodel:\n  arch: rnn\n  attention:\n    type: bahdanau\ntrain:\n  seed: 2\n"
    (run / "config.yaml").write_text(config)
    (run / "compare-test2016").mkdir()
    (run / "compare-test2016" / "scored.json").write_text(json.dumps({"result": {"bleu": 20.5, "updates": 600}}))
    facts = {
        "variant": "bahdanau",
        "arch": "rnn",
        "corpus": "europarl",
        "seed": 2,
        "test2016_bleu": 20.5,
        "updates": 600,
    }
    assert align_rwth.run_facts(run, "test2016") == facts
    assert align_rwth.run_facts(run / "checkpoints" / "best.pt", "test2016") == facts
    assert align_rwth.run_facts(tmp_path / "elsewhere", "test2016")["variant"] is None


def test_punct_tokens_split_punctuation_off_words_and_skip_blank_pairs(tmp_path: Path) -> None:
    (tmp_path / "a.de").write_text('Zwei Männer, "draußen".\n\nEin Hund.\n', encoding="utf-8")
    (tmp_path / "a.en").write_text('Two men, "outside".\nA dog.\n\n', encoding="utf-8")
    pairs = _align_eflomal.training_pairs(tmp_path / "a.de", tmp_path / "a.en", "punct")
    assert pairs == [('Zwei Männer , " draußen " .', 'Two men , " outside " .')]
    assert (
        _align_eflomal.training_pairs(tmp_path / "a.de", tmp_path / "a.en", "whitespace")[0][1] == 'Two men, "outside".'
    )


def test_no_aligner_at_all_exits_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        align_rwth.main([])
    assert stop.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_eflomal_missing_names_the_extra_by_the_distributions_name(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """'nmt' on the package index is another project: the line must say nmt-attention[align]."""
    monkeypatch.setitem(sys.modules, "eflomal", None)  # import eflomal raises ImportError
    with pytest.raises(SystemExit) as stop:
        align_rwth.main(["--eflomal"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert "pip install 'nmt-attention[align]'" in err and "--eflomal" in err


def test_a_transformer_run_is_named_transformer_not_its_unused_rnn_attention(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("model:\n  arch: transformer\n  attention:\n    type: bahdanau\n")
    assert align_rwth.run_facts(tmp_path, "test2016")["variant"] == "transformer"


def test_a_compare_run_is_named_by_its_folder_and_a_custom_energy_by_its_energy(tmp_path: Path) -> None:
    location = "model:\n  attention:\n    type: custom\n    energy: location\n"
    for name, want in (("luong_location_s4", "luong_location"), ("my_run", "location")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.yaml").write_text(location)
        assert align_rwth.run_facts(tmp_path / name, "test2016")["variant"] == want


def test_eflomal_joins_lie_between_the_intersection_and_the_union(tmp_path: Path) -> None:
    pytest.importorskip("eflomal")
    train = [("ein hund läuft", "a dog runs"), ("ein hund", "a dog"), ("zwei hunde laufen", "two dogs run")] * 5
    sources, targets = ["der hund läuft", "zwei hunde"], ["the dog runs", "two dogs"]
    run = _align_eflomal.run_eflomal(sources, targets, train, samplers=1, folder=tmp_path, repeat=0)
    assert list(run.links) == list(_align_eflomal.JOINS)
    for k in range(len(sources)):
        forward, reverse = run.links["forward"][k], run.links["reverse"][k]
        assert run.links["intersection"][k] == forward & reverse
        assert forward & reverse <= run.links["grow-diag-final-and"][k] <= forward | reverse


@pytest.mark.parametrize(
    ("arch", "layers", "heads", "per_head", "want"),
    [
        ("transformer", 3, 2, False, [(0, None), (1, None), (2, None)]),
        ("transformer", 2, 2, True, [(0, None), (0, 0), (0, 1), (1, None), (1, 0), (1, 1)]),
        ("rnn", 0, 1, True, [(None, None)]),
        ("rnn", 0, 3, False, [(None, None), (None, 0), (None, 1), (None, 2)]),
    ],
)
def test_readings_are_every_layer_and_each_head_where_there_are_several(arch, layers, heads, per_head, want) -> None:
    found = _align_readings.readings(arch, layers, heads, per_head)
    assert [(r.layer, r.head) for r in found] == want
    defaults = [(r.layer, r.head) for r in found if r.default]
    assert defaults == [(max(layers - 2, 0) if arch == "transformer" else None, None)]  # the penultimate layer


# --- tiny random models ---------------------------------------------------------------------------------------

TRANSFORMER = ["model.arch=transformer"] + [
    f"model.transformer.{o}" for o in ("d_model=16", "heads=2", "ff_size=32", "enc_layers=1", "dec_layers=3")
]
RNN = ["model.emb_size=16", "model.hidden_size=16"]
QKV = [*RNN, "model.attention.type=qkv", "model.attention.heads=2"]


def save_model(folder: Path, prepared: Path, overrides: list[str]) -> Path:
    """A randomly initialized model saved as training saves one."""
    from nmt import config as C
    from nmt.data.prepare import load_prepared
    from nmt.model.build import build_model
    from nmt.run import checkpoint as ckpt
    from nmt.run.state import TrainState

    cfg = C.load(None, overrides)
    _, tok, _ = load_prepared(prepared)
    torch.manual_seed(0)
    model = build_model(cfg.model, tok.vocab_size, tok.vocab_size)
    saved = ckpt.Checkpoint(
        cfg.model_dump(mode="json"), model.state_dict(), {"src": tok.model_bytes, "tgt": tok.model_bytes}, TrainState(3)
    )
    return ckpt.save(folder / "model.pt", saved)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory, toy_prepared: Path) -> dict[str, Path]:
    """A 3-layer Transformer with 2 heads, a one-head RNN (bahdanau) and a 2-head qkv RNN."""
    saved = {}
    for name, overrides in {"transformer": TRANSFORMER, "rnn": RNN, "qkv": QKV}.items():
        saved[name] = save_model(tmp_path_factory.mktemp(name), toy_prepared, overrides)
    return saved


@pytest.fixture
def rwth(archive: Path, tmp_path: Path) -> align_rwth.GoldSet:
    return align_rwth.read_archive(archive, tmp_path / "out")


def lines(path: Path, rwth: align_rwth.GoldSet, *options: str) -> list[dict]:
    args = align_rwth.build_parser().parse_args([str(path), "--threads", "1", *options])
    return align_rwth.align_model(path, rwth, args)


@pytest.mark.parametrize("per_head", [False, True])
def test_a_transformer_writes_a_line_per_layer_and_with_per_head_per_head(models, rwth, per_head) -> None:
    found = lines(models["transformer"], rwth, *(["--per-head"] if per_head else []))
    assert len(found) == 3 * (3 if per_head else 1)
    assert {(r["arch"], r["variant"], r["heads"], r["layers"]) for r in found} == {("transformer", "transformer", 2, 3)}
    assert [r["layer"] for r in found if r["head"] is None] == [0, 1, 2]
    assert [(r["layer"], r["head"]) for r in found if r["default"]] == [(1, None)]
    assert all(r["predicted"] == 7 + 2 and 0.0 <= r["aer"] <= 1.0 for r in found)  # one link per English word


def test_a_one_head_rnn_writes_one_line_and_a_qkv_rnn_one_per_head_too(models, rwth) -> None:
    (one,) = lines(models["rnn"], rwth)
    assert (one["layer"], one["head"], one["default"], one["heads"], one["arch"]) == (None, None, True, 1, "rnn")
    found = lines(models["qkv"], rwth)
    assert [(r["layer"], r["head"], r["default"], r["heads"]) for r in found] == [
        (None, None, True, 2),
        (None, 0, False, 2),
        (None, 1, False, 2),
    ]


def test_readings_and_merges_give_a_line_each_and_the_default_is_the_predicting_step_summed(models, rwth) -> None:
    found = lines(models["rnn"], rwth, "--readings", "predict,input", "--merges", "sum,max")
    assert [(r["reading"], r["merge"], r["default"]) for r in found] == [
        ("predict", "sum", True),
        ("predict", "max", False),
        ("input", "sum", False),
        ("input", "max", False),
    ]
    assert found[1]["rule"] != found[0]["rule"]  # each line says its own merge rule
    model = nmt.load(models["rnn"], device="cpu", threads=1)
    shifted = model.align(rwth.sources, rwth.targets, reading="input", merge="sum")
    assert found[2]["aer"] == align_rwth.scores(nmt.alignment_error(shifted, rwth.gold))["aer"]
    assert (
        found[0]["aer"]
        == align_rwth.scores(nmt.alignment_error(model.align(rwth.sources, rwth.targets), rwth.gold))["aer"]
    )


def test_an_rnn_head_is_one_of_the_heads_that_average_to_the_default(models, rwth) -> None:
    model = nmt.load(models["qkv"], device="cpu", threads=1)
    read = _align_readings.Reading
    average = _align_readings.align_reading(model, rwth.sources, rwth.targets, read(None, None, True), None)
    heads = [
        _align_readings.align_reading(model, rwth.sources, rwth.targets, read(None, h, False), None) for h in (0, 1)
    ]
    for k, pair in enumerate(average):  # the merge is linear: the heads' word weights average to the default's
        np.testing.assert_allclose((heads[0][k].weights + heads[1][k].weights) / 2, pair.weights, atol=1e-6)
        assert sorted(j for _, j in heads[0][k].links) == list(range(len(pair.target_words)))
    assert not np.allclose(heads[0][0].weights, average[0].weights)  # a head of its own, not the mean again
    attention = model.engine.loaded.model.decoder.attention
    assert not attention._forward_hooks  # the hook that reads the heads is gone once align returns
    after = model.align(rwth.sources, rwth.targets)  # and the default reads the heads' mean again
    assert all(np.array_equal(a.weights, p.weights) for a, p in zip(after, average))
    with pytest.raises(UserError, match="head 2: the model has 2"):
        model.align(rwth.sources, rwth.targets, head=2)


def test_the_torch_engine_gives_a_multi_head_rnns_heads_as_one_layer_that_averages_to_its_attention(models) -> None:
    """What nmt align --head and nmt serve's page read of a qkv RNN: (1 layer, heads, T + 1, S)."""
    for name, heads in (("qkv", 2), ("rnn", None)):
        model = nmt.load(models[name], device="cpu", threads=1)
        src, tgt = [5, 9, 7], [6, 8]
        found = model.engine.layer_attention([src], [tgt])
        assert model.engine.describe().layer_attention is (heads is not None)
        if found is None:  # one head: nothing beyond the forced attention to show
            assert heads is None
            continue
        (maps,) = found
        assert maps.shape == (1, heads, len(tgt) + 1, len(src))
        np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)  # each head a distribution over the source
        decode = model.engine.decode_config([])
        (forced,) = model.engine.force([src], [tgt], decode, attention=True)
        np.testing.assert_allclose(maps[0].mean(0), np.asarray(forced.attention), atol=1e-6)
        assert not np.allclose(maps[0, 0], maps[0, 1])  # two heads of their own


@pytest.mark.parametrize("name", ["qkv", "transformer"])
def test_layer_maps_read_in_padded_batches_equal_the_maps_read_one_pair_at_a_time(models, name) -> None:
    """Batching pads sources and outputs to the longest: a pair's maps must not see that padding."""
    model = nmt.load(models[name], device="cpu", threads=1)
    sources = [[5, 9, 7, 11, 6, 8], [5], [9, 7, 6], [8, 8, 5, 9]]
    outputs = [[6, 8], [7, 5, 9, 10, 6], [], [11]]
    alone = [model.engine.layer_attention([s], [o], batch_size=1)[0] for s, o in zip(sources, outputs)]
    batched = model.engine.layer_attention(sources, outputs, batch_size=3)  # a batch of 3, then one of 1
    assert [m.shape[2:] for m in batched] == [(len(o) + 1, len(s)) for s, o in zip(sources, outputs)]
    for one, many in zip(alone, batched):
        np.testing.assert_allclose(many, one, atol=1e-5)
        np.testing.assert_allclose(many.sum(-1), 1.0, atol=1e-5)  # no weight on the padding


@pytest.mark.parametrize("name", ["qkv", "transformer", "rnn"])
def test_layer_maps_refuse_what_forced_scoring_refuses_in_one_line(models, name) -> None:
    """The maps and the forced scores share one check: a blank source or a missing output is the
    user's mistake (UserError, one line), not a crash inside the model, even from a model that has
    no such maps (the one-head RNN)."""
    model = nmt.load(models[name], device="cpu", threads=1)
    with pytest.raises(UserError, match="source 1 is blank"):
        model.engine.layer_attention([[5, 9], []], [[6], [7]])
    with pytest.raises(UserError, match="2 sources but 1 targets"):
        model.engine.layer_attention([[5, 9], [6]], [[6]])
    if name == "rnn":
        assert model.engine.layer_attention([[5, 9]], [[6]]) is None
        return
    with pytest.raises(ValueError, match="batch_size=0"):
        model.engine.layer_attention([[5, 9]], [[6]], batch_size=0)


def test_a_failure_while_reading_heads_leaves_no_hook_and_the_mode_as_it_was(models, monkeypatch) -> None:
    from nmt.decode import torch_engine

    model = nmt.load(models["qkv"], device="cpu", threads=1)
    loaded = model.engine.loaded.model
    loaded.train()

    def broken(*args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(torch_engine, "force_decode", broken)
    with pytest.raises(RuntimeError, match="out of memory"):
        model.engine.layer_attention([[5, 9]], [[6]])
    assert not loaded.decoder.attention._forward_hooks and loaded.training


def test_eflomal_records_name_their_training_files_and_score_each_join(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The records of one eflomal run, with a stand-in for eflomal itself (not installed in CI): the
    training text the script was given, split as asked, goes to the aligner with the gold pairs'
    sentences, and each join's links are scored against the gold."""
    import _align_baselines

    (tmp_path / "t.de").write_text("Das Haus, ja.\n", encoding="utf-8")
    (tmp_path / "t.en").write_text("The house, yes.\n", encoding="utf-8")
    rwth = align_rwth.read_archive(archive, tmp_path / "out")
    seen: dict[str, object] = {}

    def stand_in(sources, targets, train, *, samplers, folder, repeat):
        seen.update(sources=sources, train=train, samplers=samplers, repeat=repeat)
        links = [frozenset(g.sure) for g in rwth.gold]  # the sure links: AER 0
        return _align_eflomal.EflomalRun({name: links for name in _align_eflomal.JOINS}, {"eflomal_seed": 7})

    monkeypatch.setattr(_align_baselines, "run_eflomal", stand_in)
    files = (tmp_path / "t.de", tmp_path / "t.en")
    records = _align_baselines.align_eflomal(rwth, files, tokens="punct", samplers=3, folder=tmp_path, repeat=2)
    assert seen == {
        "sources": rwth.sources,
        "train": [("Das Haus , ja .", "The house , yes .")],
        "samplers": 3,
        "repeat": 2,
    }
    assert [r["direction"] for r in records] == list(_align_eflomal.JOINS)
    assert all(r["aer"] == 0.0 and r["repeat"] == 2 and r["eflomal_seed"] == 7 for r in records)
    assert records[0]["train"] == f"{files[0]} + {files[1]} (1 pairs) + the 2 RWTH pairs"
    assert records[0]["train_tokens"].startswith("punct")


def test_the_script_writes_a_json_line_per_reading_and_per_eflomal_alignment(
    models, archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "t.de").write_text("Das Haus .\nIch weiß es .\n" * 5, encoding="utf-8")
    (tmp_path / "t.en").write_text("The house .\nI know it .\n" * 5, encoding="utf-8")
    argv = [str(models["transformer"]), str(models["qkv"]), "--archive", str(archive), "--threads", "1", "--diagonal"]
    has_eflomal = importlib.util.find_spec("eflomal") is not None
    if has_eflomal:
        argv += ["--eflomal", "--train-src", str(tmp_path / "t.de"), "--train-tgt", str(tmp_path / "t.en")]
    assert align_rwth.main(argv) == 0
    found = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["variant"] for r in found] == ["transformer"] * 3 + [None] * 3 + ["diagonal"] + (
        [f"eflomal {name}" for name in _align_eflomal.JOINS] if has_eflomal else []
    )
    assert all(r["bench"] == "align_rwth" and r["pairs"] == 2 for r in found)
