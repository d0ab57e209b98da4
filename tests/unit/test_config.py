"""Config parsing, defaults, overrides and every validation error path."""

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from nmt import config as C
from nmt.config.attention_space import ATTENTION_TYPES, energy_params
from nmt.config.saved import flat_options
from nmt.util.errors import ConfigError, UserError

CONFIGS = sorted(Path(__file__).resolve().parents[2].joinpath("configs").glob("*.yaml"))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "x.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_are_valid_and_documented():
    cfg = C.load(None)
    assert cfg.model.attention.type == "bahdanau"
    assert cfg.train.teacher_forcing == 1.0
    rows = C.describe_options()
    keys = [k for k, _, _ in rows]
    assert "model.attention.type" in keys and "train.teacher_forcing" in keys
    assert all(text for _, _, text in rows), "every option needs a description"
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_example_configs_load_their_values_and_the_defaults(path):
    """Every option an example sets arrives as written; every other one is the default.

    The defaults are those of the example's architecture (a Transformer's schedule defaults
    to warm-up + inverse square root) and attention type (an energy's own options filled in).
    """
    given = flat_options(yaml.safe_load(path.read_text(encoding="utf-8")))
    cfg = C.load(path)
    loaded = flat_options(cfg.model_dump(mode="json"))
    defaults = flat_options(C.from_dict({"model": {"arch": given.get("model.arch", "rnn")}}).model_dump(mode="json"))
    filled = energy_params(cfg.model.attention.axes()["energy"], {}, "model.attention.params")
    if filled:  # the energy's own options (local attention's window), at their defaults
        defaults.pop("model.attention.params")
        defaults.update({f"model.attention.params.{k}": v for k, v in filled.items()})
    assert given and given.keys() <= loaded.keys()
    assert {k: loaded[k] for k in given} == given
    assert {k: v for k, v in loaded.items() if k not in given} == {k: v for k, v in defaults.items() if k not in given}


def test_every_example_key_is_commented():
    """Each option line carries a comment, inline or on the line above."""
    assert CONFIGS, "configs/ holds no example"
    for path in CONFIGS:
        previous = ""
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if stripped and not stripped.startswith("#") and ":" in stripped:
                is_section = stripped.endswith(":")
                assert is_section or "#" in stripped or previous.startswith("#"), (
                    f"{path.name}: option without a comment: {line!r}"
                )
            if stripped:
                previous = stripped


def test_yaml_values_and_overrides(tmp_path):
    path = write(tmp_path, "model:\n  hidden_size: 32\n  attention:\n    type: qkv\n    heads: 4\n")
    cfg = C.load(path, ["model.attention.type=luong_general", "train.teacher_forcing=0.5", "train.seed=7"])
    assert cfg.model.hidden_size == 32
    assert cfg.model.attention.type == "luong_general"
    assert cfg.train.teacher_forcing == 0.5 and cfg.train.seed == 7
    assert cfg.model.emb_size == 256  # untouched default


def test_override_null_and_strings():
    cfg = C.load(None, ["train.max_tokens=null", "train.batch_size=32", "name=my-run.2"])
    assert cfg.train.max_tokens is None and cfg.train.batch_size == 32 and cfg.name == "my-run.2"


def test_dump_round_trips():
    cfg = C.load(None, ["model.cell=lstm", "decode.beam=3"])
    again = C.from_dict(yaml.safe_load(C.dump(cfg)))
    assert again == cfg


@pytest.mark.parametrize(
    "override,expected",
    [
        ("model.atention.type=x", "model.atention: unknown key in model; did you mean 'attention'?"),
        ("trian.lr=1", "trian: unknown key in top level; did you mean 'train'?"),
        ("model.attention.tpye=qkv", "did you mean 'type'?"),
        ("model.zzzzzz=1", "valid keys:"),
    ],
)
def test_unknown_keys_suggest(override, expected):
    with pytest.raises(ConfigError) as err:
        C.load(None, [override])
    assert expected in str(err.value)


@pytest.mark.parametrize(
    "override,path,allowed",
    [
        ("model.attention.type=foo", "model.attention.type", "'bahdanau'"),
        ("model.cell=rnn", "model.cell", "'gru' or 'lstm'"),
        ("train.teacher_forcing=1.5", "train.teacher_forcing", "less than or equal to 1"),
        ("train.teacher_forcing=-0.1", "train.teacher_forcing", "greater than or equal to 0"),
        ("model.dropout=-0.2", "model.dropout", "greater than or equal to 0"),
        ("decode.beam=0", "decode.beam", "greater than or equal to 1"),
        ("model.hidden_size=big", "model.hidden_size", "valid integer"),
        ("train.optimizer=adagrad", "train.optimizer", "'adam'"),
        ("model.enc_hidden_size=quarter", "model.enc_hidden_size", "a positive integer, half or null (got 'quarter')"),
        ("model.enc_hidden_size=0", "model.enc_hidden_size", "a positive integer, half or null (got 0)"),
        ("model.enc_hidden_size=true", "model.enc_hidden_size", "a positive integer, half or null (got True)"),
    ],
)
def test_type_and_range_errors_name_path_and_allowed(override, path, allowed):
    with pytest.raises(ConfigError) as err:
        C.load(None, [override])
    assert str(err.value).startswith(path + ":")
    assert allowed in str(err.value)


@pytest.mark.parametrize(
    "overrides,words",
    [
        (["model.tie_embeddings=true", "model.emb_size=128"], ["model.tie_embeddings", "model.emb_size"]),
        (["model.attention.type=luong_dot"], ["luong_dot", "model.bidirectional"]),
        (["model.attention.type=scaled_dot"], ["scaled_dot", "model.bidirectional"]),
        (["model.attention.type=scaled_dot", "model.enc_hidden_size=64"], ["scaled_dot", "model.enc_hidden_size=64"]),
        (["model.arch=transformer", "model.enc_hidden_size=128"], ["model.enc_hidden_size"]),
        (["model.init_state=last", "model.enc_hidden_size=half"], ["model.init_state=last", "(128,", "bridge"]),
        (["model.attention.type=qkv", "model.attention.heads=3"], ["model.attention.heads"]),
        (["model.attention.type=none", "model.attention.style=luong"], ["model.attention.style"]),
        (["train.max_tokens=null"], ["train.max_tokens", "train.batch_size"]),
        (["decode.n_best=6"], ["decode.n_best", "decode.beam"]),
        (["data.min_len=10", "data.max_len=5"], ["data.min_len", "data.max_len"]),
        (["data.src=de", "data.tgt=de"], ["data.src", "data.tgt"]),
    ],
)
def test_incompatible_combinations(overrides, words):
    with pytest.raises(ConfigError) as err:
        C.load(None, overrides)
    for word in words:
        assert word in str(err.value)


def test_luong_dot_valid_with_unidirectional_encoder():
    cfg = C.load(None, ["model.attention.type=luong_dot", "model.bidirectional=false"])
    assert cfg.model.attention.resolved_style == "luong"


def test_a_bidirectional_encoder_of_half_the_decoder_size_gives_dot_energies_keys_they_can_use():
    from nmt.model.build import build_model

    cfg = C.load(None, ["model.attention.type=scaled_dot", "model.hidden_size=32", "model.enc_hidden_size=16"])
    assert (cfg.model.enc_size, cfg.model.key_size) == (16, 32)
    model = build_model(cfg.model, 11, 13)
    assert model.encoder.output_size == model.decoder.hidden_size == 32
    assert C.load(None, ["model.enc_hidden_size=null"]).model.key_size == 2 * C.Config().model.hidden_size
    half = C.load(None, ["model.attention.type=scaled_dot", "model.hidden_size=32", "model.enc_hidden_size=half"])
    assert half.model == cfg.model.model_copy(update={"enc_hidden_size": "half"})
    assert half.model.key_size == 32
    with pytest.raises(ConfigError, match=r"even model\.hidden_size"):
        C.load(None, ["model.hidden_size=33", "model.enc_hidden_size=half"])


def test_malformed_yaml_reports_line_and_column(tmp_path):
    path = write(tmp_path, "model:\n  hidden_size: 32\n  attention: [unclosed\n")
    with pytest.raises(ConfigError) as err:
        C.load(path)
    assert f"{path}:" in str(err.value) and "malformed YAML" in str(err.value)
    line = int(str(err.value).split(":")[1])
    assert line >= 3


def test_missing_file_and_non_mapping(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        C.load(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="expected a mapping"):
        C.load(write(tmp_path, "- a\n- b\n"))


@pytest.mark.parametrize(
    "overrides,message",
    [
        (["novalue"], "--set 'novalue': expected KEY=VALUE"),
        (["=3"], "--set '=3': expected KEY=VALUE"),
        (["train.lr.x=1"], "train.lr: Input should be a valid number"),
        (["train.x.y=1"], "train.x: unknown key in train"),
        (["train.lr=1", "train.lr.x=1"], "--set train.lr.x: train.lr is a value, not a section"),
    ],
)
def test_malformed_overrides(overrides, message):
    with pytest.raises(ConfigError) as err:
        C.load(None, overrides)
    assert str(err.value).startswith(message)


def test_empty_file_means_defaults(tmp_path):
    assert C.load(write(tmp_path, "")) == C.load(None)


def test_config_is_immutable():
    cfg = C.load(None)
    with pytest.raises(ValidationError, match="Instance is frozen"):
        cfg.train.lr = 5.0  # type: ignore[misc]
    with pytest.raises(ValidationError, match="Instance is frozen"):
        cfg.data = C.DataConfig(max_len=5)  # type: ignore[misc]
    assert cfg == C.load(None)


def test_decode_overrides_change_decode_only():
    cfg = C.load(None, ["model.cell=lstm"])
    changed = C.with_decode_overrides(cfg, ["decode.beam=2", "decode.length_penalty=0.6"])
    assert (changed.decode.beam, changed.decode.length_penalty) == (2, 0.6)
    assert changed.model == cfg.model and changed.train == cfg.train and changed.data == cfg.data
    with pytest.raises(UserError, match=r"--set model\.cell=gru: only decode\.\* options can change"):
        C.with_decode_overrides(cfg, ["model.cell=gru"])
    with pytest.raises(ConfigError, match=r"decode\.beam: Input should be greater than or equal to 1"):
        C.with_decode_overrides(cfg, ["decode.beam=0"])


def test_style_resolution():
    assert C.load(None).model.attention.resolved_style == "bahdanau"
    assert C.load(None, ["model.attention.type=qkv"]).model.attention.resolved_style == "luong"
    assert (
        C.load(None, ["model.attention.type=qkv", "model.attention.style=bahdanau"]).model.attention.resolved_style
        == "bahdanau"
    )


def _flat(cfg: C.Config) -> dict[str, Any]:
    """Every option of a config as ``{"section.key": value}``."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        else:
            out[prefix] = value

    walk("", cfg.model_dump())
    return out


DOT_TYPES = ("luong_dot", "scaled_dot")  # identity maps: query and key sizes must match


@pytest.mark.parametrize("direction", ["de_en", "en_de"])
def test_multi30k_configs_differ_only_in_attention(direction):
    """configs/multi30k_<dir>_<type>.yaml exist for every attention type and compare like with like."""
    folder = CONFIGS[0].parent
    base = _flat(C.load(folder / f"multi30k_{direction}_bahdanau.yaml"))
    for kind in ATTENTION_TYPES:
        cfg = _flat(C.load(folder / f"multi30k_{direction}_{kind}.yaml"))
        changed = {k for k in base if base[k] != cfg[k]}
        allowed = {"name"} | {k for k in base if k.startswith("model.attention.")}
        if kind in DOT_TYPES:  # keys of the decoder's size: a unidirectional or a half-size encoder
            allowed |= {"model.bidirectional", "model.enc_hidden_size"}
        assert changed <= allowed, f"{kind}: {sorted(changed - allowed)}"
        assert cfg["name"] == f"multi30k_{direction}_{kind}"


def test_multi30k_directions_differ_only_in_languages():
    folder = CONFIGS[0].parent
    for kind in (*ATTENTION_TYPES, "best"):
        de_en = _flat(C.load(folder / f"multi30k_de_en_{kind}.yaml"))
        en_de = _flat(C.load(folder / f"multi30k_en_de_{kind}.yaml"))
        changed = {k for k in de_en if de_en[k] != en_de[k]}
        assert changed == {"name", "data.src", "data.tgt"}, kind
        assert (en_de["data.src"], en_de["data.tgt"]) == ("en", "de")


# --- decode options that would take the machine's memory or do nothing (issue 33) ----------


@pytest.mark.parametrize(
    "override,limit",
    [
        ("decode.max_len_b=100000000", "less than or equal to 1024"),
        ("decode.max_len_b=1025", "less than or equal to 1024"),
        ("decode.max_len_a=1e9", "less than or equal to 10"),
        ("decode.max_len_a=.inf", "finite number"),
        ("decode.max_len_a=.nan", "finite number"),
    ],
)
def test_output_length_options_have_a_documented_maximum(override, limit):
    from nmt.config.sections import MAX_LEN_A, MAX_OUTPUT_TOKENS

    with pytest.raises(ConfigError) as err:
        C.load(None, [override])
    assert str(err.value).startswith(override.split("=")[0] + ":") and limit in str(err.value)
    fields = C.DecodeConfig.model_fields
    assert f"at most {MAX_OUTPUT_TOKENS}" in fields["max_len_b"].description
    assert f"at most {MAX_LEN_A:g}" in fields["max_len_a"].description
    edge = C.load(None, [f"decode.max_len_b={MAX_OUTPUT_TOKENS}", f"decode.max_len_a={MAX_LEN_A}"]).decode
    assert (edge.max_len_b, edge.max_len_a) == (MAX_OUTPUT_TOKENS, MAX_LEN_A)


@pytest.mark.parametrize(
    "overrides,words",
    [
        (["decode.top_p=0.9"], ["decode.top_p=0.9", "--top-p", "applies", "--sample"]),
        (["decode.top_k=5"], ["decode.top_k=5", "--top-k", "--sample"]),
        (["decode.temperature=2"], ["decode.temperature=2.0", "--temperature", "--sample"]),
        (["decode.top_k=5", "decode.top_p=0.5"], ["decode.top_k=5, decode.top_p=0.5", "apply", "them"]),
    ],
)
def test_sampling_options_without_sampling_are_refused(overrides, words):
    with pytest.raises(ConfigError) as err:
        C.load(None, overrides)
    assert all(word in str(err.value) for word in words), err.value
    sampled = C.load(None, [*overrides, "decode.sample=true", "decode.beam=1"]).decode
    assert sampled.sample
    assert C.load(None, ["decode.top_p=1.0", "decode.temperature=1", "decode.top_k=0"]).decode.top_p == 1.0


@pytest.mark.parametrize(
    "override,problem",
    [
        ("train.lr=1e999", "train.lr: Input should be a finite number"),
        ("train.lr=.nan", "train.lr: Input should be a finite number"),
        ("decode.length_penalty=.inf", "decode.length_penalty: Input should be a finite number"),
        ("train.max_steps=true", "train.max_steps: a yes/no value where a number or a name belongs"),
        ("model.hidden_size=false", "model.hidden_size: a yes/no value where a number or a name belongs"),
        ("model.attention.type=true", "model.attention.type: a yes/no value where a number or a name belongs"),
    ],
)
def test_non_finite_numbers_and_booleans_for_numbers_are_refused(override, problem):
    """`train.lr: 1e999` trained into non-finite losses, `max_steps: true` trained 1 update."""
    with pytest.raises(ConfigError, match=re.escape(problem)):
        C.load(None, [override])


def test_booleans_stay_booleans():
    cfg = C.load(None, ["train.tensorboard=true", "decode.sample=false", "data.joint_vocab=false"])
    assert cfg.train.tensorboard is True and cfg.data.joint_vocab is False


def test_a_mapping_given_for_a_section_is_merged_into_it():
    """`--set 'train={"max_steps": 3}'` (and nmt.train's {"train": {"max_steps": 3}}) replaced the
    whole section with its defaults: lr, batch size and validation interval changed silently."""
    base = C.load(None, ["train.lr=0.01", "train.valid_every=7", "model.attention.type=luong_general"])
    merged = C.load(
        None,
        [
            "train.lr=0.01",
            "train.valid_every=7",
            "model.attention.type=luong_general",
            'train={"max_steps": 3}',
            'model={"attention": {"dim": 16}}',
        ],
    )
    assert merged.train.max_steps == 3 and merged.train.lr == base.train.lr == 0.01
    assert merged.train.valid_every == 7 and merged.model.attention.type == "luong_general"
    assert merged.model.attention.dim == 16


def test_a_mapping_given_for_a_mapping_option_replaces_it():
    cfg = C.load(
        None, ['data.synthetic_sizes={"train": 5, "valid": 2, "test": 2}', 'data.synthetic_sizes={"train": 9}']
    )
    assert cfg.data.synthetic_sizes == {"train": 9}
