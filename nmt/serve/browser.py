"""The page in the system's headless Chromium, for the browser test and the README screenshot.

Uses Debian's ``chromium`` and ``chromedriver`` through Selenium; nothing is downloaded
(``SE_OFFLINE`` keeps Selenium Manager from looking for drivers online).
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from typing import Any, Iterator, Optional

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_NAMES = ("chromedriver",)


def _which(names: tuple[str, ...]) -> Optional[str]:
    return next((path for path in map(shutil.which, names) if path), None)


def missing() -> Optional[str]:
    """Why no headless browser can run here (None when one can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (make test-browser installs it)"
    if _which(CHROMIUM_NAMES) is None or _which(DRIVER_NAMES) is None:
        return "no chromium and chromedriver on PATH (make test-browser installs Debian's)"
    return None


@contextmanager
def headless_chromium(width: int = 1400, height: int = 1000) -> Iterator[Any]:
    """A Selenium WebDriver on headless Chromium, quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = _which(CHROMIUM_NAMES) or ""
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}"):
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
