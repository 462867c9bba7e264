"""Quick checks on a fetched page before it is learned from: challenge pages, JS-only pages.

Pure functions over status, headers and HTML; no Scrapy import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import lxml.html

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


def blocked_reason(status: int) -> str:
    """401/403/429 mean the site keeps us out: blocked, not failed."""
    if status in (401, 403, 429):
        return f"HTTP {status}"
    return ""


def text_and_scripts(html: str) -> tuple[int, int]:
    """Characters of visible text in <body>, and the number of <script> elements."""
    if not html.strip():
        return 0, 0
    try:
        doc = lxml.html.document_fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return 0, 0
    scripts = len(doc.xpath("//script"))
    for element in doc.xpath("//script|//style|//noscript|//template"):
        element.drop_tree()
    body = doc.find("body")
    text = body.text_content() if body is not None else doc.text_content()
    return len(" ".join(text.split())), scripts


def needs_rendering(html: str, min_text: int = 300, min_scripts: int = 2) -> bool:
    """`render_js: auto`: under ~min_text characters of text and several scripts."""
    chars, scripts = text_and_scripts(html)
    return chars < min_text and scripts >= min_scripts


def is_html(content_type: str, body_start: bytes = b"") -> bool:
    """HTML by Content-Type, or by sniffing when the type is missing or generic."""
    ctype = content_type.split(";", 1)[0].strip().lower()
    if ctype in ("text/html", "application/xhtml+xml"):
        return True
    if ctype in ("", "application/octet-stream", "text/plain"):
        start = body_start[:512].lstrip().lower()
        return start.startswith((b"<!doctype html", b"<html")) or b"<body" in start
    return False
