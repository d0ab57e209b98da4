"""The built documentation site, opened from disk in headless Chromium with no network, as a
student would open site/index.html: what a reader sees, not what the Markdown says.

Every page: no raw LaTeX left in its text (the equations are MathML written at build time,
scripts/mkdocs_maths.py), every equation drawn with a size, every image loaded.  Every lab page:
its numbered steps are one ordered list, not a paragraph that swallowed them (a sub-list indented
by three spaces did that once).  The checks are tried on pages made to fail, so they can fail.
Screenshots of a few pages are kept beside the built site (``screenshots/``) for a reader of CI.
"""

from __future__ import annotations

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
