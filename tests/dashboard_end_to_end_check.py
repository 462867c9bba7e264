"""Drive the whole owner's dashboard in headless Chromium, as an owner uses it, and print what it saw.

    python -m tests.dashboard_end_to_end_check WORKER_URL OWNER_TOKEN SITE_URL PDF_PATH SHOT_DIR   (from the repository root)

Run as a subprocess by tests/test_dashboard_end_to_end.py against `helppuff serve` with its crawl worker,
on a knowledge base that has never seen the site. At 375 px wide: log in; add the site by its address
and wait while its pages are found; untick a page; learn; set the websites the chat may be used from;
watch the crawl finish on Knowledge; try a failed page again; add an own answer and ask the chat it
until it is answered; upload a PDF and search for its text; answer one question visitors asked and
dismiss another; mark a lead done; change the business phone and ask the chat for it; log out. The chat
and the search are asked as the widget asks them (POST with the site's Origin). Each page is
screenshotted at 375 and 1280 px. Prints one JSON object and exits 0 whatever it saw; the test asserts.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.dashboard_owner import PHONE, run_on_phone
from tests.widget_browser_check import WAIT_MS

if TYPE_CHECKING:
    from playwright.sync_api import Page

WIDE = {"width": 1280, "height": 900}
ANSWER_TITLE = "Do you service Geelong?"
ANSWER_TEXT = "Yes: our Geelong van is out every Tuesday and Thursday, same prices as Melbourne."
GAP_ANSWER = "Yes, we fit tankless gas units; ask for a quote."
NEW_PHONE = "03 9999 0000"
UNTICKED = "/testimonials"


def _shot(page: Page, shots: Path, name: str, seen: dict[str, Any]) -> None:
    """The page at 375 px (and how wide it is), then at 1280 px, then back to 375."""
    seen.setdefault("widths", {})[name] = page.evaluate("() => document.documentElement.scrollWidth")
    page.screenshot(path=str(shots / f"{name}-375.png"), full_page=True)
    page.set_viewport_size(WIDE)
    page.screenshot(path=str(shots / f"{name}-1280.png"), full_page=True)
    page.set_viewport_size(PHONE)


def _until(page: Page, text: str, seconds: float, where: str = "main") -> float:
    """Reload the page until `where` shows `text`; the seconds it took. Raises TimeoutError after `seconds`."""
    start = time.monotonic()
    while text not in page.locator(where).inner_text():
        if time.monotonic() - start > seconds:
            raise TimeoutError(f"{page.url} did not show {text!r} within {seconds:.0f} s")
        page.wait_for_timeout(1000)
        page.reload()
    return time.monotonic() - start


def _chat(page: Page, worker_url: str, site: str, origin: str, question: str) -> str:
    reply = page.request.post(f"{worker_url}/v1/sites/{site}/chat", headers={"origin": origin},
                              data={"messages": [{"role": "user", "content": question}]}, timeout=WAIT_MS)
    return f"HTTP {reply.status}\n{reply.text()}"


def _nav(page: Page, label: str, heading: str | None = None) -> None:
    page.get_by_role("navigation").get_by_role("link", name=label, exact=True).click()
    page.get_by_role("heading", name=heading or label, exact=True).first.wait_for()


def check(worker_url: str, token: str, site_url: str, pdf: Path, shots: Path) -> dict[str, Any]:
    def steps(page: Page, seen: dict[str, Any]) -> None:
        seen["steps"] = []
        page.goto(f"{worker_url}/admin")
        _shot(page, shots, "login", seen)
        page.get_by_label("Owner token").fill(token)
        page.keyboard.press("Enter")
        page.get_by_role("heading", name="Your sites").wait_for()
        _shot(page, shots, "sites", seen)
        seen["steps"].append("logged in")

        # Set up: add the site, wait while its pages are found, untick one, learn.
        page.get_by_label("Add a site: its address").fill(site_url)
        page.get_by_role("button", name="Add and find its pages").click()
        page.get_by_role("heading", name="Set up").wait_for()
        seen["site"] = page.url.split("/admin/sites/")[1].split("/")[0]
        seen["setup_waiting"] = page.locator("main").inner_text()
        seen["discover_seconds"] = _until(page, "pages found on", 180)
        seen["setup_pages"] = page.locator("ol.picks label").all_inner_texts()
        page.get_by_label(UNTICKED, exact=True).uncheck()
        _shot(page, shots, "setup", seen)
        page.get_by_role("button", name="Learn from these pages").click()
        page.locator("p.notice").first.wait_for()
        seen["learn_notice"] = page.locator("p.notice").first.inner_text()
        seen["steps"].append("set up")

        # Settings: the websites the chat may be used from (the site itself).
        _nav(page, "Settings")
        page.get_by_label("Websites the chat may be used from").fill(site_url)
        page.get_by_role("button", name="Save answering settings").click()
        page.locator("p.notice").wait_for()
        seen["origins_notice"] = page.locator("p.notice").inner_text()

        # Knowledge: the crawl finishes; a failed page tried again.
        _nav(page, "Knowledge")
        seen["crawl_seconds"] = _until(page, "Done: ", 420, "main")
        _shot(page, shots, "knowledge", seen)
        page.get_by_role("link", name="Failed (").click()
        page.locator("a[aria-current='page']", has_text="Failed").wait_for()
        seen["failed_pages"] = page.locator("p.question[id^='page-']").all_inner_texts()
        page.get_by_role("button", name="Try again").first.click()
        page.locator("p.notice").first.wait_for()
        seen["try_again_notice"] = page.locator("p.notice").first.inner_text()
        seen["steps"].append("knowledge")

        # Your own answers: added, searchable within seconds, answered by the chat.
        _nav(page, "Your own answers")
        page.get_by_label("Question or topic").first.fill(ANSWER_TITLE)
        page.get_by_label("Answer", exact=True).first.fill(ANSWER_TEXT)
        page.get_by_role("button", name="Add", exact=True).click()
        page.locator("p.notice").first.wait_for()
        seen["answer_notice"] = page.locator("p.notice").first.inner_text()
        started = time.monotonic()
        reply = ""
        while ANSWER_TEXT.split(":")[1].strip()[:20] not in reply and time.monotonic() - started < 180:
            page.wait_for_timeout(1000)
            reply = _chat(page, worker_url, seen["site"], site_url, "do you come out to geelong?")
        seen["answer_chat_seconds"] = time.monotonic() - started
        seen["answer_chat"] = reply
        page.reload()
        _shot(page, shots, "answers", seen)
        seen["steps"].append("own answer")

        # Files: a PDF uploaded, learned, and its text found by the search.
        _nav(page, "Files")
        page.get_by_label("A PDF, Word (.docx), Markdown or text file, up to 10 MB").set_input_files(str(pdf))
        page.get_by_role("button", name="Upload").click()
        page.locator("p.notice").first.wait_for()
        seen["upload_notice"] = page.locator("p.notice").first.inner_text()
        seen["file_seconds"] = _until(page, "Learned", 240)
        _shot(page, shots, "files", seen)
        found = page.request.post(f"{worker_url}/v1/sites/{seen['site']}/search", headers={"origin": site_url},
                                  data={"query": "how much is a boiler flush?"}, timeout=WAIT_MS)
        seen["file_search"] = [p.get("url", "") for p in (found.json().get("passages") or [])] if found.ok else [found.text()]
        seen["steps"].append("files")

        # Questions visitors asked: one answered, one dismissed.
        for question in ("Do you install tankless water heaters?", "Can you fix my car?"):
            seen.setdefault("gap_chats", []).append(_chat(page, worker_url, seen["site"], site_url, question)[:200])
        _nav(page, "Questions to answer")
        _until(page, "Can you fix my car?", 60)
        seen["questions"] = page.locator("p.question").all_inner_texts()
        _shot(page, shots, "questions", seen)
        tankless = page.locator("li", has_text="Do you install tankless water heaters?")
        tankless.get_by_label("Your answer").fill(GAP_ANSWER)
        tankless.get_by_role("button", name="Answer").click()
        page.locator("p.notice").first.wait_for()
        seen["gap_answer_notice"] = page.locator("p.notice").first.inner_text()
        page.locator("li", has_text="Can you fix my car?").get_by_role("button", name="Dismiss").click()
        page.locator("p.notice").first.wait_for()
        seen["gap_dismiss_notice"] = page.locator("p.notice").first.inner_text()
        seen["questions_after"] = page.locator("p.question").all_inner_texts()
        seen["steps"].append("questions")

        # Leads: marked done.
        _nav(page, "Leads")
        seen["leads"] = page.locator("p.question").all_inner_texts()
        _shot(page, shots, "leads", seen)
        page.get_by_role("button", name="Mark done").first.click()
        page.locator("p.notice").first.wait_for()
        seen["lead_notice"] = page.locator("p.notice").first.inner_text()
        seen["steps"].append("leads")

        # Settings: the business phone, then the chat gives it.
        _nav(page, "Settings")
        seen["phone_before"] = page.get_by_label("Phone").input_value()
        page.get_by_label("Phone").fill(NEW_PHONE)
        page.get_by_role("button", name="Save business details").click()
        page.locator("p.notice").wait_for()
        seen["phone_notice"] = page.locator("p.notice").inner_text()
        _shot(page, shots, "settings", seen)
        seen["phone_chat"] = _chat(page, worker_url, seen["site"], site_url, "what's your phone number?")
        seen["steps"].append("settings")

        page.get_by_role("button", name="Log out").click()
        page.get_by_role("heading", name="Owner login").wait_for()
        page.goto(f"{worker_url}/admin/sites/{seen['site']}/leads")
        seen["after_logout_url"] = page.url
        seen["steps"].append("logged out")

    return run_on_phone(steps, WAIT_MS)


if __name__ == "__main__":
    print(json.dumps(check(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]), Path(sys.argv[5]))))
