"""`helppuff extract FILE_OR_URL... [--url URL] [--json]`: a page's main content as Markdown, and its facts.

Each input is a saved HTML file or an http(s) URL. A URL is fetched as the crawler fetches
(user agent "helppuff-crawler/<version> (+https://helppuff.com/crawler)", 15 s timeout, redirects
followed, at most 3 MB read). For files, `--url` gives the page's address (links resolve against
it and it decides the category); without it a file is categorised by its name and title.

Prints the Markdown of each input (an HTML comment names the input when there are several), or
with `--json` one JSON object per input per line: input, url, title, category, method, markdown,
facts and faq. A whole folder of pages is one process: pass many files. An input that cannot be
read is one line on stderr; the others still run, and the exit status is then 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from w3lib.encoding import html_to_unicode

from helppuff_crawl import __version__
from helppuff_crawl.cli import UsageError
from helppuff_crawl.text.structured_data import extract_facts
from helppuff_crawl.text.markdown import extract

logger = logging.getLogger(__name__)

USER_AGENT = f"helppuff-crawler/{__version__} (+https://helppuff.com/crawler)"
TIMEOUT_SECONDS = 15.0
MAX_BYTES = 3 * 1024 * 1024
_HTML_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "")


@dataclass(frozen=True)
class _Page:
    html: str
    url: str  # the page's address ("" when unknown)
    category_url: str  # what the category is read from


class _InputError(Exception):
    """An input that cannot be read: one line on stderr, then the next input."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "extract", help="print a page's main content as Markdown",
        description="Print the main content of saved pages or URLs as Markdown (or JSON with its facts).",
    )
    parser.add_argument("inputs", nargs="+", metavar="FILE_OR_URL", help="an HTML file or an http(s) URL")
    parser.add_argument("--url", default="", help="the page URL of FILE inputs: resolves links, decides the category")
    parser.add_argument("--json", action="store_true", help="one JSON object per input per line")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.url and not args.url.startswith(("http://", "https://")):
        raise UsageError(f"--url must be an http(s) URL, got {args.url!r}")
    from helppuff_crawl.web.categories import categorize  # imported when used: the CLI starts fast

    failed = False
    several = len(args.inputs) > 1
    with httpx.Client(timeout=TIMEOUT_SECONDS, follow_redirects=True, headers={"User-Agent": USER_AGENT}) as client:
        for name in args.inputs:
            try:
                page = _read(name, args.url, client)
            except _InputError as exc:
                print(f"helppuff extract: {name}: {exc}", file=sys.stderr)
                failed = True
                continue
            extracted = extract(page.html, page.url)
            if args.json:
                facts = extract_facts(page.html, page.url)
                faq = list(extracted.faq) + [pair for pair in facts.faq if pair not in extracted.faq]
                record: dict[str, Any] = {
                    "input": name, "url": page.url, "title": extracted.title,
                    "category": categorize(page.category_url, extracted.title), "method": extracted.method,
                    "markdown": extracted.markdown, "facts": facts.as_dict(), "faq": [list(pair) for pair in faq],
                }
                print(json.dumps(record, ensure_ascii=False))
            else:
                if several:
                    print(f"<!-- helppuff extract: {name} -->")
                print(extracted.markdown)
                if several:
                    print()
    return 2 if failed else 0


def _read(name: str, url: str, client: httpx.Client) -> _Page:
    if name.startswith(("http://", "https://")):
        return _fetch(name, client)
    path = Path(name)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise _InputError("no such file") from None
    except IsADirectoryError:
        raise _InputError("is a directory (pass the files in it)") from None
    except OSError as exc:
        raise _InputError(exc.strerror or str(exc)) from None
    html = html_to_unicode(None, data)[1]
    return _Page(html=html, url=url, category_url=url or f"file:///{path.name}")


def _fetch(url: str, client: httpx.Client) -> _Page:
    try:
        with client.stream("GET", url) as response:
            if response.status_code >= 400:
                raise _InputError(f"HTTP {response.status_code}")
            ctype = response.headers.get("content-type", "")
            if ctype.split(";")[0].strip().lower() not in _HTML_TYPES:
                raise _InputError(f"not an HTML page ({ctype})")
            body = bytearray()
            for chunk in response.iter_bytes():
                body.extend(chunk[: MAX_BYTES - len(body)])
                if len(body) >= MAX_BYTES:
                    logger.info("%s: read the first %d bytes only", url, MAX_BYTES)
                    break
            final = str(response.url)
    except httpx.HTTPError as exc:
        raise _InputError(f"{type(exc).__name__}: {exc}") from None
    html = html_to_unicode(ctype or None, bytes(body))[1]
    return _Page(html=html, url=final, category_url=final)
