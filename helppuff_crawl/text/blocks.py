"""Blocks of a page and their fingerprints: how furniture is told and dropped. Pure: no Scrapy import.

Blocks are the block-level elements inside a page's main content: sections, articles, divs,
paragraphs, lists, tables, quotes, address, details... at every depth, so a repeated strip is one
block whatever wraps it, and a repeated panel inside a page-specific section is found too. Each is
compared on its normalised text (case-folded, whitespace runs as one space, digits and punctuation
kept), so markup, whitespace and tracking attributes do not hide a repeat. Its fingerprint is the
first 16 hex digits of the SHA-1 of that text. Headings, list items and table rows are parts of
blocks, never blocks alone: a heading that several pages share ("Our services") is not furniture.

text/boilerplate.py learns which fingerprints are furniture from a sample of pages; text/markdown.py
drops them from every page (`drop_furniture`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import lxml.html

from helppuff_crawl.text.html_text import block_text

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
