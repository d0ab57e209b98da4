"""The built documentation site, opened from disk in headless Chromium with no network, as a
student would open site/index.html: what a reader sees, not what the Markdown says.

Every page: no raw LaTeX left in its text (the equations are MathML written at build time,
docs_build/mkdocs_maths.py), every equation drawn with a size, every image loaded.  Every lab page:
its numbered steps are one ordered list, not a paragraph that swallowed them (a sub-list indented
by three spaces did that once).  The checks are tried on pages made to fail, so they can fail.
Screenshots of a few pages are kept beside the built site (``screenshots/``) for a reader of CI.
Every page's HTML, read as text: no LaTeX command left inside its MathML, no ``$`` in a heading or an
entry of its table of contents (tests/docs/test_headings.py checks the Markdown of the same).
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _chromium import headless_chromium
from conftest import REPO

pytestmark = pytest.mark.browser

SHOWN = ("index.html", "models.html", "labs/teacher_forcing.html")
"""Pages whose screenshots are kept."""

MADE_OF_EQUATIONS = ("models.html", "training.html", "decoding.html", "kernel.html", "teacher_forcing.html")
"""Pages that must show equations (a renderer that left none would pass the raw-LaTeX check)."""

READ_PAGE = """
const article = document.querySelector('article') || document.body;
const text = article.cloneNode(true);
text.querySelectorAll('pre, code, script, style, .maths').forEach(e => e.remove());
const steps = [...article.querySelectorAll(':scope > p')].map(p => p.innerText.trim())
    .filter(t => /^[0-9]+\\. /.test(t));
return {
  text: text.innerText,
  maths: [...article.querySelectorAll('math')].map(m => {
      const r = m.getBoundingClientRect(); return [m.textContent, r.width, r.height]; }),
  images: [...document.images].map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0]),
  ordered: [...article.querySelectorAll(':scope > ol')].map(o => o.children.length),
  broken: [...article.querySelectorAll('table code')].filter(c => c.getClientRects().length > 1)
      .map(c => c.textContent),
  swallowed: steps,
};
"""


def read_page(driver: Any, page: Path) -> dict[str, Any]:
    """What the browser shows of ``page``: its text outside code and maths, its equations with their
    drawn size, its images and whether each loaded, its top-level ordered lists, and paragraphs that
    begin like a numbered step."""
    driver.get(page.as_uri())
    return driver.execute_script(READ_PAGE)


def problems(seen: dict[str, Any], lab_page: bool, numbered: bool = True) -> list[str]:
    """What a reader would see wrong on a page read by :func:`read_page`; ``numbered``: the page's
    Markdown has numbered steps (a line starting ``1. ``)."""
    found = [f"raw LaTeX {mark!r} in the text" for mark in ("\\(", "\\[", "$$") if mark in seen["text"]]
    found += [
        f"an equation drawn with no size: {text!r}" for text, width, height in seen["maths"] if not width * height
    ]
    found += [f"image {src} did not load" for src, loaded in seen["images"] if not loaded]
    found += [f"code broken across lines in a table: {text!r}" for text in seen["broken"]]
    if lab_page:
        found += [f"a numbered step outside an ordered list: {text[:60]!r}" for text in seen["swallowed"]]
        if numbered and not any(items >= 2 for items in seen["ordered"]):
            found.append("no ordered list of steps")
    return found


MATHML_COMMAND = re.compile(r"<(mi|mo|mn|mtext)\b[^>]*>\s*(\\[A-Za-z]+)")
"""A LaTeX command that latex2mathml wrote as a token's text (``<mi>\\lVert</mi>``) instead of drawing it."""
HEADING = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1>", re.DOTALL)
CONTENTS_ENTRY = re.compile(r'<a\b[^>]*class="md-nav__link"[^>]*>(.*?)</a>', re.DOTALL)
"""An entry of the navigation or the page's table of contents, which the theme makes from the heading's text."""


def html_problems(page: str) -> list[str]:
    """What a page's HTML shows as LaTeX where no equation is drawn: a command left inside MathML, a
    ``$`` in a heading or in an entry of the table of contents."""
    found = [f"a LaTeX command left in MathML: {match[2]}" for match in MATHML_COMMAND.finditer(page)]
    for kind, texts in (
        ("heading", [m[2] for m in HEADING.finditer(page)]),
        ("contents entry", CONTENTS_ENTRY.findall(page)),
    ):
        for text in texts:
            shown = " ".join(html.unescape(re.sub(r"<[^>]+>", "", text)).split())
            if "$" in shown:
                found.append(f"maths in a {kind}: {shown!r}")
    return found


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation site built from this checkout (as make docs builds it, elsewhere)."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


def test_every_page_shows_its_equations_and_images_and_each_lab_its_steps(site: Path) -> None:
    pages = sorted(p for p in site.rglob("*.html") if p.name != "404.html" and "assets" not in p.parts)
    labs = {p for p in pages if p.parent.name == "labs" and p.name != "index.html"}
    assert len(labs) == 6 and site / "models.html" in pages
    shots = site / "screenshots"
    shots.mkdir()
    found: dict[str, list[str]] = {}
    with headless_chromium() as driver:
        for page in pages:
            seen = read_page(driver, page)
            if page.name in MADE_OF_EQUATIONS:
                assert seen["maths"], f"{page.name}: no equation drawn"
            source = REPO / "docs" / page.relative_to(site).with_suffix(".md")
            numbered = source.is_file() and re.search(r"^1\. ", source.read_text(encoding="utf-8"), re.M) is not None
            trouble = problems(seen, lab_page=page in labs, numbered=numbered)
            if trouble:
                found[str(page.relative_to(site))] = trouble
            if str(page.relative_to(site)) in SHOWN:
                driver.save_screenshot(str(shots / page.relative_to(site).as_posix().replace("/", "_")) + ".png")
    assert not found, found
    assert len(list(shots.iterdir())) == len(SHOWN)


def test_no_page_leaves_latex_in_its_maths_or_maths_in_a_heading(site: Path) -> None:
    pages = sorted(p for p in site.rglob("*.html") if "assets" not in p.parts)
    found = {str(p.relative_to(site)): html_problems(p.read_text(encoding="utf-8")) for p in pages}
    assert not {page: trouble for page, trouble in found.items() if trouble}


def test_the_html_check_finds_a_passed_through_command_and_maths_in_headings() -> None:
    page = (
        '<nav><a href="#tf" class="md-nav__link"><span class="md-ellipsis">Teacher forcing with probability $p$</span></a></nav>'
        '<h2 id="tf">Teacher forcing with probability $p$<a class="headerlink" href="#tf">&para;</a></h2>'
        "<p><math><mrow><mi>\\lVert</mi><mi>x</mi></mrow></math> costs $5 in the prose, which is fine</p>"
    )
    assert html_problems(page) == [
        "a LaTeX command left in MathML: \\lVert",
        "maths in a heading: 'Teacher forcing with probability $p$¶'",
        "maths in a contents entry: 'Teacher forcing with probability $p$'",
    ]


BAD_LAB_PAGE = """<html><body><article>
<h1>A lab</h1>
<table style="width: 8em"><tr><td><code style="word-break: break-all">data.synthetic_sizes_and_more</code></td></tr></table>
<p>1. Trains a model. The step that follows was swallowed into this paragraph.
2. Takes the best checkpoint.</p>
<p>The width is \\(\\sigma\\), left as LaTeX: no renderer ran.</p>
<p><img src="missing.png"></p>
</article></body></html>"""


def test_the_checks_fail_on_raw_latex_swallowed_steps_and_a_missing_image(tmp_path: Path) -> None:
    page = tmp_path / "lab.html"
    page.write_text(BAD_LAB_PAGE, encoding="utf-8")
    with headless_chromium() as driver:
        found = problems(read_page(driver, page), lab_page=True)
    assert any(p.startswith("raw LaTeX '\\\\('") for p in found), found
    assert "image missing.png did not load" in found
    assert any(p.startswith("a numbered step outside an ordered list: '1. Trains") for p in found), found
    assert "no ordered list of steps" in found
    assert "code broken across lines in a table: 'data.synthetic_sizes_and_more'" in found
