"""The gate in front of the browser tests: without a browser they skip, except under CI=true, where they fail.

Runs everywhere (it needs no browser): a CI that silently skipped the page's test would report
the page as tested when it was not.
"""

from __future__ import annotations

from typing import Optional

import pytest

import _chromium
import conftest


class FakeItem:
    """Just what the gate reads of a test item: its markers."""

    def __init__(self, *markers: str) -> None:
        self.markers = markers

    def get_closest_marker(self, name: str) -> Optional[pytest.Mark]:
        return getattr(pytest.mark, name).mark if name in self.markers else None


@pytest.fixture
def no_browser(monkeypatch: pytest.MonkeyPatch) -> str:
    why = "no chromium and chromedriver on PATH"
    monkeypatch.setattr(_chromium, "missing", lambda: why)
    return why


@pytest.mark.parametrize("ci", ["true", "TRUE"])
def test_a_browser_test_without_a_browser_fails_under_ci(
    no_browser: str, ci: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match=f"CI=true and no headless browser: {no_browser}"):
        conftest.pytest_runtest_setup(FakeItem("browser"))


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_a_browser_test_without_a_browser_skips_outside_ci(
    no_browser: str, ci: Optional[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception, match=no_browser):
        conftest.pytest_runtest_setup(FakeItem("browser"))


def test_the_gate_lets_a_browser_test_run_where_a_browser_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(_chromium, "missing", lambda: None)
    assert conftest.pytest_runtest_setup(FakeItem("browser")) is None


def test_the_gate_leaves_every_other_test_alone(no_browser: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert conftest.pytest_runtest_setup(FakeItem("slow")) is None
