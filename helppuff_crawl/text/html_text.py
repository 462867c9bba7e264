"""Text and structure helpers over lxml HTML trees, shared by the extraction modules.

Pure: no Scrapy import. `decode_html` / `parse_html` turn bytes or text into a tree (BOM or
<meta charset>, else UTF-8); `collapse`, `text_length` and `block_text` read an element's text as
a reader sees it (a space between blocks, whitespace runs as one); `named` finds elements by
class or id words; `INLINE_TAGS` and `HIDDEN_STYLE` are what markdown.py, faq_markup.py and
pruning.py agree an inline element and an inline-hidden style are.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import lxml.html
from lxml import etree
from w3lib.encoding import html_to_unicode

logger = logging.getLogger(__name__)

_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_PARSER = lxml.html.HTMLParser(remove_comments=True, remove_pis=True, collect_ids=False)
# Inline elements: their text belongs to the block around them (`block_text`, pruning.py).
INLINE_TAGS = frozenset({"a", "abbr", "b", "bdi", "bdo", "br", "cite", "code", "data", "dfn", "em", "font", "i",
                         "kbd", "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time", "u",
                         "var", "del", "ins", "strike", "tt", "big", "nobr", "wbr"})
# An inline style that hides its element.
HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_NAMES = etree.XPath(".//@class|.//@id")


def decode_html(html: str | bytes) -> str:
    """`html` as text: bytes decoded from their BOM or <meta charset>, else UTF-8 (bad bytes replaced)."""
    text = html_to_unicode(None, html)[1] if isinstance(html, bytes) else html
    return _CONTROL_CHARS.sub("", _XML_DECL.sub("", text, count=1))


def parse_html(html: str | bytes) -> lxml.html.HtmlElement | None:
    """The document tree, or None for empty or unparseable input."""
    text = decode_html(html)
    if not text.strip():
        return None
    try:
        return lxml.html.document_fromstring(text, parser=_PARSER)
    except (etree.ParserError, ValueError):
        logger.debug("Unparseable HTML (%d characters)", len(text))
        return None


def text_length(el: lxml.html.HtmlElement) -> int:
    """Characters of text in `el`, a whitespace run counted once."""
    return len(" ".join(el.text_content().split()))


def collapse(text: str) -> str:
    """`text` with whitespace runs as one space, trimmed."""
    return " ".join(text.split())


def block_text(el: lxml.html.HtmlElement) -> str:
    """Text of `el` with a space between blocks ("<p>a</p><p>b</p>" reads "a b"), collapsed."""
    parts: list[str] = []
    stack: list[tuple[lxml.html.HtmlElement, bool]] = [(el, False)]
    while stack:
        node, closing = stack.pop()
        block = isinstance(node.tag, str) and node.tag not in INLINE_TAGS
        if closing:
            if block:
                parts.append(" ")
            if node is not el and node.tail:
                parts.append(node.tail)
            continue
        if block:
            parts.append(" ")
        if node.text and isinstance(node.tag, str):
            parts.append(node.text)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(node))
    return collapse("".join(parts))


def named(body: lxml.html.HtmlElement, test: Callable[[str], object]) -> list[lxml.html.HtmlElement]:
    """Elements whose class or id passes `test`, in document order (reading attributes is cheaper than elements)."""
    found: dict[lxml.html.HtmlElement, None] = {}
    for value in _NAMES(body):
        if test(value):
            found.setdefault(value.getparent(), None)
    return list(found)
