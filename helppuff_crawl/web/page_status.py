"""What becomes of a page the spider asked for: its status and reason, from the response or the failure.

Pure: plain values in (the URL a fetch ended at, the status code, the headers, the body; or the kind,
class name and message of a failed download), a frozen `PageStatus` out; no Scrapy import. The spider
records the answer on the Page (Page.status, Page.reason).

A response: `offsite_status` first (one that ended on another site is no page of this one, and is not
rendered either), then `page_status` on the response the spider learns from (rendered or not), whose
first rung that holds decides:

| the response                                            | status  | reason                         |
|---------------------------------------------------------|---------|--------------------------------|
| 401, 403, 429: the site keeps us out (`blocked_reason`) | blocked | `HTTP 403`                     |
| 404, 410                                                | gone    | `HTTP 404`                     |
| 5xx (the retry middleware has retried it)               | failed  | `HTTP 503 after retries`       |
| any other 3xx or 4xx (a redirect not followed, a 400)   | failed  | `HTTP 400`                     |
| not HTML by Content-Type, nor by its first 512 bytes    | skipped | `not HTML: application/pdf`    |
| a bot-check interstitial (`challenge_reason`)           | blocked | `challenge page (cloudflare)`  |
| anything else                                           | fetched | ""                             |

A download that failed: `failure_status`, by the failure's kind (the spider tells it from the
exception's class) and then its message:

| the failure                                                      | status  | reason                                     |
|------------------------------------------------------------------|---------|--------------------------------------------|
| robots: robots.txt disallows the URL                             | skipped | the message, else `robots.txt: disallowed` |
| refused by the guard: a redirect off the site, a private address | skipped | the message                                |
| ignored, with too many redirects                                 | failed  | `redirect loop (too many redirects)`       |
| ignored, otherwise                                               | skipped | the message, else the class name           |
| timeout (after the retry middleware's retries)                   | failed  | `timed out after retries`                  |
| unreachable: no DNS answer, connection refused                   | failed  | `unreachable: DNSLookupError`              |
| anything else, over the download size limit                      | skipped | `response over the 3 MB download limit`    |
| anything else                                                    | failed  | the class name, the message's first line   |

Whether a redirect ended at a page another candidate is already stays the spider's call (it knows
the candidates).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from helppuff_crawl.web.urls import normalize_url, same_site

OFFSITE = "redirected to another site"  # the reason's start, here and in the guard (middlewares/guard.py)

# Markers of bot-check interstitials (Cloudflare, Sucuri, Akamai, PerimeterX, DataDome, hCaptcha
# and reCAPTCHA walls). Matched case-insensitively on the first 20 KB of the page.
_CHALLENGE_MARKERS = (
    ("cloudflare", re.compile(r"<title>\s*(just a moment|attention required)|cf-chl-|challenge-platform|cf_chl_opt")),
    ("sucuri", re.compile(r"sucuri website firewall|sucuri_cloudproxy")),
    ("akamai", re.compile(r"<title>\s*access denied\s*</title>.*reference #", re.S)),
    ("perimeterx", re.compile(r"px-captcha|_pxhd|perimeterx")),
    ("datadome", re.compile(r"captcha-delivery\.com|datadome")),
    ("captcha", re.compile(r"<title>[^<]*(captcha|are you a robot|bot check|verify you are human)")),
)
_CHALLENGE_HEADERS = (("cf-mitigated", "challenge"),)

# How a download failed, as the spider tells it from the exception's class ("": none of these).
FailureKind = Literal["robots", "refused", "ignored", "timeout", "unreachable", ""]


@dataclass(frozen=True)
class PageStatus:
    """A page's fate, as the Page records it (Page.status, Page.reason)."""

    status: str  # "fetched" (learned from), "blocked", "gone", "failed" or "skipped"
    reason: str = ""  # why it is not learned from, e.g. "HTTP 404"; "" when fetched

    @property
    def fetched(self) -> bool:
        return self.status == "fetched"


def offsite_status(url: str, start: str) -> PageStatus | None:
    """`skipped` when the fetch ended at `url` on another site than `start`'s (or at no web address), else
    None. The downloader guard does not follow redirects to another site (middlewares/guard.py,
    handlers/browser.py); whatever still ends elsewhere is not this site's page either."""
    final = normalize_url(url)
    if final is not None and same_site(final, start):
        return None
    return PageStatus("skipped", f"{OFFSITE}: {url}")


def page_status(status: int, headers: Mapping[str, str], body: bytes, html: Callable[[], str]) -> PageStatus:
    """The page's status and reason, from the response's status code, headers (names in any case) and
    body; `html()` gives the body as text (the caller's decoding) and is called only for an HTML page
    with a status to learn from. The rungs are the module's table."""
    if why := blocked_reason(status):
        return PageStatus("blocked", why)
    if status in (404, 410):
        return PageStatus("gone", f"HTTP {status}")
    if status >= 500:
        return PageStatus("failed", f"HTTP {status} after retries")
    if status >= 300:
        return PageStatus("failed", f"HTTP {status}")
    ctype = next((value for name, value in headers.items() if name.lower() == "content-type"), "")
    if not is_html(ctype, body[:512]):
        return PageStatus("skipped", f"not HTML: {ctype.split(';')[0] or 'no content type'}")
    if why := challenge_reason(status, headers, html()):
        return PageStatus("blocked", why)
    return PageStatus("fetched")


def failure_status(kind: FailureKind, error: str, message: str) -> PageStatus:
    """The page's status and reason when its download failed: from the failure's `kind`, the
    exception's class name (`error`) and its message. The rungs are the module's second table."""
    if kind == "robots":
        return PageStatus("skipped", message or "robots.txt: disallowed")
    if kind == "refused":
        return PageStatus("skipped", message)
    if kind == "ignored":
        if "max redirections" in message.lower():
            return PageStatus("failed", "redirect loop (too many redirects)")
        return PageStatus("skipped", message or error)
    if kind == "timeout":
        return PageStatus("failed", "timed out after retries")
    if kind == "unreachable":
        return PageStatus("failed", f"unreachable: {error}")
    text = message.strip().splitlines()[0] if message.strip() else ""
    if "larger than" in text and "max" in text:
        return PageStatus("skipped", "response over the 3 MB download limit")
    return PageStatus("failed", f"{error}: {text}"[:300])

def blocked_reason(status: int) -> str:
    """401/403/429 mean the site keeps us out: blocked, not failed."""
    if status in (401, 403, 429):
        return f"HTTP {status}"
    return ""


def is_html(content_type: str, body_start: bytes = b"") -> bool:
    """HTML by Content-Type, or by sniffing when the type is missing or generic."""
    ctype = content_type.split(";", 1)[0].strip().lower()
    if ctype in ("text/html", "application/xhtml+xml"):
        return True
    if ctype in ("", "application/octet-stream", "text/plain"):
        start = body_start[:512].lstrip().lower()
        return start.startswith((b"<!doctype html", b"<html")) or b"<body" in start
    return False


def challenge_reason(status: int, headers: Mapping[str, str], html: str) -> str:
    """Why the page is a bot-check interstitial rather than the page ("" when it is not one)."""
    lowered = {k.lower(): v.lower() for k, v in headers.items()}
    for name, value in _CHALLENGE_HEADERS:
        if lowered.get(name) == value:
            return f"challenge page ({name}: {value})"
    head = html[:20_000].lower()
    for vendor, pattern in _CHALLENGE_MARKERS:
        if pattern.search(head):
            return f"challenge page ({vendor})"
    return ""
