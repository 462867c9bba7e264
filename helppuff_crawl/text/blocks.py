"""Blocks of a page and their fingerprints: how furniture is told and dropped. Pure: no Scrapy import.

Blocks are the block-level elements inside a page's main content: sections, articles, divs,
paragraphs, lists, tables, quotes, address, details... at every depth, so a repeated strip is one
block whatever wraps it, and a repeated panel inside a page-specific section is found too. Each is
compared on its normalised text (case-folded, whitespace runs as one space, digits and punctuation
kept), so markup, whitespace and tracking attributes do not hide a repeat. Its fingerprint is the
first 16 hex digits of the SHA-1 of that text. Headings, list items and table rows are parts of
blocks, never blocks alone: a heading that several pages share ("Our services") is not furniture.

text/boilerplate.py learns which fingerprints are furniture from a sample of pages; text/markdown.py
drops them from every page (`drop_furniture`). `carries_contact` tells a block with contact details or
opening hours (boilerplate.py keeps such a furniture block once), `opening_hours` a text that lists them
(pruning.py never prunes one).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

import lxml.html

from helppuff_crawl.text.html_text import block_text

# Contact details and hours, as they are written on pages.
_PHONE = re.compile(r"(?<![\w/.-])\+?\(?\d[\d\s().-]{6,}\d(?![\w/-])")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_STREET = re.compile(
    r"\b\d+[a-z]?(?:[/-]\d+)?\s+(?:[a-z][\w'.-]*\s+){1,4}(?:street|st|road|rd|avenue|ave|boulevard|blvd|lane|ln|"
    r"drive|dr|way|court|ct|place|pl|parade|pde|highway|hwy|crescent|cres|terrace|tce|close|square|sq|circuit|cct)\b"
    r"|\bp\.?\s?o\.?\s+box\s+\d+",
    re.IGNORECASE,
)
_DAY = (r"(?:(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day)?|wednesday|saturday|montag|dienstag|mittwoch"
        r"|donnerstag|freitag|samstag|sonntag)\b")
_TIME = r"\d{1,2}(?:[:.]\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|\d{1,2}:\d{2}"
_HOURS = re.compile(rf"{_DAY}.{{0,40}}?(?:{_TIME})|\b(?:opening|business|trading|office)\s+hours\b|\bopen\s+24/7\b"
                    r"|\b(?:öffnungszeiten|sprechzeiten)\b",
                    re.IGNORECASE | re.DOTALL)
_OPENING = re.compile(rf"{_DAY}.{{0,40}}?(?:{_TIME})\s*(?:-|–|—|to|bis)\s*(?:{_TIME})"
                      r"|\b(?:opening|business|trading|office)\s+hours\b|\b(?:öffnungszeiten|sprechzeiten)\b",
                      re.IGNORECASE | re.DOTALL)

_BLOCK_TAGS = frozenset({"section", "article", "div", "p", "ul", "ol", "dl", "table", "blockquote", "figure",
                         "address", "details", "header", "pre", "center"})


@dataclass(frozen=True)
class Block:
    tag: str  # the element's tag name
    text: str  # normalised text: case-folded, whitespace runs as one space
    fingerprint: str  # first 16 hex digits of the SHA-1 of `text`


def normalise(text: str) -> str:
    """Case-folded, whitespace runs as one space, trimmed; digits and punctuation kept."""
    return " ".join(text.casefold().split())


def fingerprint(normalised: str) -> str:
    return hashlib.sha1(normalised.encode("utf-8")).hexdigest()[:16]


def segment(root: lxml.html.HtmlElement) -> list[tuple[lxml.html.HtmlElement, Block]]:
    """Every block under `root` (not `root` itself), in document order, nested ones too."""
    return list(_iter_blocks(root))


def _iter_blocks(root: lxml.html.HtmlElement) -> Iterator[tuple[lxml.html.HtmlElement, Block]]:
    for el in root.iter(*_BLOCK_TAGS):
        if el is root:
            continue
        text = normalise(block_text(el))
        if text:
            yield el, Block(el.tag, text, fingerprint(text))


def outermost(
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


def drop_furniture(root: lxml.html.HtmlElement, drop: frozenset[str]) -> int:
    """Remove the blocks of `root` whose fingerprint is in `drop`; return how many went."""
    doomed = [el for el, _block in outermost(segment(root), drop)]
    for el in doomed:
        el.drop_tree()
    return len(doomed)


def carries_contact(el: lxml.html.HtmlElement) -> bool:
    """Whether `el` carries contact details or opening hours: a tel:/mailto: link, a phone number of
    8+ digits, an email or street address, days with times, or words for opening hours."""
    if el.xpath(".//a[starts-with(@href, 'tel:') or starts-with(@href, 'mailto:')]"):
        return True
    text = block_text(el)
    phone = any(sum(ch.isdigit() for ch in match) >= 8 for match in _PHONE.findall(text))
    return phone or bool(_EMAIL.search(text) or _STREET.search(text) or _HOURS.search(text))


def opening_hours(text: str) -> bool:
    """Whether `text` holds opening hours: a day with a range of times ("Montag 10:00 – 13:00",
    "Mon 8am - 5pm"), or words for opening hours. A day with one time is a story's dateline
    ("Monday 5:30PM", "Monday November 18, 2019 7:45 am"), not opening hours."""
    return bool(_OPENING.search(text))
