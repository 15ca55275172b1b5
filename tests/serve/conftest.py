"""One headless Chromium (tests/serve/cdp.py) for every test of the folder, and a fresh tab per test; without
Chromium the tests skip with the reason (fail under HARNESSCTL_REQUIRE_REAL=1)."""

from __future__ import annotations

import cdp
import cliutil
import pytest


@pytest.fixture(scope="session")
def browser():
    cliutil.missing_part(cdp.missing())
    with cdp.Browser() as browser:
        yield browser


@pytest.fixture
def page(browser):
    """A new tab, 1200x800, closed after the test."""
    with browser.new_page() as page:
        yield page
