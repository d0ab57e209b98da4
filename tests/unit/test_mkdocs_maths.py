"""docs_build/mkdocs_maths.py: every equation becomes MathML, and one it cannot draw fails the build in one line."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from mkdocs.exceptions import PluginError

from conftest import REPO

mkdocs_maths = importlib.import_module("mkdocs_maths")  # docs_build/ is on sys.path (tests/conftest.py)


@dataclass
class _File:
    src_path: str


@dataclass
class _Page:
    file: _File


def _convert(latex: str, src_path: str = "models.md") -> str:
    text = f'<p>where <span class="arithmatex">\\({latex}\\)</span> is</p>'
    return mkdocs_maths.on_page_content(text, page=_Page(_File(src_path)))


@pytest.mark.parametrize(
    "latex",
    [
        r"\alpha_{ij} = \operatorname{softmax}_j(e_{ij})",
        r"\mathbf{h}_t \in \mathbb{R}^d",
        r"\begin{pmatrix} a & b \\ c & d \end{pmatrix}",
        r"\begin{cases} 1 & x > 0 \\ 0 & \text{otherwise} \end{cases}",
        r"\{ x \} \setminus \backslash",
        r"\hat{y} = \sqrt[3]{x} \cdot \frac{1}{2}",
        r"\arg\max_y P(y \mid x)",  # notebook 03: latex2mathml lacks \arg, the hook defines it
    ],
)
def test_known_commands_and_environments_become_mathml(latex):
    html = _convert(latex)
    assert '<span class="maths"><math' in html and "arithmatex" not in html


@pytest.mark.parametrize(
    "latex, symbols",
    [
        (r"\big\lVert q - k \big\rVert^2", ["&#x02016;", "&#x02016;"]),  # models.md; it drew "\lVert"
        (r"\Big\langle x \Big\rangle", ["&#x027E8;", "&#x027E9;"]),
        (r"\bigg\{ x \bigg\}", ["&#x0007B;", "&#x0007D;"]),
    ],
)
def test_a_sized_delimiter_that_is_a_command_is_drawn_as_its_symbol(latex, symbols):
    html = _convert(latex)
    assert "\\" not in html, html
    assert [symbol for symbol in symbols if symbol in html] == symbols, html


@pytest.mark.parametrize(
    "latex, unknown",
    [
        (r"\alpah_{ij} = 1", r"\alpah"),
        (r"p = \sofmax(e)", r"\sofmax"),
        (r"\frac{\alpah}{2}", r"\alpah"),
        (r"\begin{foo} x \end{foo}", r"\begin{foo}"),
        (r"\begin{aligned} a &= b \end{aligned}", r"\begin{aligned}"),  # latex2mathml drew '&' as a letter
    ],
)
def test_an_unknown_command_or_environment_fails_naming_page_command_and_formula(latex, unknown):
    with pytest.raises(PluginError) as info:
        _convert(latex, "labs/kernel.md")
    message = str(info.value)
    assert "\n" not in message, message
    assert message.startswith("labs/kernel.md: "), message
    assert f"unknown LaTeX {'environment' if 'begin' in unknown else 'command'} {unknown} " in message, message
    assert f"in the equation ${latex}$" in message, message  # as written on the page, to search for


def test_an_equation_latex2mathml_refuses_says_why_in_words():
    """latex2mathml's exceptions carry no message: the line said 'cannot convert ...: ' and stopped."""
    with pytest.raises(PluginError) as info:
        _convert(r"\left( x")
    message = str(info.value)
    assert message == r"models.md: cannot convert the equation $\left( x$: extra left or missing right", message


def test_a_formula_over_several_lines_is_named_on_one(tmp_path):
    text = '<div class="arithmatex">\\[\n  a = \\alpah\n  + b\n\\]</div>'
    with pytest.raises(PluginError) as info:
        mkdocs_maths.on_page_content(text, page=_Page(_File("models.md")))
    assert "\n" not in str(info.value) and r"the equation $$a = \alpah + b$$" in str(info.value), str(info.value)


def test_a_build_that_meets_an_unknown_command_fails_in_one_line_without_a_traceback(tmp_path: Path):
    """The hook as mkdocs runs it: the build stops, and its one error line names page, command and formula."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Maths\n\nThe weight $\\alpah_{ij}$ of source word $j$.\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\n"
        "markdown_extensions:\n  - pymdownx.arithmatex:\n      generic: true\n"
        f"hooks:\n  - {REPO / 'docs_build' / 'mkdocs_maths.py'}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=tmp_path,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Traceback" not in output, output
    named = [line for line in output.splitlines() if "\\alpah" in line]
    assert len(named) == 1, output
    assert r"index.md: unknown LaTeX command \alpah in the equation $\alpah_{ij}$" in named[0], output
