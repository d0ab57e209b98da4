"""The page at / in headless Chromium: type a sentence, get a heat map of the right size.

Runs where Debian's chromium, chromedriver and selenium are installed (``make test-browser``
and .ci/run install them); skipped elsewhere, except under CI=true, where that fails
(tests/conftest.py, for tests marked ``browser``).
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from _chromium import headless_chromium, translate_on_page
from conftest import serving

pytestmark = pytest.mark.browser


def test_a_typed_sentence_gets_a_heat_map_with_a_row_per_output_and_a_column_per_source_token(
    trained_toy: Path, toy_files, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    _, files = toy_files
    sentence = Path(files["test"][0]).read_text(encoding="utf-8").splitlines()[0]
    best = trained_toy / "checkpoints" / "best.pt"
    with serving(["--checkpoint", f"toy={best}"], tmp_path / "server.log") as url, headless_chromium() as driver:
        translate_on_page(driver, url, sentence)
        request = urllib.request.Request(
            url + "/translate",
            headers={"Content-Type": "application/json"},
            data=json.dumps({"text": [sentence], "beam": 5, "n_best": 5, "attention": True}).encode(),
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            expected = json.load(response)["translations"][0]
        result = driver.find_element(By.CSS_SELECTOR, "section.result[data-model=toy]")
        assert result.find_element(By.CSS_SELECTOR, ".translation").text == expected["translation"]
        heat = result.find_element(By.CSS_SELECTOR, "table.heatmap")
        columns = heat.find_elements(By.CSS_SELECTOR, "thead th[scope=col]")
        rows = heat.find_elements(By.CSS_SELECTOR, "tbody tr")
        view = expected["attention"]
        assert len(columns) == len(view["source_tokens"]) and len(rows) == len(view["target_tokens"])
        assert all(len(row.find_elements(By.CSS_SELECTOR, "td")) == len(columns) for row in rows)
        hypotheses = result.find_elements(By.CSS_SELECTOR, "table.hyps tbody tr")
        assert len(hypotheses) == len(expected["hypotheses"]) == 5
        # what the page explains: the axes and the colour scale of the map, the two score columns
        assert "target" in heat.find_element(By.CSS_SELECTOR, "caption").text
        assert "source" in heat.find_element(By.CSS_SELECTOR, "caption").text
        assert result.find_element(By.CSS_SELECTOR, ".scale").text.startswith("weight 0")
        assert "log P" in result.text and "length penalty" in result.text
        # the placeholder names the model's source language instead of a German example
        placeholder = driver.find_element(By.ID, "source").get_attribute("placeholder")
        assert "Ein Mann" not in placeholder and placeholder.startswith("A sentence in")
