"""What the dashboard's browser tests share: the site crawled with the owner token set (the pytest side),
and a 375 px page recording its errors, and running a check's steps on it (the side
tests/dashboard_*_check.py run in a subprocess).
Playwright is imported only where a check drives it, so a test can skip when it is missing."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.devloop import HELPPUFF, ROOT, crawl_with_settings
from tests.test_widget_browser import CHROMIUM, _playwright_available

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

PHONE = {"width": 375, "height": 800}


def owner_site(serve_site: Any, tmp_path: Path, token: str) -> tuple[Any, dict[str, str], Path]:
    """The Acme site served, crawled into tmp_path/kb with `token` as the OWNER_TOKEN secret: the served
    site, the environment pointing at the knowledge base, and its directory (the local D1 is its
    d1/helppuff.sqlite3). Skips without Chromium and Playwright."""
    if not CHROMIUM.exists() or not _playwright_available():
        pytest.skip("needs /usr/bin/chromium and Python Playwright (installed with scrapy-playwright)")
    site = serve_site("acme-plumbing")
    data_dir = tmp_path / "kb"
    env = crawl_with_settings(site.url, data_dir, json.dumps({"backend": {"allowNoOrigin": True}}))
    stored = subprocess.run([HELPPUFF, "secret", "set", "OWNER_TOKEN"], cwd=ROOT, env=env, input=token,
                            capture_output=True, text=True, check=False)
    assert stored.returncode == 0, stored.stderr
    return site, env, data_dir


def phone_page(browser: Browser, seen: dict[str, Any], wait_ms: int) -> Page:
    """A new 375 px page of `browser`, its page errors and console errors appended to seen["page_errors"]
    and seen["console_errors"]."""
    page = browser.new_page(viewport=PHONE)
    page.set_default_timeout(wait_ms)
    page.on("pageerror", lambda error: seen["page_errors"].append(str(error)))
    # The browser's own favicon request is no page's (the Worker has none: 404).
    page.on("console", lambda msg: msg.type == "error" and not msg.location.get("url", "").endswith(
        "/favicon.ico") and seen["console_errors"].append(msg.text))
    return page


def run_on_phone(steps: Callable[[Page, dict[str, Any]], None], wait_ms: int) -> dict[str, Any]:
    """Run `steps` on a 375 px page of headless Chromium: what they saw, with the page and console errors,
    and "failure" (one line) when a step failed."""
    from playwright.sync_api import sync_playwright

    from tests.widget_browser_check import CHROMIUM_ARGS

    seen: dict[str, Any] = {"page_errors": [], "console_errors": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            steps(phone_page(browser, seen, wait_ms), seen)
        except Exception as exc:  # noqa: BLE001 (reported to the test, which fails with it)
            seen["failure"] = f"{type(exc).__name__}: {exc}"
        finally:
            browser.close()
    return seen
