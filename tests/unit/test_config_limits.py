"""Limits on what a config can cost: alias bombs, huge or deep YAML, long values in errors, long names."""

import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import NMT, REPO, run_cli
from nmt import config as C
from nmt.util.errors import ConfigError

SHORT_MESSAGE = 300
"""An error about a hostile config is a short line, however large the config expands."""


def alias_bomb(levels: int, indent: str = "    ") -> str:
    """YAML lines of a sequence whose item ``levels`` holds 10**levels strings through aliases."""
    lines = [f"{indent}- &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"{indent}- &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def flow_bomb(levels: int) -> str:
    """The same bomb in YAML's flow style, as one ``--set`` value."""
    items = ["&l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    items += [f"&l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "[" + ", ".join(items) + "]"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "x.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def config_error(call) -> str:
    """The message of the ConfigError that ``call()`` raises."""
    with pytest.raises(ConfigError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("levels", [5, 10])
def test_an_alias_bomb_is_refused_quickly_with_a_short_message(tmp_path, levels):
    path = write(tmp_path, "train:\n  lr:\n" + alias_bomb(levels))
    start = time.perf_counter()
    message = config_error(lambda: C.load(path))
    assert time.perf_counter() - start < 2.0
    assert f"more than {C.MAX_YAML_NODES:,} YAML nodes" in message and len(message) < SHORT_MESSAGE


def test_a_bomb_under_the_node_limit_is_shown_as_a_short_excerpt(tmp_path):
    """10,000 strings reach validation; the error quotes the value's start, not its 110 KB repr."""
    message = config_error(lambda: C.load(write(tmp_path, "train:\n  lr:\n" + alias_bomb(4))))
    assert message.startswith("train.lr: Input should be a valid number (got [['lol', ")
    assert message.endswith("...)") and len(message) < SHORT_MESSAGE


def test_an_alias_bomb_in_an_override_is_refused():
    start = time.perf_counter()
    message = config_error(lambda: C.load(None, [f"train.lr={flow_bomb(10)}"]))
    assert time.perf_counter() - start < 2.0
    assert message.startswith("--set train.lr: expands to more than") and len(message) < SHORT_MESSAGE
    too_long = config_error(lambda: C.load(None, ["train.lr=" + "1" * (C.MAX_CONFIG_BYTES + 1)]))
    assert too_long == "--set train.lr: the value is longer than 1,048,576 characters"
    assert "got '\\udcff'" in config_error(lambda: C.load(None, ["data.src=\udcff"]))  # undecodable argv byte


def test_the_cli_refuses_a_bomb_in_one_line_with_exit_2(tmp_path, capsys):
    path = write(tmp_path, f"runs_dir: {tmp_path / 'runs'}\ntrain:\n  lr:\n" + alias_bomb(10))
    for command in ("config", "train"):
        code, out, err = run_cli([command, "--config", str(path)], capsys)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and err.startswith("nmt: error: ") and len(err) < SHORT_MESSAGE
    assert not (tmp_path / "runs").exists()


def test_a_config_with_a_few_aliases_still_loads(tmp_path):
    text = (
        "data:\n  src: &lang de\n  tgt: en\nmodel:\n  attention: &att {type: luong_general}\n"
        "train:\n  lr: &rate 0.002\n  min_lr: *rate\n"
    )
    config = C.load(write(tmp_path, text))
    assert (config.data.src, config.train.lr, config.train.min_lr) == ("de", 0.002, 0.002)
    assert config.model.attention.type == "luong_general"


@pytest.mark.parametrize(
    "text, needle",
    [
        ("a: &a [*a]\n", "an alias refers to a collection that holds it"),
        ("x: " + "[" * 100 + "]" * 100 + "\n", f"nested more than {C.MAX_YAML_DEPTH} levels deep"),
        ("train:\n  seed: " + "9" * 5000 + "\n", "an integer of 5,000 characters is too long"),
        ("? [1, 2]\n: 3\n", "a list cannot be a key"),
    ],
)
def test_yaml_that_python_cannot_build_is_a_config_error(tmp_path, text, needle):
    """Each of these was an internal error (RecursionError, ValueError, TypeError) or a cyclic value."""
    message = config_error(lambda: C.load(write(tmp_path, text)))
    assert needle in message and len(message) < SHORT_MESSAGE


def test_a_file_past_the_size_limit_is_refused_without_reading_it_all(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("# " + "x" * C.MAX_CONFIG_BYTES + "\n", encoding="utf-8")
    assert "a config file is at most 1,048,576 bytes" in config_error(lambda: C.read_yaml(path))
    assert C.read_yaml(write(tmp_path, "# " + "x" * 1000 + "\nname: ok\n")) == {"name": "ok"}


def test_an_error_names_a_few_problems_and_counts_the_rest(tmp_path):
    keys = "".join(f"  unknown_{i}: 1\n" for i in range(1000))
    message = config_error(lambda: C.load(write(tmp_path, "train:\n" + keys)))
    assert message.count("unknown key in train") == C.MAX_PROBLEMS_SHOWN
    assert message.endswith(f"and {1000 - C.MAX_PROBLEMS_SHOWN} more problems")
    assert len(message) < 4000  # five of them list train's valid keys; all 1000 made half a megabyte


def test_long_values_and_keys_are_shortened_in_errors():
    message = config_error(lambda: C.load(None, ["data.src=" + "x" * 10_000, "data.tgt=" + "x" * 10_000]))
    assert message.startswith("data.src and data.tgt are both 'xxx") and len(message) < SHORT_MESSAGE
    unknown = config_error(lambda: C.load(None, ["train." + "k" * 10_000 + "=1"]))
    assert unknown.startswith("train." + "k" * 77 + "...: unknown key in train; valid keys: seed, ")
    assert len(config_error(lambda: C.load(None, ["model.enc_hidden_size=" + "7" * 3000 + "x"]))) <= C.MAX_PHRASE_CHARS


@pytest.mark.parametrize(
    "value, shown",
    [
        ([1, 2, 3], "[1, 2, 3]"),
        ({"a": [1]}, "{'a': [1]}"),
        ("x" * 100, "'" + "x" * 76 + "..."),
        (list(range(100)), ", ".join(map(str, range(22))).join("[]")[:77] + "..."),
    ],
)
def test_short_repr_is_repr_up_to_the_limit(value, shown):
    assert C.short_repr(value) == shown


def test_short_repr_of_a_huge_or_deep_value_is_quick_and_short():
    huge: list = ["lol"] * 10
    for _ in range(9):
        huge = [huge] * 10  # 10**10 strings: repr() would never finish
    deep: list = []
    for _ in range(5000):
        deep = [deep]  # repr() would hit the recursion limit
    for value in (huge, deep):
        assert len(C.short_repr(value)) == C.SHOWN_VALUE_CHARS


def test_a_run_name_must_fit_a_folder_name():
    assert C.load(None, ["name=" + "a" * C.RUN_NAME_MAX_BYTES]).name == "a" * C.RUN_NAME_MAX_BYTES
    message = config_error(lambda: C.load(None, ["name=" + "a" * 300]))
    assert "a run name of 300 characters is too long for a folder name (at most 200)" in message
    assert len(message) < SHORT_MESSAGE


def test_every_folder_of_runs_dir_must_fit_a_folder_name(tmp_path):
    assert C.load(None, [f"runs_dir={tmp_path / ('d' * 255)}"]).runs_dir.endswith("d" * 255)
    message = config_error(lambda: C.load(None, [f"runs_dir={tmp_path / ('d' * 256)}"]))
    assert "is 256 bytes long; file systems take at most 255" in message


def test_train_with_a_too_long_run_name_is_one_line_and_exit_2(tmp_path, capsys):
    """It was exit 1, "File name too long", from creating the run folder."""
    runs = tmp_path / "runs"
    code, _out, err = run_cli(["train", "--set", f"runs_dir={runs}", "--set", "name=" + "n" * 300], capsys)
    assert code == 2 and err.count("\n") == 1 and "too long for a folder name" in err
    assert not runs.exists()


@pytest.mark.parametrize(
    "overrides, phrase",
    [
        (["model.arch=transformer", "model.cell=lstm"], "model.cell only applies to model.arch=rnn"),
        (["model.transformer.enc_layers=4"], "model.transformer.enc_layers only applies to model.arch=transformer"),
        (
            ["model.transformer.enc_layers=4", "model.transformer.heads=2"],
            "model.transformer.heads, model.transformer.enc_layers only apply to model.arch=transformer",
        ),
    ],
)
def test_options_of_the_other_architecture_read_as_english(overrides, phrase):
    assert phrase in config_error(lambda: C.load(None, overrides))


def test_a_bad_encoder_size_quotes_a_short_excerpt() -> None:
    with pytest.raises(ConfigError) as err:
        C.load(None, ["model.enc_hidden_size=" + "x" * 5000])
    assert "enc_hidden_size" in str(err.value) and len(str(err.value)) < 300


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_a_training_seed_outside_what_the_generators_take_is_refused(seed: str) -> None:
    with pytest.raises(ConfigError, match=r"train\.seed"):
        C.load(None, [f"train.seed={seed}"])


def test_a_config_that_is_not_a_regular_file_is_refused_without_opening_it(tmp_path):
    """A FIFO blocked ``open`` forever (no writer comes); a folder or a device is no config either."""
    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)
    argv = [*NMT, "config", "--config", str(fifo)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr == f"nmt: error: {fifo}: a config file must be a regular file, not a FIFO (named pipe)\n"
    assert config_error(lambda: C.read_yaml(tmp_path)).endswith("must be a regular file, not a folder")
    assert config_error(lambda: C.read_yaml(Path("/dev/zero"))).endswith("not a device")
