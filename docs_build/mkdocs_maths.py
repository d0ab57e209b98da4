"""MkDocs hook: the pages' equations as MathML, written into the HTML when the site is built.

``pymdownx.arithmatex`` (generic mode) leaves each equation as LaTeX inside
``<span class="arithmatex">\\( ... \\)</span>`` or ``<div class="arithmatex">\\[ ... \\]</div>``.
This hook converts each one with latex2mathml (pinned by the docs extra), so the built site shows
every equation with no script and no network: a student opening site/index.html from disk, or a
classroom without internet, reads the same equations (browsers render MathML Core natively).  An
equation latex2mathml cannot convert fails the build in one line (a ``PluginError``, which mkdocs
reports without a traceback) naming the page, the LaTeX and why.  So does an unknown command or
environment (``\\alpah``, ``\\begin{aligned}``): latex2mathml passes an unknown command through as
text and drops an unknown environment's name, so a typo would otherwise reach the site unseen.

The notebooks' pages (mkdocs-jupyter) keep their Markdown cells' ``$...$`` and ``$$...$$`` as
written, for a MathJax script from a CDN; those are converted too, outside code and scripts.
"""

from __future__ import annotations

import html
import re
from typing import Any

from latex2mathml.commands import MATRICES
from latex2mathml.converter import convert
from latex2mathml.symbols_parser import convert_symbol
from mkdocs.exceptions import PluginError

EQUATION = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<block>.*?)\\\])\s*</(?P=tag)>',
    re.DOTALL,
)


NOT_PROSE = re.compile(r"(<(pre|code|script|style)\b.*?</\2>)", re.DOTALL | re.IGNORECASE)
"""Code, scripts and styles, whose dollar signs are not maths."""

DOLLARS = re.compile(r"\$\$(?P<block>.+?)\$\$|(?<![\\$\w])\$(?!\s)(?P<inline>[^$\n]+?)(?<!\s)\$(?![\w$])", re.DOTALL)
"""A notebook cell's ``$$...$$`` (display) or ``$...$`` (inline; not a lone price such as $5)."""


ENVIRONMENTS = frozenset(name.lstrip("\\") for name in MATRICES)
"""The environments latex2mathml draws (matrix, pmatrix, cases, array, ...): of any other it keeps only the body."""

DEFINITIONS = {r"\arg": r"\operatorname{arg}"}
"""Standard LaTeX commands latex2mathml lacks, each as LaTeX it draws the same way: ``\\arg``, a
function name set upright as ``\\log`` is (``\\arg\\max`` in notebook 03)."""
DEFINED = re.compile("|".join(rf"{re.escape(name)}(?![A-Za-z])" for name in DEFINITIONS))

BEGIN = re.compile(r"\\begin\s*\{([^}]*)\}")
COMMAND = r"\\(?:[A-Za-z]+|[^A-Za-z\s<])"  # \name, or an escaped character such as \{ or \|
PASSED_THROUGH = re.compile(rf">[^<]*?({COMMAND})")
"""A command left as text in the MathML: latex2mathml writes every symbol it knows as a character
reference (``\\backslash`` is ``&#x0005C;``), so a backslash in a text node is a command it did not know."""

SIZED_DELIMITER = re.compile(rf"(<mo\b[^>]*>)({COMMAND})(</mo>)")
"""A delimiter sized by ``\\big``, ``\\Big``, ``\\bigg`` or ``\\Bigg`` that is a command: latex2mathml
writes the command's name as the operator (``\\big\\lVert`` drew "\\lVert"), so the hook writes its symbol."""


def _sized_delimiters(mathml: str) -> str:
    """``mathml`` with each sized delimiter that latex2mathml left as a command name drawn as its symbol."""

    def symbol(match: re.Match[str]) -> str:
        code = convert_symbol(match[2])
        return f"{match[1]}&#x{code};{match[3]}" if code else match[0]

    return SIZED_DELIMITER.sub(symbol, mathml)


class UnknownLatex(ValueError):
    """An equation names a command or environment latex2mathml does not know."""


def to_mathml(latex: str, display: str) -> str:
    """One equation's MathML; ``display`` is "inline" or "block".  Raises :class:`UnknownLatex`
    for a command or environment that latex2mathml would draw wrong, and its own exceptions for
    LaTeX it cannot read."""
    latex = DEFINED.sub(lambda match: DEFINITIONS[match[0]], html.unescape(latex).strip())
    for name in BEGIN.findall(latex):
        if name.strip() not in ENVIRONMENTS:
            raise UnknownLatex(f"unknown LaTeX environment \\begin{{{name}}}")
    mathml = _sized_delimiters(convert(latex, display=display))
    unknown = PASSED_THROUGH.search(mathml)
    if unknown:
        raise UnknownLatex(f"unknown LaTeX command {unknown[1]}")
    return mathml


def _reason(exc: Exception) -> str:
    """Why an equation failed, in words: latex2mathml's exceptions carry no message, only a class
    name (``ExtraLeftOrMissingRightError`` becomes "extra left or missing right")."""
    if str(exc):
        return str(exc).splitlines()[0]
    return re.sub(r"(?<!^)(?=[A-Z])", " ", type(exc).__name__.removesuffix("Error")).lower()


def on_page_content(text: str, page: Any, **_: Any) -> str:
    """Replace every equation of a page by its MathML: arithmatex's, and a notebook's dollars."""

    def replace(match: re.Match[str]) -> str:
        inline = match["inline"] is not None
        latex = match["inline"] if inline else match["block"]
        marks = "$" if inline else "$$"
        shown = f"{marks}{' '.join(html.unescape(latex).split())}{marks}"  # one line, as a search finds it
        try:
            mathml = to_mathml(latex, "inline" if inline else "block")
        except UnknownLatex as exc:
            raise PluginError(
                f"{page.file.src_path}: {exc} in the equation {shown}; latex2mathml, which draws the site's "
                "equations, does not know it: correct it, or define it in docs_build/mkdocs_maths.py (DEFINITIONS)"
            ) from None
        except Exception as exc:  # latex2mathml raises several kinds: name the equation whatever it was
            raise PluginError(f"{page.file.src_path}: cannot convert the equation {shown}: {_reason(exc)}") from None
        return f'<span class="maths">{mathml}</span>' if inline else f'<div class="maths">{mathml}</div>'

    text = EQUATION.sub(replace, text)
    if not page.file.src_path.endswith(".ipynb"):
        return text
    parts = NOT_PROSE.split(text)  # prose, then (a code block, its tag name, prose) repeated
    return "".join(DOLLARS.sub(replace, part) if i % 3 == 0 else part for i, part in enumerate(parts) if i % 3 != 2)
