"""Configs saved by earlier versions: the defaults they get back, and which differences nmt compare ignores."""

from typing import Any

import pytest

from nmt import config as C
from nmt.util.errors import ConfigError


def saved_config(**model: object) -> dict[str, Any]:
    """Today's full config as a run saves it, with ``section__option`` values set (None deletes the option)."""
    raw = C.Config().model_dump(mode="json")
    for key, value in model.items():
        *sections, option = key.split("__")
        node = raw["model"]
        for section in sections:
            node = node[section]
        if value is None:
            del node[option]
        else:
            node[option] = value
    return raw


def test_configs_saved_before_self_attention_norm_and_gate_rebuild_post_norm_blocks() -> None:
    """A saved run with a self-attention block gets the old block back; one without keeps today's defaults."""
    gone = {
        f"{section}__{option}": None
        for section in ("enc_self_attention", "dec_self_attention")
        for option in ("norm", "gate")
    }
    used = C.from_dict(C.fill_saved_defaults(saved_config(**gone, enc_self_attention__layers=1))).model
    assert (used.enc_self_attention.norm, used.enc_self_attention.gate) == ("post", False)
    assert used.dec_self_attention == C.Config().model.dec_self_attention  # not in use: today's defaults
    used = C.from_dict(C.fill_saved_defaults(saved_config(**gone, dec_self_attention__enabled=True))).model
    assert (used.dec_self_attention.norm, used.dec_self_attention.gate) == ("post", False)
    assert C.from_dict(C.fill_saved_defaults(saved_config(**gone))).model == C.Config().model


def test_a_transformer_saved_before_an_rnn_default_changed_still_loads() -> None:
    """Its RNN-only options built nothing, so an old value of them is no error."""

    def old() -> dict[str, Any]:
        return saved_config(
            arch="transformer",
            attention__scale_bilinear=False,
            enc_self_attention__norm="post",
            enc_self_attention__gate=False,
        )

    assert C.from_dict(C.fill_saved_defaults(old())).model.arch == "transformer"
    with pytest.raises(ConfigError, match=r"only apply to model\.arch=rnn"):
        C.from_dict(old())  # the reason: read as a new config it is refused


def test_options_that_change_no_model_do_not_tell_configs_apart() -> None:
    """What nmt compare reuses: scalings of absent maps and switched-off self-attention are inert."""
    from nmt.config.saved import without_inert_options

    def same(a: list[str], b: list[str]) -> bool:
        return without_inert_options(C.load(None, a)) == without_inert_options(C.load(None, b))

    bahdanau = ["model.attention.type=bahdanau"]
    assert same(
        bahdanau
        + [
            "model.attention.scale_bilinear=false",
            "model.attention.out_proj_start=scaled",
            "model.enc_self_attention.norm=post",
            "model.dec_self_attention.gate=false",
        ],
        bahdanau,
    )
    qkv = ["model.attention.type=qkv"]
    assert same(
        qkv + ["model.attention.scale_out_proj=false", "model.attention.out_proj_start=scaled"],
        qkv + ["model.attention.scale_out_proj=false"],
    )  # no scaling: where it starts is moot
    assert not same(qkv + ["model.attention.out_proj_start=scaled"], qkv)
    general = ["model.attention.type=luong_general"]
    assert not same(general + ["model.attention.scale_bilinear=false"], general)
    assert not same(general + ["model.attention.bilinear_start=scaled"], general)
    assert same(general + ["model.attention.scale_gaussian=false"], general)
    assert not same(
        ["model.attention.type=gaussian", "model.attention.scale_gaussian=false"], ["model.attention.type=gaussian"]
    )
    # learn_scale: tests/unit/test_model_attention.py checks it against the built model, preset by preset
    for section, on in (("enc_self_attention", "layers=1"), ("dec_self_attention", "enabled=true")):
        block = bahdanau + [f"model.{section}.{on}"]
        assert not same(block + [f"model.{section}.norm=post"], block)
    assert not same(qkv, bahdanau)  # a real difference stays one
    scaled = ["model.attention.type=scaled_dot"]
    assert same(scaled + ["model.enc_hidden_size=half"], scaled + ["model.enc_hidden_size=128"])
    assert same(bahdanau + ["model.enc_hidden_size=256"], bahdanau)
    assert not same(bahdanau + ["model.enc_hidden_size=half"], bahdanau)


@pytest.mark.parametrize("variant, option", [("qkv", "out_proj_start"), ("luong_general", "bilinear_start")])
def test_a_run_saved_before_a_start_option_is_not_taken_for_a_new_one(variant: str, option: str) -> None:
    """Such a run started its scaled map small, as the option's 'scaled' does, so nmt compare trains anew."""
    from nmt.config.saved import without_inert_options

    old = saved_config(attention__type=variant, **{f"attention__{option}": None})
    trained = C.from_dict(C.fill_saved_defaults(old))
    assert getattr(trained.model.attention, option) == "scaled"
    assert without_inert_options(trained) != without_inert_options(C.from_dict(saved_config(attention__type=variant)))


def test_a_decode_section_saved_before_its_checks_still_loads():
    """Sampling options saved without sampling did nothing and return to defaults; lengths come down."""
    raw = saved_config()
    raw["decode"].update(top_p=0.5, temperature=3.0, max_len_b=5000, max_len_a=20.0)
    decode = C.from_dict(C.fill_saved_defaults(raw)).decode
    assert (decode.top_p, decode.temperature, decode.max_len_b, decode.max_len_a) == (1.0, 1.0, 1024, 10.0)
    raw = saved_config()
    raw["decode"].update(sample=True, beam=1, top_p=0.5)
    assert C.from_dict(C.fill_saved_defaults(raw)).decode.top_p == 0.5  # used: kept
