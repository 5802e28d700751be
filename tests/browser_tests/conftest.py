"""Headless Chromium (Debian's /usr/bin/chromium) driven by Playwright, against live_server."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Flags that keep Chromium off the network on a closed machine (no background fetches).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium per module; closed with it, since Playwright's sync API holds an event
    loop in this thread while it runs, and later tests start their own."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run installs Debian's package")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    # Django refuses ORM calls while an event loop runs in the thread; the test's own ORM
    # calls are synchronous and safe, so allow them while the browser is open.
    with (
        pytest.MonkeyPatch.context() as patch,
        sync_playwright() as playwright,
    ):
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
