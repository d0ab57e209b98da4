"""MkDocs hook: the pages' equations as MathML, written into the HTML when the site is built.

``pymdownx.arithmatex`` (generic mode) leaves each equation as LaTeX inside
``<span class="arithmatex">\\( ... \\)</span>`` or ``<div class="arithmatex">\\[ ... \\]</div>``.
This hook converts each one with latex2mathml (pinned by the docs extra), so the built site shows
every equation with no script and no network: a student opening site/index.html from disk, or a
classroom without internet, reads the same equations (browsers render MathML Core natively).  An
equation latex2mathml cannot convert fails the build, naming the page and the LaTeX.

The notebooks' pages (mkdocs-jupyter) keep their Markdown cells' ``$...$`` and ``$$...$$`` as
written, for a MathJax script from a CDN; those are converted too, outside code and scripts.
"""

from __future__ import annotations

import html
import re
from typing import Any

from latex2mathml.converter import convert

EQUATION = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<block>.*?)\\\])\s*</(?P=tag)>',
    re.DOTALL,
)


NOT_PROSE = re.compile(r"(<(pre|code|script|style)\b.*?</\2>)", re.DOTALL | re.IGNORECASE)
"""Code, scripts and styles, whose dollar signs are not maths."""

DOLLARS = re.compile(r"\$\$(?P<block>.+?)\$\$|(?<![\\$\w])\$(?!\s)(?P<inline>[^$\n]+?)(?<!\s)\$(?![\w$])", re.DOTALL)
"""A notebook cell's ``$$...$$`` (display) or ``$...$`` (inline; not a lone price such as $5)."""


def to_mathml(latex: str, display: str) -> str:
    """One equation's MathML; ``display`` is "inline" or "block"."""
    return convert(html.unescape(latex).strip(), display=display)


def on_page_content(text: str, page: Any, **_: Any) -> str:
    """Replace every equation of a page by its MathML: arithmatex's, and a notebook's dollars."""

    def replace(match: re.Match[str]) -> str:
        inline = match["inline"] is not None
        latex = match["inline"] if inline else match["block"]
        try:
            mathml = to_mathml(latex, "inline" if inline else "block")
        except Exception as exc:  # latex2mathml raises several kinds: name the equation whatever it was
            raise ValueError(f"{page.file.src_path}: cannot convert the equation {latex.strip()!r}: {exc}") from exc
        return f'<span class="maths">{mathml}</span>' if inline else f'<div class="maths">{mathml}</div>'

    text = EQUATION.sub(replace, text)
    if not page.file.src_path.endswith(".ipynb"):
        return text
    parts = NOT_PROSE.split(text)  # prose, then (a code block, its tag name, prose) repeated
    return "".join(DOLLARS.sub(replace, part) if i % 3 == 0 else part for i, part in enumerate(parts) if i % 3 != 2)
