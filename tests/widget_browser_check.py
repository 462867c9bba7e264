"""Drive the chat widget on the Worker's demo page in headless Chromium and print what it saw.

    python tests/widget_browser_check.py WORKER_URL SCREENSHOT_PATH

Run as a subprocess by tests/test_widget_browser.py (Playwright's sync API wants a thread without
a running event loop, and the test process runs an asyncio reactor). Opens WORKER_URL/demo?site=acme,
asks a question the site answers, then one it cannot, fills the callback form with a phone number,
and prints one JSON object: the answers' texts, the Sources links, the form's presence, keyboard
and ARIA checks, and any page errors. Exits 0 once it has printed, whatever it saw; the test asserts.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-gpu"]
ANSWERED = "how much is an after-hours call-out?"
UNANSWERED = "do you sell pizza?"
PHONE = "what's your phone number?"
WAIT_MS = 60_000


def check(worker_url: str, screenshot: str) -> dict[str, Any]:
    seen: dict[str, Any] = {"page_errors": [], "console_errors": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 720})
            page.on("pageerror", lambda error: seen["page_errors"].append(str(error)))
            page.on("console", lambda msg: msg.type == "error" and seen["console_errors"].append(msg.text))
            page.goto(f"{worker_url}/demo?site=acme")
            bubble = page.locator("button.bubble")
            bubble.wait_for(timeout=WAIT_MS)
            seen["bubble_label"] = bubble.get_attribute("aria-label")
            seen["panel_hidden_before"] = page.locator("section.panel").is_hidden()

            # Keyboard: focus the bubble, Enter opens and focuses the question field; Escape closes.
            bubble.focus()
            page.keyboard.press("Enter")
            page.locator("#hp-question").wait_for(state="visible", timeout=WAIT_MS)
            seen["focus_after_open"] = page.evaluate(
                "() => { const h = document.querySelector('[data-helppuff-widget]');"
                " return h.shadowRoot.activeElement && h.shadowRoot.activeElement.id; }")
            seen["expanded_after_open"] = bubble.get_attribute("aria-expanded")
            page.keyboard.press("Escape")
            seen["panel_hidden_after_escape"] = page.locator("section.panel").is_hidden()
            seen["focus_after_escape"] = page.evaluate(
                "() => { const h = document.querySelector('[data-helppuff-widget]');"
                " const a = h.shadowRoot.activeElement; return a && a.className; }")
            bubble.click()
            seen["log_aria_live"] = page.locator(".log").get_attribute("aria-live")

            # A question the site answers: streamed text, then Sources.
            page.locator("#hp-question").fill(ANSWERED)
            page.keyboard.press("Enter")
            answer = page.locator(".msg.bot").nth(1)
            answer.locator(".sources a").first.wait_for(timeout=WAIT_MS)
            seen["answer_text"] = answer.evaluate("n => n.firstChild ? n.firstChild.textContent : ''")
            seen["source_links"] = answer.locator(".sources a").evaluate_all("links => links.map(a => a.href)")
            seen["answer_classes"] = answer.get_attribute("class")

            # "What's your number?" is answered from the business details (the facts passage).
            page.locator("#hp-question").fill(PHONE)
            page.keyboard.press("Enter")
            phone = page.locator(".msg.bot", has_text="Phone:")
            phone.wait_for(timeout=WAIT_MS)
            phone.locator(".sources a").first.wait_for(timeout=WAIT_MS)
            seen["phone_text"] = phone.evaluate("n => n.firstChild ? n.firstChild.textContent : ''")
            seen["phone_sources"] = phone.locator(".sources a").evaluate_all(
                "links => links.map(a => [a.textContent, a.href])")

            # A question it cannot answer: the callback form; submit it with a phone number.
            page.locator("#hp-question").fill(UNANSWERED)
            page.keyboard.press("Enter")
            form = page.locator("form.form")
            form.wait_for(timeout=WAIT_MS)
            unsure = page.locator(".msg.bot").nth(3)
            seen["unsure_text"] = unsure.evaluate("n => n.firstChild ? n.firstChild.textContent : ''")
            seen["unsure_classes"] = unsure.get_attribute("class")
            seen["unsure_sources_header"] = unsure.evaluate(
                "n => { const p = n.querySelector('.sources p'); return p ? p.textContent : null; }")
            seen["unsure_border"] = unsure.evaluate("n => getComputedStyle(n).borderTopStyle")
            seen["form_need"] = form.locator("textarea").input_value()
            form.locator("input").nth(0).fill("Sam Citizen")
            form.locator("input").nth(1).fill("0412 345 678")
            page.screenshot(path=screenshot)
            form.locator("button[type=submit]").click()
            note = page.locator(".msg.note")
            note.wait_for(timeout=WAIT_MS)
            seen["confirmation"] = page.locator(".msg.bot").nth(4).text_content()
            seen["note"] = note.text_content()
            seen["form_gone"] = page.locator("form.form").count() == 0
            seen["error_boxes"] = page.locator(".msg.error").count()
        finally:
            browser.close()
    return seen


def main() -> int:
    worker_url, screenshot = sys.argv[1], sys.argv[2]
    try:
        seen = check(worker_url, screenshot)
    except Exception as exc:  # reported to the test, which fails with it
        seen = {"failure": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
