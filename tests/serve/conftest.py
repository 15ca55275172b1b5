"""One headless Chromium (tests/serve/cdp.py) for every test of the folder, and a fresh tab per test; without
Chromium the tests skip with the reason (fail under HARNESSCTL_REQUIRE_REAL=1)."""

from __future__ import annotations

import os

import cdp
import pytest


@pytest.fixture(scope="session")
def browser():
    reason = cdp.missing()
    if reason:
        if os.environ.get("HARNESSCTL_REQUIRE_REAL") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    with cdp.Browser() as browser:
        yield browser


@pytest.fixture
def page(browser):
    """A new tab, 1200x800, closed after the test."""
    with browser.new_page() as page:
        yield page
