"""Pages a site opens from its own navigation code rather than from <a href> links.

Pure: strings (or a parsel selector of a page already parsed) in, URLs out; no Scrapy import. Small
sites switch language or page from click handlers: `onclick="location.href='menu.html'"`, or an
inline script's `window.location.href = './chinese/chinese-home.html'`. A crawler that reads only
<a href> never finds those pages. `navigation_urls(code, base)` reads them from code, and only where
they are plain: a string literal assigned to `location` / `location.href` (of `window`, `document`,
`self` or `top`), or passed to `location.assign(...)` / `location.replace(...)`, that stands alone
(`'/menu.html?c=' + id` is not read; a template literal only without `${...}`). Nothing is
evaluated. The literal is resolved against the page's URL (a script file's navigation, too, goes
from the page that runs it); only http(s) URLs come out: mailto:, tel:, javascript: and fragments
do not. Whether a URL is on the site is the caller's rule (the spider admits found URLs as links).

`page_code(selector)` is the code a page holds: its inline <script>s, its on* handler attributes
and its `javascript:` hrefs. `script_sources(selector, base)` are the script files it loads.
"""

from __future__ import annotations

import logging
import re
from typing import Protocol
from urllib.parse import urljoin, urlsplit

logger = logging.getLogger(__name__)

# `location`, or `window.location` (document, self, top), not `other.location`.
_LOCATION = r"(?<![\w$.])(?:(?:window|document|self|top)\s*\.\s*)?location"
# A string literal: one quote kind, no escape and no line break inside.
_LITERAL = r"""(?P<q>['"`])(?P<url>(?:(?!(?P=q))[^\\\r\n])*)(?P=q)"""
_NAVIGATIONS = (
    # location = '...' / location.href = '...', the literal ending the expression (no "+ id" after it)
    re.compile(_LOCATION + r"(?:\s*\.\s*href)?\s*=(?!=)\s*" + _LITERAL + r"(?=\s*(?:[;,)}\]]|$))", re.MULTILINE),
    # location.assign('...') / location.replace('...')
    re.compile(_LOCATION + r"\s*\.\s*(?:assign|replace)\s*\(\s*" + _LITERAL + r"\s*\)"),
)
_WEB_SCHEMES = ("http", "https")
_MAX_CODE = 1_000_000  # characters of code read per script: a bundle past this is not a small site's nav


class _Selector(Protocol):
    def xpath(self, query: str) -> _SelectorList: ...


class _SelectorList(Protocol):
    def getall(self) -> list[str]: ...


def navigation_urls(code: str, base: str) -> list[str]:
    """Absolute http(s) URLs that `code` plainly navigates to, resolved against `base`, in order, once each."""
    code = code[:_MAX_CODE]
    matches = sorted((m for pattern in _NAVIGATIONS for m in pattern.finditer(code)), key=lambda m: m.start())
    found: dict[str, None] = {}
    for match in matches:
        literal = match.group("url").strip()
        if not literal or literal.startswith("#") or any(c.isspace() for c in literal):
            continue
        if match.group("q") == "`" and "${" in literal:
            continue
        try:
            url = urljoin(base, literal)
            parts = urlsplit(url)
        except ValueError:
            continue
        if parts.scheme.lower() not in _WEB_SCHEMES or not parts.hostname:
            continue
        found.setdefault(url.split("#", 1)[0], None)
    return list(found)


def page_code(selector: _Selector) -> list[str]:
    """The navigation code a page holds: inline scripts, on* handlers, `javascript:` hrefs."""
    code = [text for text in selector.xpath("//script[not(@src)]/text()").getall() if text.strip()]
    code.extend(selector.xpath("//@*[starts-with(name(), 'on')]").getall())
    code.extend(href.strip()[len("javascript:"):] for href in selector.xpath("//a/@href").getall()
                if href.strip().lower().startswith("javascript:"))
    return code


def script_sources(selector: _Selector, base: str) -> list[str]:
    """Absolute http(s) URLs of the script files the page loads, in order, once each."""
    found: dict[str, None] = {}
    for src in selector.xpath("//script/@src").getall():
        src = src.strip()
        if not src:
            continue
        try:
            url = urljoin(base, src)
        except ValueError:
            continue
        if urlsplit(url).scheme.lower() in _WEB_SCHEMES:
            found.setdefault(url.split("#", 1)[0], None)
    return list(found)
