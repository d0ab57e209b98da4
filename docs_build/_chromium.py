"""The page of ``nmt serve`` in the system's headless Chromium: for tests/browser and the README screenshot.

Uses Debian's ``chromium`` and ``chromedriver`` through Selenium; nothing is downloaded
(``SE_OFFLINE`` keeps Selenium Manager from looking for drivers online). Lives beside the
docs build, not in the package, as scripts/_serve_process.py does: docs_build/page_screenshot.py
imports it as ``_chromium`` and tests/conftest.py puts docs_build/ on ``sys.path`` for tests/browser.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_NAMES = ("chromedriver",)

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-dev-shm-usage",  # containers give /dev/shm a few MB; Chromium then crashes on big pages
    # No connection but to the page: the network is closed here, and Chromium's own requests
    # (updates, sync, field trials, QUIC probes) would each fail, many at a time, at every start.
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Flags for every start; the window size and a new empty profile folder are added per start."""


def _which(names: tuple[str, ...]) -> Optional[str]:
    return next((path for path in map(shutil.which, names) if path), None)


def missing() -> Optional[str]:
    """Why no headless browser can run here (None when one can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (make browser-deps installs it)"
    if _which(CHROMIUM_NAMES) is None or _which(DRIVER_NAMES) is None:
        return "no chromium and chromedriver on PATH (make browser-deps installs Debian's)"
    return None


@contextmanager
def headless_chromium(width: int = 1400, height: int = 1000) -> Iterator[Any]:
    """A Selenium WebDriver on headless Chromium with a new empty profile, quit on exit.

    A fresh ``--user-data-dir`` per start keeps runs independent: no cache, cookies or lock
    file of an earlier (or a concurrent) run.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")
    with tempfile.TemporaryDirectory(prefix="nmt-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = _which(CHROMIUM_NAMES) or ""
        for arg in (*CHROMIUM_FLAGS, f"--window-size={width},{height}", f"--user-data-dir={profile}"):
            options.add_argument(arg)
        driver = webdriver.Chrome(service=Service(_which(DRIVER_NAMES)), options=options)
        try:
            yield driver
        finally:
            driver.quit()


def translate_on_page(driver: Any, url: str, sentence: str, timeout: float = 60) -> None:
    """Open the page, type ``sentence``, press Translate and wait for every result's heat map or note."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, timeout)
    driver.get(url)
    wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, "input[name=model]")))
    models = len(driver.find_elements(By.CSS_SELECTOR, "input[name=model]"))
    driver.find_element(By.ID, "source").send_keys(sentence)
    driver.find_element(By.ID, "go").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "section.result")) == models)
