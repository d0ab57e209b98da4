"""docs_build/aer_table.py: one row per variant and attention read over seeds, then the baselines."""

import importlib
import json

import pytest

aer_table = importlib.import_module("aer_table")  # docs_build/ is on sys.path (tests/conftest.py)


def model(variant: str, seed: int, aer: float, **reading) -> dict:
    line = {"aligner": "nmt", "variant": variant, "arch": "rnn", "seed": seed, "step": 600, "heads": 1}
    line.update(aer=aer, precision=1 - aer, recall=1 - aer, test2016_bleu=30.0 + seed, default=True)
    return {**line, **reading}


def test_rows_pool_seeds_per_reading_and_mark_the_default(tmp_path, capsys):
    lines = [model("bahdanau", s, 0.80 + 0.01 * s) for s in (1, 2, 3)]
    lines += [
        model("qkv", s, 0.7, heads=2, **({"head": h, "default": False} if h is not None else {}))
        for s in (1, 2)
        for h in (None, 1)
    ]
    lines += [
        {
            "aligner": "nmt",
            "variant": "transformer",
            "arch": "transformer",
            "seed": 1,
            "step": 600,
            "layer": 1,
            "layers": 3,
            "head": None,
            "heads": 2,
            "default": True,
            "aer": 0.5,
            "precision": 0.5,
            "recall": 0.5,
            "test2016_bleu": None,
        },
        {"aligner": "diagonal", "variant": "diagonal", "aer": 0.744, "precision": 0.253, "recall": 0.258},
        *(
            {
                "aligner": "eflomal",
                "variant": "eflomal grow-diag-final-and",
                "train_tokens": "punct, lowercased",
                "aer": a,
                "precision": 0.7,
                "recall": 0.6,
            }
            for a in (0.30, 0.32)
        ),
    ]
    path = tmp_path / "aer.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    aer_table.main([str(path)])
    rows = capsys.readouterr().out.splitlines()[2:]
    # 81, 82, 83: mean 82.0, half-width 4.30 x 1 / sqrt(3) = 2.48
    assert rows[0] == (
        "| bahdanau attention | its attention * | Multi30k de-en, 600 updates | seeds 1, 2, 3 | 82.0 ± 2.5 "
        "| 18.0 ± 2.5 | 18.0 ± 2.5 | 32.0 ± 2.5 |"
    )
    assert (
        rows[1].startswith("| qkv attention | its attention (2 heads), heads averaged * | ") and "seeds 1, 2" in rows[1]
    )
    assert rows[2].startswith("| qkv attention | its attention (2 heads), head 1 | ")
    assert (
        rows[3]
        == "| transformer attention | decoder layer 1 of 3 (from 0), heads averaged * | Multi30k de-en, 600 updates | seed 1 | 50.0 | 50.0 | 50.0 |  |"
    )
    assert rows[4] == "| diagonal (reads no words) | | nothing | 1 | 74.4 | 25.3 | 25.8 | |"
    assert rows[5].startswith(
        "| eflomal grow-diag-final-and | | Multi30k + the 508 pairs, punctuation split off | 2 | 31.0 ± "
    )


def test_seeds_whose_checkpoints_validation_chose_at_other_steps_share_one_row(tmp_path, capsys):
    """Runs trained to the same updates are one variant, whichever checkpoint validation chose; the
    row names the steps (a Transformer's best may come before its last update)."""
    lines = [
        model("transformer", 4, 0.80, updates=1500, step=1350),
        model("transformer", 5, 0.82, updates=1500, step=1500),
        model("transformer", 6, 0.84, updates=1500, step=1350),
    ]
    path = tmp_path / "aer.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    aer_table.main([str(path)])
    (row,) = capsys.readouterr().out.splitlines()[2:]
    assert (
        "| Multi30k de-en, 1500 updates (checkpoints chosen on validation: 1350, 1500, 1350) | seeds 4, 5, 6 |" in row
    )


def test_a_line_that_is_not_json_ends_in_one_line(tmp_path):
    path = tmp_path / "aer.jsonl"
    path.write_text('{"aligner": "diagonal"}\nnot json\n')
    with pytest.raises(SystemExit, match=r"aer\.jsonl:2: not a JSON line"):
        aer_table.main([str(path)])


def test_a_run_given_twice_is_refused_in_one_line(tmp_path):
    path = tmp_path / "aer.jsonl"
    path.write_text("".join(json.dumps(model("bahdanau", 1, 0.8)) + "\n" for _ in range(2)))
    with pytest.raises(SystemExit, match=r"bahdanau \(its attention \*\): a seed occurs twice in \[1, 1\]"):
        aer_table.main([str(path)])


def test_readings_merges_corpora_and_seen_words_get_their_own_rows_and_column(tmp_path, capsys):
    """Europarl lines of scripts/align_rwth.py --readings predict,input --merges sum,max --seen-src ...:
    a row per reading and merge rule, the corpus named, the test split's BLEU, AER on seen words."""
    lines = []
    for reading, merge in (("predict", "sum"), ("input", "sum"), ("predict", "max")):
        for s in (4, 5):
            line = model("coverage", s, 0.5, reading=reading, merge=merge, corpus="europarl", seen_aer=0.4)
            line["default"] = reading == "predict" and merge == "sum"
            line["test_bleu"] = line.pop("test2016_bleu")
            lines.append(line)
    lines.append(
        {
            "aligner": "eflomal",
            "variant": "eflomal grow-diag-final-and",
            "train": "data/europarl/de-en/train.de + data/europarl/de-en/train.en (21,434 pairs) + the 508 RWTH pairs",
            "train_tokens": "whitespace, lowercased",
            "aer": 0.3,
            "seen_aer": 0.25,
            "precision": 0.7,
            "recall": 0.7,
        }
    )
    path = tmp_path / "aer.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    aer_table.main([str(path)])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "| aligner | attention read | trained on | runs | AER % | AER % (seen words) | precision % | recall % | test BLEU |"
    )
    rows = out[2:]
    assert rows[0].startswith(
        "| coverage attention | its attention * | the Europarl sample de-en, 600 updates | seeds 4, 5 "
    )
    assert "| 50.0 ± 0.0 | 40.0 ± 0.0 | 50.0 ± 0.0 | 50.0 ± 0.0 | 34.5 ± 6.4 |" in rows[0]
    assert rows[1].startswith("| coverage attention | its attention, read where the word is input | ")
    assert rows[2].startswith("| coverage attention | its attention, pieces merged by max | ")
    assert rows[3].startswith(
        "| eflomal grow-diag-final-and | | the Europarl sample + the 508 pairs, whitespace tokens | 1 | 30.0 | 25.0 |"
    )
