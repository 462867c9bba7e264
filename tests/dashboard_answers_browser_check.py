"""Drive the dashboard's "Your own answers" in headless Chromium and print what it saw.

    python -m tests.dashboard_answers_browser_check WORKER_URL OWNER_TOKEN SCREENSHOT_DIR PHASE   (from the repository root)

Run as a subprocess by tests/test_dashboard_answers_browser.py, once per PHASE, at 375 px wide and by
keyboard where an owner would: each logs in, follows the "Your own answers" link, then
  add     adds an answer (the labelled fields, Tab to Add, Enter) and reads the notice and its state;
  change  reads the answer's state (after the crawl worker ran), edits it (the "Edit this answer"
          disclosure, Save), then removes it.
Prints one JSON object and exits 0 whatever it saw; the test asserts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

from tests.dashboard_owner import phone_page
from tests.widget_browser_check import CHROMIUM, CHROMIUM_ARGS, WAIT_MS

TITLE = "Is there parking <b>out back</b>?"
TEXT = "Yes: two free bays behind the workshop."
EDITED = "Yes: four free bays on Lane Street."


def _answers_page(page: Page, worker_url: str, token: str) -> None:
    page.goto(f"{worker_url}/admin")
    page.get_by_label("Owner token").fill(token)
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Questions to answer").wait_for()
    page.get_by_role("link", name="Your own answers").click()
    page.get_by_role("heading", name="Your own answers", exact=True).wait_for()


def _add(page: Page, seen: dict[str, Any], shots: Path) -> None:
    seen["scroll_width"] = page.evaluate("() => document.documentElement.scrollWidth")
    page.get_by_label("Question or topic").fill(TITLE)
    page.keyboard.press("Tab")
    seen["focused_after_title"] = page.evaluate("() => document.activeElement.id")
    page.keyboard.type(TEXT)
    page.keyboard.press("Tab")
    seen["focused_after_text"] = page.evaluate("() => document.activeElement.textContent")
    page.keyboard.press("Enter")
    page.locator("p.notice").wait_for()
    seen["add_notice"] = page.locator("p.notice").inner_text()
    seen["titles"] = page.locator("h3.question").all_inner_texts()
    seen["scroll_width_after"] = page.evaluate("() => document.documentElement.scrollWidth")
    page.screenshot(path=str(shots / "answers-375.png"), full_page=True)


def _change(page: Page, seen: dict[str, Any], shots: Path) -> None:
    item = page.locator("ol.items > li").first
    seen["state_after_crawl"] = item.locator("p.meta").first.inner_text()
    item.get_by_text("Edit this answer").click()
    answer = item.get_by_label("Answer", exact=True)
    answer.fill(EDITED)
    answer.focus()
    page.keyboard.press("Tab")
    seen["focused_after_edit"] = page.evaluate("() => document.activeElement.textContent")
    page.keyboard.press("Enter")
    page.locator("p.notice").wait_for()
    seen["edit_notice"] = page.locator("p.notice").inner_text()
    seen["texts"] = page.locator("div.excerpt").all_inner_texts()
    page.screenshot(path=str(shots / "answers-edited-375.png"), full_page=True)
    page.locator("ol.items > li").first.get_by_role("button", name="Remove").click()
    page.locator("p.notice").wait_for()
    seen["remove_notice"] = page.locator("p.notice").inner_text()
    seen["titles_after"] = page.locator("h3.question").all_inner_texts()


def check(worker_url: str, token: str, shots: Path, phase: str) -> dict[str, Any]:
    seen: dict[str, Any] = {"page_errors": [], "console_errors": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = phone_page(browser, seen, WAIT_MS)
            _answers_page(page, worker_url, token)
            (_add if phase == "add" else _change)(page, seen, shots)
        except Exception as exc:  # noqa: BLE001 (reported to the test, which fails with it)
            seen["failure"] = f"{type(exc).__name__}: {exc}"
        finally:
            browser.close()
    return seen


if __name__ == "__main__":
    print(json.dumps(check(sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4])))
