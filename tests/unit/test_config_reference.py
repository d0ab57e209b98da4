"""The config JSON Schema and the reference page: up to date, and saying what the config model says.

``configs/schema.json`` and ``docs/reference/configuration.md`` are written by
``docs_build/config_reference.py``; these tests fail when either differs from what the script
writes now, when a config in ``configs/`` does not validate, or when the schema accepts or
refuses an option value differently from the loader (:func:`nmt.config.from_dict`).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from nmt import config as C
from nmt.cli import app
from nmt.config.schema import config_schema, schema_text

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))
SCHEMA_FILE = REPO / "configs" / "schema.json"
MODELINE = "# yaml-language-server: $schema=./schema.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(config_schema())


def nested(path: str, value: Any) -> dict[str, Any]:
    """A raw config setting only the option at dotted ``path``."""
    raw: Any = value
    for part in reversed(path.split(".")):
        raw = {part: raw}
    return raw


def test_committed_files_are_what_the_script_writes():
    """The script's --check finds nothing to rewrite (run it after changing an option)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "docs_build" / "config_reference.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr


def test_check_fails_with_a_diff_on_a_stale_file(tmp_path, capsys):
    """--check exits 1 and shows the changed line when a generated file was edited by hand."""
    script = importlib.import_module("config_reference")  # docs_build/ is on sys.path (tests/conftest.py)
    script.write(tmp_path)
    assert script.check(tmp_path) == 0
    page = tmp_path / script.PAGE
    page.write_text(page.read_text(encoding="utf-8").replace("| `train.lr` |", "| `train.rate` |"), encoding="utf-8")
    capsys.readouterr()
    assert script.check(tmp_path) == 1
    out = capsys.readouterr().out
    assert "-| `train.rate` |" in out and "+| `train.lr` |" in out


def test_nmt_config_schema_prints_the_committed_schema():
    result = CliRunner().invoke(app, ["config", "--schema"])
    assert result.exit_code == 0, result.output
    assert result.stdout == SCHEMA_FILE.read_text(encoding="utf-8") == schema_text()


def test_schema_is_valid_draft7():
    jsonschema.Draft7Validator.check_schema(config_schema())


def test_reference_page_lists_every_option():
    """Every option `nmt config` lists has a row, with its description, on the reference page."""
    page = (REPO / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    for key, _, _ in C.describe_options():
        assert f"| `{key}` |" in page, key


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_example_config_names_the_schema_and_validates(path, validator):
    """The first line points editors at configs/schema.json, and the config (as nmt reads it) passes."""
    assert path.read_text(encoding="utf-8").splitlines()[0] == MODELINE
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(C.read_yaml(path))]
    assert not errors, errors


@pytest.mark.parametrize(
    "raw",
    [
        {"model": {"hidden_size": "big"}},  # wrong type
        {"train": {"lr": None}},  # null where none is allowed
        {"model": {"hiden_size": 256}},  # unknown key in a section
        {"model": {"attention": {"heads_count": 4}}},  # unknown key in a subsection
        {"optimiser": "adam"},  # unknown key at the top level
        {"model": {"dropout": 1.0}},  # out of range (dropout < 1)
        {"decode": {"max_len_b": 1025}},  # above its maximum
        {"model": {"attention": {"type": "luong"}}},  # not one of the choices
        {"model": {"enc_hidden_size": 0}},  # a rule a field validator holds
        {"name": ".."},  # a run name that leaves runs_dir
        {"name": "a/b"},
        {"data": {"synthetic_sizes": {"train": -1}}},  # a bound inside a mapping
    ],
    ids=repr,
)
def test_schema_and_loader_refuse_a_bad_config(raw, validator):
    assert not validator.is_valid(raw)
    with pytest.raises(C.ConfigError):
        C.from_dict(raw)


def leaves(node: dict[str, Any], prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    """(dotted path, schema) of every option that is not a section."""
    out = []
    for name, sub in node["properties"].items():
        out += leaves(sub, f"{prefix}{name}.") if "properties" in sub else [(prefix + name, sub)]
    return out


def probes(node: dict[str, Any]) -> list[Any]:
    """Values to try on one option: every type, each choice and a wrong one, each bound and its neighbours."""
    values: list[Any] = [None, True, False, "text", "", 0, 1, -1, 1.5, 2.0, [], {}, "5"]
    for branch in node.get("anyOf", [node]):
        values += branch.get("enum", []) + ([branch["const"]] if "const" in branch else [])
        step = 1 if branch.get("type") == "integer" else 1e-9
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if key in branch:
                values += [branch[key] - step, branch[key], branch[key] + step]
        if branch.get("type") == "object":
            values += [{"train": -1}, {"train": 5}, {"train": "a"}, {"train": ["a", "b"]}, {"train": [1]}]
        if "minLength" in branch:
            values += ["a" * (branch["minLength"] - 1), "a" * branch["minLength"]]
        if "maxLength" in branch:
            values += ["a" * branch["maxLength"], "a" * (branch["maxLength"] + 1), ".", "..", "a/b", "..a"]
    return values


def loader_accepts(path: str, value: Any) -> bool:
    """Whether the config model accepts ``value`` for the option at ``path`` itself.

    Errors about combinations (raised for a whole section) do not count: the schema checks each
    option alone.
    """
    try:
        C.Config.model_validate(nested(path, value))
    except ValidationError as exc:
        loc = tuple(path.split("."))
        return not any(tuple(map(str, err["loc"]))[: len(loc)] == loc for err in exc.errors())
    return True


def coerced(node: dict[str, Any], value: Any) -> bool:
    """Whether pydantic's lax mode converts ``value`` into the option's type where JSON Schema cannot:
    a boolean given for a number, 0 or 1 for a boolean, a number written as a string."""
    types = {branch.get("type") for branch in node.get("anyOf", [node])}
    numeric = bool(types & {"integer", "number"})
    return (
        (isinstance(value, bool) and numeric)
        or (value in (0, 1) and not isinstance(value, bool) and "boolean" in types)
        or (value == "5" and numeric)
    )


def test_schema_accepts_what_the_loader_accepts(validator):
    """Option by option, the schema agrees with the config model on every probe value, except:
    values pydantic's lax mode coerces (the schema refuses them: an editor flags `true` given
    for a number), and a whole float such as 2.0 for model.enc_hidden_size, which JSON Schema
    counts as an integer while its field validator refuses it."""
    disagreements = []
    for path, node in leaves(config_schema()):
        for value in probes(node):
            in_schema, in_model = validator.is_valid(nested(path, value)), loader_accepts(path, value)
            if in_schema == in_model:
                continue
            known = (in_model and coerced(node, value)) or (
                path == "model.enc_hidden_size" and isinstance(value, float) and value.is_integer()
            )
            if not known:
                disagreements.append(f"{path}={value!r}: schema {in_schema}, loader {in_model}")
    assert not disagreements, disagreements
