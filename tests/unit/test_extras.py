"""An optional package that is missing is one line naming the extra that has it."""

import pytest

from nmt.util.errors import UserError
from nmt.util.extras import require


def test_a_missing_package_names_the_extra_that_has_it():
    with pytest.raises(UserError) as info:
        require("no_such_package_of_nmt", "export", "--engine onnxruntime")
    message = str(info.value)
    assert message.startswith("--engine onnxruntime needs the Python package 'no_such_package_of_nmt'")
    assert "pip install 'nmt-attention[export]'" in message and "\n" not in message


def test_a_present_package_is_returned():
    assert require("json", "export", "x").dumps([1]) == "[1]"


def test_a_plain_install_reads_a_safetensors_export():
    """The torch engine's export is read with safetensors, so it is a core dependency, not the export extra's."""
    from pathlib import Path

    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    core = [requirement.split(">")[0].split("=")[0] for requirement in project["project"]["dependencies"]]
    assert "safetensors" in core
    assert not any(r.startswith("safetensors") for r in project["project"]["optional-dependencies"]["export"])
