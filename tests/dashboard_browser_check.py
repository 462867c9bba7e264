"""Drive the owner's dashboard in headless Chromium and print what it saw.

    python -m tests.dashboard_browser_check WORKER_URL OWNER_TOKEN SCREENSHOT_DIR   (from the repository root)

Run as a subprocess by tests/test_dashboard_browser.py (Playwright's sync API wants a thread without a
running event loop). At 375 px wide and by keyboard where an owner would: opens WORKER_URL/admin (sent
to the login), logs in with the token, answers the one open question, marks the one lead done, logs
out. Prints one JSON object (texts, URLs, the page's width, page and console errors) and exits 0
whatever it saw; the test asserts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from tests.dashboard_owner import phone_page
from tests.widget_browser_check import CHROMIUM, CHROMIUM_ARGS, WAIT_MS

ANSWER = "Yes: two free bays behind the workshop."


def check(worker_url: str, token: str, shots: Path) -> dict[str, Any]:
    seen: dict[str, Any] = {"page_errors": [], "console_errors": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = phone_page(browser, seen, WAIT_MS)
            page.goto(f"{worker_url}/admin")
            seen["login_url"] = page.url
            page.screenshot(path=str(shots / "login-375.png"), full_page=True)

            # Log in by keyboard: the labelled field, Enter submits.
            page.get_by_label("Owner token").fill(token)
            page.keyboard.press("Enter")
            page.get_by_role("heading", name="Questions to answer").wait_for()
            seen["questions_url"] = page.url
            seen["question_texts"] = page.locator("p.question").all_inner_texts()
            seen["scroll_width"] = page.evaluate("() => document.documentElement.scrollWidth")
            page.screenshot(path=str(shots / "questions-375.png"), full_page=True)

            # Answer the question: its labelled box, then Tab to the Answer button and Enter.
            page.get_by_label("Your answer").fill(ANSWER)
            page.keyboard.press("Tab")
            seen["focused_after_tab"] = page.evaluate("() => document.activeElement.textContent")
            page.keyboard.press("Enter")
            page.locator("p.notice").wait_for()
            seen["answer_notice"] = page.locator("p.notice").inner_text()
            seen["questions_after"] = page.locator("p.question").all_inner_texts()

            page.get_by_role("link", name="Leads").click()
            page.get_by_role("heading", name="Leads").wait_for()
            seen["lead_texts"] = page.locator("p.question").all_inner_texts()
            seen["excerpt"] = page.locator("div.excerpt").all_inner_texts()
            page.screenshot(path=str(shots / "leads-375.png"), full_page=True)
            page.get_by_role("button", name="Mark done").click()
            page.locator("p.notice").wait_for()
            seen["done_notice"] = page.locator("p.notice").inner_text()
            seen["leads_after"] = page.locator("p.question").all_inner_texts()

            page.get_by_role("button", name="Log out").click()
            page.get_by_role("heading", name="Owner login").wait_for()
            seen["after_logout_url"] = page.url
            page.goto(f"{worker_url}/admin/sites/acme/leads")
            seen["leads_after_logout_url"] = page.url
        except Exception as exc:  # noqa: BLE001 (reported to the test, which fails with it)
            seen["failure"] = f"{type(exc).__name__}: {exc}"
        finally:
            browser.close()
    return seen


if __name__ == "__main__":
    print(json.dumps(check(sys.argv[1], sys.argv[2], Path(sys.argv[3]))))
