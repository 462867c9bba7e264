"""Site-wide furniture: blocks that repeat across a sample of a site's pages. Pure: no Scrapy import.

Before the crawl reads its pages, it reads a sample of five (seed step 4). A block found on more
than half of them is furniture (a call-to-action strip, a "why choose us" panel) and is dropped
from every page: `extract(html, url, drop_blocks=furniture.drop)`. A dropped block that carries
contact details (a phone number, an email address, a street address) or opening hours is kept
once, with the site facts: `Furniture.contact_blocks`.

Blocks are the block-level elements inside the main content (`markdown.main_content`): sections,
articles, divs, paragraphs, lists, tables, quotes, address, details... at every depth, so a
repeated strip is one block whatever wraps it, and a repeated panel inside a page-specific
section is found too. Each is compared on its normalised text (case-folded, whitespace runs as one
space, digits and punctuation kept), so markup, whitespace and tracking attributes do not hide a
repeat. Its fingerprint is the first 16 hex digits of the SHA-1 of that text. Headings, list
items and table rows are parts of blocks, never blocks alone: a heading that several pages share
("Our services") is not furniture.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import lxml.html

from helppuff_crawl.text.html_text import block_text, parse_html
from helppuff_crawl.text.markdown import main_content, to_markdown

logger = logging.getLogger(__name__)

_BLOCK_TAGS = frozenset({"section", "article", "div", "p", "ul", "ol", "dl", "table", "blockquote", "figure",
                         "address", "details", "header", "pre", "center"})
_MIN_SAMPLE = 3

# Contact details and hours, as they are written on pages.
_PHONE = re.compile(r"(?<![\w/.-])\+?\(?\d[\d\s().-]{6,}\d(?![\w/-])")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_STREET = re.compile(
    r"\b\d+[a-z]?(?:[/-]\d+)?\s+(?:[a-z][\w'.-]*\s+){1,4}(?:street|st|road|rd|avenue|ave|boulevard|blvd|lane|ln|"
    r"drive|dr|way|court|ct|place|pl|parade|pde|highway|hwy|crescent|cres|terrace|tce|close|square|sq|circuit|cct)\b"
    r"|\bp\.?\s?o\.?\s+box\s+\d+",
    re.IGNORECASE,
)
_DAY = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day)?\b"
_TIME = r"\d{1,2}(?:[:.]\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|\d{1,2}:\d{2}"
_HOURS = re.compile(rf"{_DAY}.{{0,40}}?(?:{_TIME})|\b(?:opening|business|trading|office)\s+hours\b|\bopen\s+24/7\b",
                    re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    tag: str  # the element's tag name
    text: str  # normalised text: case-folded, whitespace runs as one space
    fingerprint: str  # first 16 hex digits of the SHA-1 of `text`


@dataclass(frozen=True)
class Furniture:
    drop: frozenset[str]  # fingerprints of the blocks to drop from every page
    contact_blocks: tuple[str, ...]  # Markdown of dropped blocks that carry contact details or hours, each once


def normalise(text: str) -> str:
    """Case-folded, whitespace runs as one space, trimmed; digits and punctuation kept."""
    return " ".join(text.casefold().split())


def fingerprint(normalised: str) -> str:
    return hashlib.sha1(normalised.encode("utf-8")).hexdigest()[:16]


def blocks(html: str | bytes) -> list[Block]:
    """The candidate blocks inside the page's main content, in document order (nested ones too)."""
    doc = parse_html(html)
    if doc is None:
        return []
    root, _method = main_content(doc)
    return [block for _el, block in _segment(root)]


def learn_furniture(sample_htmls: Sequence[str | bytes], threshold: float = 0.5) -> Furniture:
    """The blocks on more than `threshold` of the sample pages; nothing with fewer than 3 pages."""
    if len(sample_htmls) < _MIN_SAMPLE:
        return Furniture(frozenset(), ())
    pages: list[list[tuple[lxml.html.HtmlElement, Block]]] = []
    for html in sample_htmls:
        doc = parse_html(html)
        pages.append(_segment(main_content(doc)[0]) if doc is not None else [])
    counts = Counter(fp for page in pages for fp in {block.fingerprint for _el, block in page})
    drop = frozenset(fp for fp, count in counts.items() if count > threshold * len(sample_htmls))
    contact: dict[str, str] = {}
    for page in pages:
        for el, block in _outermost(page, drop):
            if block.fingerprint not in contact and _carries_contact(el):
                contact[block.fingerprint] = to_markdown(el)
    logger.debug("Furniture: %d blocks on more than %.0f%% of %d pages, %d with contact details",
                 len(drop), threshold * 100, len(sample_htmls), len(contact))
    return Furniture(drop, tuple(text for text in contact.values() if text))


def drop_furniture(root: lxml.html.HtmlElement, drop: frozenset[str]) -> int:
    """Remove the blocks of `root` whose fingerprint is in `drop`; return how many went."""
    doomed = [el for el, _block in _outermost(_segment(root), drop)]
    for el in doomed:
        el.drop_tree()
    return len(doomed)


def _segment(root: lxml.html.HtmlElement) -> list[tuple[lxml.html.HtmlElement, Block]]:
    return list(_iter_blocks(root))


def _iter_blocks(root: lxml.html.HtmlElement) -> Iterator[tuple[lxml.html.HtmlElement, Block]]:
    for el in root.iter(*_BLOCK_TAGS):
        if el is root:
            continue
        text = normalise(block_text(el))
        if text:
            yield el, Block(el.tag, text, fingerprint(text))


def _outermost(
    page: list[tuple[lxml.html.HtmlElement, Block]], drop: frozenset[str]
) -> list[tuple[lxml.html.HtmlElement, Block]]:
    """The blocks in `drop` that are not inside another block in `drop`."""
    chosen: list[tuple[lxml.html.HtmlElement, Block]] = []
    inside: set[lxml.html.HtmlElement] = set()
    for el, block in page:  # document order: an ancestor comes before its descendants
        if block.fingerprint not in drop or any(a in inside for a in el.iterancestors()):
            continue
        chosen.append((el, block))
        inside.add(el)
    return chosen


def _carries_contact(el: lxml.html.HtmlElement) -> bool:
    if el.xpath(".//a[starts-with(@href, 'tel:') or starts-with(@href, 'mailto:')]"):
        return True
    text = block_text(el)
    phone = any(sum(ch.isdigit() for ch in match) >= 8 for match in _PHONE.findall(text))
    return phone or bool(_EMAIL.search(text) or _STREET.search(text) or _HOURS.search(text))
