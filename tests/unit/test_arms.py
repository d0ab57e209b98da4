"""The arms of nmt compare: variants, sweeps, their grid, and the runs arms share."""

from __future__ import annotations

import pytest

from nmt.config.arms import MAX_ARMS, Sweep, expand_arms, parse_sweep, sweep_of
from nmt.util.errors import UserError


def test_variants_alone_keep_their_names_and_folders():
    arms = expand_arms(["bahdanau", "bahdanau+enc_self"], [])
    assert [(a.label, a.run_stem, a.decode) for a in arms] == [
        ("bahdanau", "bahdanau", ()),
        ("bahdanau+enc_self", "bahdanau_enc_self", ()),
    ]
    assert arms[0].train == ("model.attention.type=bahdanau",)


def test_two_sweeps_form_a_grid_in_the_order_given():
    arms = expand_arms(None, [parse_sweep("train.teacher_forcing=1.0,0.5"), parse_sweep("model.dropout=0,0.3")])
    assert [a.label for a in arms] == [
        "train.teacher_forcing=1.0 model.dropout=0",
        "train.teacher_forcing=1.0 model.dropout=0.3",
        "train.teacher_forcing=0.5 model.dropout=0",
        "train.teacher_forcing=0.5 model.dropout=0.3",
    ]
    assert arms[3].train == ("train.teacher_forcing=0.5", "model.dropout=0.3")
    assert arms[3].run_stem == "train.teacher_forcing-0.5_model.dropout-0.3"
    assert len({a.run_stem for a in arms}) == 4


def test_a_sweep_with_variants_gives_every_variant_every_point_after_its_own_overrides():
    arms = expand_arms(["none", "qkv"], [parse_sweep("model.attention.heads=1,2")])
    assert [a.label for a in arms] == [
        "none model.attention.heads=1",
        "none model.attention.heads=2",
        "qkv model.attention.heads=1",
        "qkv model.attention.heads=2",
    ]
    assert arms[2].train[-1] == "model.attention.heads=1"  # the sweep's value wins over the variant's 4
    assert arms[2].run_stem == "qkv_model.attention.heads-1"


def test_decoding_sweeps_share_the_trained_runs():
    arms = expand_arms(["bahdanau"], [parse_sweep("model.dropout=0.1,0.2"), parse_sweep("decode.length_penalty=0,1")])
    stems = [a.run_stem for a in arms]
    assert stems[0] == stems[1] != stems[2] == stems[3]  # two runs, each scored twice
    assert arms[1].decode == ("decode.length_penalty=1",) and "decode.length_penalty=1" not in arms[1].train
    assert arms[0].score_tag == "decode.length_penalty-0" != arms[1].score_tag
    assert expand_arms(["none"], [])[0].score_tag == ""


@pytest.mark.parametrize(
    "text, message",
    [
        ("train.teacher_forcing", "expected KEY=V1,V2"),
        ("=1,2", "expected KEY=V1,V2"),
        ("train.teacher_forcing= , ", "expected KEY=V1,V2"),
        ("train.seed=1,2", "use --seeds"),
        ("train.max_steps=10,20", "use --steps"),
        ("name=a,b", "run folders are named"),
        ("model.dropout=0.1,0.1", "each value may appear once"),
        ("train.lr=0.1,,0.2", "value 2 is empty"),  # was dropped: two arms where three were typed
        ("train.lr=0.1,0.2,", "value 3 is empty"),
    ],
)
def test_bad_sweeps_are_refused(text, message):
    with pytest.raises(UserError, match=message):
        parse_sweep(text)


def test_grid_problems_are_refused():
    with pytest.raises(UserError, match="swept once"):
        expand_arms(None, [parse_sweep("model.dropout=0,1"), parse_sweep("model.dropout=0.5,0.6")])
    with pytest.raises(UserError, match="share the run folder"):
        expand_arms(None, [parse_sweep("data.src=a/b,a:b")])  # both become a_b
    with pytest.raises(UserError, match="give at least one variant"):
        expand_arms([], [])
    with pytest.raises(UserError, match="unknown variant"):
        expand_arms(["nope"], [parse_sweep("model.dropout=0,1")])


def test_a_plan_of_more_arms_than_the_ceiling_is_refused_before_any_is_built():
    forty = parse_sweep("train.lr=" + ",".join(str(i) for i in range(1, 41)))
    assert len(expand_arms(None, [forty])) == 40
    with pytest.raises(UserError, match=f"1,600 arms \\(40 x 40\\), more than {MAX_ARMS:,}"):
        expand_arms(None, [forty, parse_sweep("train.max_tokens=" + ",".join(str(i) for i in range(1, 41)))])
    with pytest.raises(UserError, match=r"2,000 arms \(2 x 1000\)"):
        expand_arms(["bahdanau", "qkv"], [parse_sweep("train.lr=" + ",".join(str(i) for i in range(1000)))])
    assert len(expand_arms(None, [parse_sweep("train.lr=" + ",".join(str(i) for i in range(MAX_ARMS)))])) == MAX_ARMS


def test_a_sweep_from_a_list_of_values_is_the_sweep_its_text_gives():
    """nmt.compare(sweep={KEY: [V1, V2]}) builds its sweeps here, not by joining the values with commas."""
    assert sweep_of("train.lr", [0.1, 0.2]) == parse_sweep("train.lr=0.1,0.2") == Sweep("train.lr", ("0.1", "0.2"))
    assert sweep_of("decode.beam", (1, 5)) == Sweep("decode.beam", ("1", "5"))
    assert sweep_of("train.lr", "0.1,0.2") == parse_sweep("train.lr=0.1,0.2")  # the text form, as given


@pytest.mark.parametrize(
    "key, values, message",
    [
        ("train.lr", ["0.1,0.2"], r"^--sweep train.lr: the value '0.1,0.2' holds a comma, "),  # was two arms
        ("model.dropout", [0.1, "0.3, 0.4"], r"the value '0.3, 0.4' holds a comma"),
        ("train.lr", [], r"^--sweep train.lr: give at least one value$"),
        ("train.lr", [0.1, ""], r"value 2 is empty"),
        ("train.lr", [0.1, 0.1], r"each value may appear once"),
        ("train.seed", [1, 2], r"use --seeds"),
        ("", [1, 2], r"expected KEY=V1,V2"),
    ],
)
def test_a_sweep_from_a_list_refuses_what_its_text_form_could_not_carry(key, values, message):
    with pytest.raises(UserError, match=message) as info:
        sweep_of(key, values)
    assert "\n" not in str(info.value)


def test_a_transformer_config_without_variants_is_one_arm_of_its_own_model():
    """The attention variants are an RNN's: a Transformer config compares its own model across seeds
    (the default bahdanau, luong_general would set model.attention on it and be refused)."""
    from pathlib import Path

    from nmt.comparison.plan import Plan

    transformer = Path(__file__).resolve().parents[2] / "configs" / "multi30k_de_en_transformer.yaml"
    plan = Plan(config=transformer, variants=None, seeds=[1, 2], steps=10)
    assert [(a.label, a.run_stem, a.train) for a in plan.arms] == [("transformer", "transformer", ())]
    rnn = Plan(config=None, variants=None, seeds=[1], steps=10)  # the default config is an RNN
    assert [a.label for a in rnn.arms] == ["bahdanau", "luong_general"]
