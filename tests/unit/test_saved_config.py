"""One rule for whether a saved config fits a new one (nmt.config.saved), for each of its callers."""

from __future__ import annotations

import copy

import pytest

from nmt import config as C
from nmt.config.saved import (
    RESUME,
    SAME_MODEL,
    SAME_NETWORK,
    SAME_TRAINING,
    Change,
    changes,
    fingerprint,
    saved_config,
    without_inert_options,
)

HALF = ["model.hidden_size=256", "model.init_state=bridge", "model.enc_hidden_size=half"]
EXPLICIT = ["model.hidden_size=256", "model.init_state=bridge", "model.enc_hidden_size=128"]


def _keys(a: list[str], b: list[str], fit) -> list[str]:
    return [c.key for c in changes(C.load(None, a), C.load(None, b), fit)]


def test_an_equal_config_fits_every_purpose() -> None:
    cfg = C.load(None, [])
    assert all(changes(cfg, cfg, fit) == [] for fit in (RESUME, SAME_MODEL, SAME_NETWORK, SAME_TRAINING))


def test_resume_frees_train_decode_and_the_mirror_only() -> None:
    assert _keys(["train.lr=0.01", "decode.beam=3", "data.mirror=/m"], [], RESUME) == []
    assert _keys(["model.dropout=0.25", "data.vocab_size=123", "train.lr=0.01"], [], RESUME) == [
        "data.vocab_size",
        "model.dropout",
    ]


def test_a_change_reads_as_the_resume_message_words_it() -> None:
    (change,) = changes(C.load(None, ["model.hidden_size=64"]), C.load(None, []), RESUME)
    assert change == Change("model.hidden_size", 64, C.ModelConfig().hidden_size)
    assert str(change) == f"model.hidden_size: 64 -> {C.ModelConfig().hidden_size!r}"


def test_half_and_its_size_build_one_network_but_are_different_options() -> None:
    assert _keys(HALF, EXPLICIT, SAME_NETWORK) == []  # averaging: the same network
    assert _keys(HALF, EXPLICIT, SAME_TRAINING) == []  # compare: the same training
    assert _keys(HALF, EXPLICIT, SAME_MODEL) == ["model.enc_hidden_size"]  # a checkpoint restored: as written
    assert _keys(
        HALF, ["model.hidden_size=256", "model.init_state=bridge", "model.enc_hidden_size=64"], SAME_NETWORK
    ) == ["model.enc_hidden_size"]  # another size is another network


def test_same_network_frees_the_dropout_rates_and_ignores_training() -> None:
    assert _keys(["model.dropout=0.4", "model.src_word_dropout=0.1", "train.lr=0.01"], [], SAME_NETWORK) == []
    assert _keys(["model.hidden_size=64"], [], SAME_NETWORK) == ["model.hidden_size"]
    assert _keys(["model.dropout=0.4"], [], SAME_MODEL) == ["model.dropout"]


def test_same_training_frees_only_speed_options() -> None:
    assert _keys(["train.threads=3", "train.log_every=7"], [], SAME_TRAINING) == []
    assert _keys(["train.lr=0.01"], [], SAME_TRAINING) == ["train.lr"]
    a, b = C.load(None, ["train.threads=3"]), C.load(None, [])
    assert without_inert_options(a) == without_inert_options(b)


@pytest.mark.parametrize("raw", [C.Config().model_dump(mode="json"), {"model": {"hidden_size": 64}}])
def test_saved_config_reads_without_changing_its_argument(raw) -> None:
    before = copy.deepcopy(raw)
    cfg = saved_config(raw)
    assert isinstance(cfg, C.Config) and raw == before
    assert cfg == C.from_dict(C.fill_saved_defaults(copy.deepcopy(raw)))


def test_same_training_ignores_where_the_raw_files_came_from() -> None:
    """A run prepared from a mirror is reused by a plan that downloads (or names another mirror)."""
    assert _keys(["data.mirror=/m"], [], SAME_TRAINING) == []
    assert _keys(["data.mirror=/m", "data.vocab_size=123"], [], SAME_TRAINING) == ["data.vocab_size"]


@pytest.mark.parametrize("fit", [RESUME, SAME_MODEL, SAME_NETWORK, SAME_TRAINING])
def test_configs_share_a_fingerprint_exactly_when_no_option_changes(fit) -> None:
    overrides = [[], HALF, EXPLICIT, ["train.lr=0.01"], ["train.threads=3"], ["model.dropout=0.4"], ["decode.beam=3"]]
    overrides += [["data.mirror=/m"], ["train.teacher_forcing=1"], ["train.teacher_forcing=1.0"], ["decode.beam=5"]]
    configs = [C.load(None, o) for o in overrides]
    for a in configs:
        for b in configs:
            assert (fingerprint(a, fit) == fingerprint(b, fit)) == (changes(a, b, fit) == [])
