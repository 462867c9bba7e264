"""Drive the dashboard's Knowledge page in headless Chromium and print what it saw.

    python -m tests.dashboard_knowledge_check WORKER_URL OWNER_TOKEN SCREENSHOT_DIR   (from the repository root)

Run as a subprocess by tests/test_dashboard_knowledge_browser.py, as tests/dashboard_browser_check.py is.
At 375 px wide and by keyboard: logs in, follows the navigation to Knowledge, opens the Failed tab,
tabs to the failed page's "Try again" and presses Enter. Prints one JSON object (texts, the page's
width, the keys tabbed through, page and console errors) and exits 0 whatever it saw; the test asserts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.dashboard_owner import run_on_phone
from tests.widget_browser_check import WAIT_MS

if TYPE_CHECKING:
    from playwright.sync_api import Page

MAX_TABS = 12


def check(worker_url: str, token: str, shots: Path) -> dict[str, Any]:
    def steps(page: Page, seen: dict[str, Any]) -> None:
        seen["tabbed"] = []
        page.goto(f"{worker_url}/admin/login")
        page.get_by_label("Owner token").fill(token)
        page.keyboard.press("Enter")
        page.get_by_role("heading", name="Questions to answer").wait_for()

        page.get_by_role("link", name="Knowledge").click()
        page.get_by_role("heading", name="Knowledge", exact=True).wait_for()
        seen["knowledge_url"] = page.url
        seen["headings"] = page.locator("h2").all_inner_texts()
        seen["page_titles"] = page.locator("p.question[id^='page-']").all_inner_texts()
        seen["refreshes"] = page.locator("meta[http-equiv='refresh']").count()
        seen["scroll_width"] = page.evaluate("() => document.documentElement.scrollWidth")
        page.screenshot(path=str(shots / "knowledge-375.png"), full_page=True)

        # The Failed tab, then by keyboard from it to the page's Try again.
        page.get_by_role("link", name="Failed (").click()
        page.locator("a[aria-current='page']", has_text="Failed").wait_for()
        seen["failed_titles"] = page.locator("p.question[id^='page-']").all_inner_texts()
        page.locator("a[aria-current='page']", has_text="Failed").focus()
        for _ in range(MAX_TABS):
            page.keyboard.press("Tab")
            focused = page.evaluate("() => document.activeElement.textContent.trim()")
            seen["tabbed"].append(focused)
            if focused == "Try again":
                break
        seen["described_by"] = page.evaluate(
            "() => document.getElementById(document.activeElement.getAttribute('aria-describedby')).textContent")
        page.keyboard.press("Enter")
        page.locator("p.notice").wait_for()
        seen["notice"] = page.locator("p.notice").inner_text()
        seen["job"] = page.locator("#jobs-title + ol p.question").all_inner_texts()
        seen["refreshes_after"] = page.locator("meta[http-equiv='refresh']").count()
        seen["scroll_width_after"] = page.evaluate("() => document.documentElement.scrollWidth")
        page.screenshot(path=str(shots / "knowledge-asked-375.png"), full_page=True)

    return run_on_phone(steps, WAIT_MS)


if __name__ == "__main__":
    print(json.dumps(check(sys.argv[1], sys.argv[2], Path(sys.argv[3]))))
