"""Site-wide furniture: blocks that repeat across a sample of a site's pages. Pure: no Scrapy import.

Before the crawl reads its pages, it reads a sample of five (seed step 4). A block found on more
than half of them is furniture (a call-to-action strip, a "why choose us" panel) and is dropped
from every page: `extract(html, url, drop_blocks=furniture.drop)`. A dropped block that carries
contact details (a phone number, an email address, a street address) or opening hours is kept
once, with the site facts: `Furniture.contact_blocks`.

Blocks and their fingerprints are text/blocks.py's (the extractor drops furniture with it too):
the block-level elements inside the main content (`markdown.main_content`) at every depth, each
compared on its normalised text.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import lxml.html

from helppuff_crawl.text.blocks import Block, carries_contact, outermost, segment
from helppuff_crawl.text.html_text import parse_html
from helppuff_crawl.text.markdown import main_content, to_markdown

logger = logging.getLogger(__name__)

_MIN_SAMPLE = 3

@dataclass(frozen=True)
class Furniture:
    drop: frozenset[str]  # fingerprints of the blocks to drop from every page
    contact_blocks: tuple[str, ...]  # Markdown of dropped blocks that carry contact details or hours, each once


def blocks(html: str | bytes) -> list[Block]:
    """The candidate blocks inside the page's main content, in document order (nested ones too)."""
    doc = parse_html(html)
    if doc is None:
        return []
    root, _method = main_content(doc)
    return [block for _el, block in segment(root)]


def learn_furniture(sample_htmls: Sequence[str | bytes], threshold: float = 0.5) -> Furniture:
    """The blocks on more than `threshold` of the sample pages; nothing with fewer than 3 pages."""
    if len(sample_htmls) < _MIN_SAMPLE:
        return Furniture(frozenset(), ())
    pages: list[list[tuple[lxml.html.HtmlElement, Block]]] = []
    for html in sample_htmls:
        doc = parse_html(html)
        pages.append(segment(main_content(doc)[0]) if doc is not None else [])
    counts = Counter(fp for page in pages for fp in {block.fingerprint for _el, block in page})
    drop = frozenset(fp for fp, count in counts.items() if count > threshold * len(sample_htmls))
    contact: dict[str, str] = {}
    for page in pages:
        for el, block in outermost(page, drop):
            if block.fingerprint not in contact and carries_contact(el):
                contact[block.fingerprint] = to_markdown(el)
    logger.debug("Furniture: %d blocks on more than %.0f%% of %d pages, %d with contact details",
                 len(drop), threshold * 100, len(sample_htmls), len(contact))
    return Furniture(drop, tuple(text for text in contact.values() if text))
