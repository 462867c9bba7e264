"""The main content of an HTML page as Markdown, with its title, description, FAQ pairs and links.

Pure: str/bytes in, `Extracted` out; no Scrapy import. `extract(html, url)` does, in order:

1. Parse (bytes are decoded from their BOM or <meta charset>, else UTF-8) and read the title,
   the meta description and every <a href> of the whole document.
2. Clean (`clean_document`). Scripts, styles, svg, iframes and media go first. Then FAQ markup
   (<details>/<summary>, <dl>, accordions) becomes marked question/answer pairs, so hidden answer
   panels count as content (faq_markup.py). Then controls, navigation, the site header
   and footer (a <header> inside <main>/<article> stays: it often holds the H1), asides, forms,
   dialogs, modals, cookie/consent/newsletter banners (by role, aria-modal, or class/id words) and
   hidden elements (hidden, aria-hidden=true, display:none) are dropped. A form, hidden or
   banner-named element holding more than half the page's text is a whole-page wrapper and stays.
   Tables used for layout are unwrapped into plain blocks.
3. Choose the root (`main_content`): the first <main>, else [role=main], else <article>, holding
   at least a quarter of the cleaned page's text (an <article> also needs a heading of its own, or
   two thirds of the text and no other headingless <article>: one box of several, an address beside
   the hours, is not the page); else the cleaned <body>. The method says which.
4. Prune the root with trafilatura's verdict (pruning.py): on article-like pages the blocks
   trafilatura left out go (related links, bylines, share bars, comments), while the page's own
   order, markup and structure stay; landing pages are kept whole. The method gains
   "+trafilatura" when something was pruned.
5. Convert with markdownify: ATX headings, "- " bullets, pipe tables, links as their words, no
   images. A FAQ pair is the bold question on its own line and the answer on the next.

The text helpers all three share (`collapse`, `block_text`, `named`, ...) are in html_text.py.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from urllib.parse import urljoin

import lxml.html
from bs4 import Tag
from lxml import etree
from markdownify import MarkdownConverter

from helppuff_crawl.text.blocks import drop_furniture
from helppuff_crawl.text.faq_markup import FAQ_ATTR, faq_pairs, mark_faq
from helppuff_crawl.text.html_text import (
    HIDDEN_STYLE,
    collapse,
    named,
    parse_html,
    text_length,
)
from helppuff_crawl.text.pruning import prune, trafilatura_pick

logger = logging.getLogger(__name__)


@dataclass
class Extracted:
    title: str  # <title>, else og:title, else the first <h1>; whitespace collapsed
    markdown: str  # trimmed, "\n" breaks, "#" ATX headings, pipe tables, "- " bullets, <= 1 blank line in a row
    description: str  # <meta name=description>, else og:description; whitespace collapsed
    method: str  # the root: main, role-main, article, body (+trafilatura when pruned), or empty
    faq: list[tuple[str, str]] = field(default_factory=list)  # (question, answer) from accordion/details/dl markup
    links: list[str] = field(default_factory=list)  # absolute <a href> of the whole page, in order, no fragment


# Never text: removed before anything else looks at the tree.
_HARD_TAGS = ("script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed", "canvas",
              "video", "audio", "map", "link", "meta", "base")
# Controls and pictures: removed once FAQ markup has been read (a question is often a <button>).
_CONTROL_TAGS = ("button", "select", "input", "textarea", "option", "label", "img", "picture")
# Furniture by tag or role: always dropped (a <header> or banner only outside the main content).
_FURNITURE_TAGS = frozenset({"nav", "aside", "footer", "menu"})
_FURNITURE_ROLES = frozenset({"navigation", "contentinfo", "complementary", "search", "menu", "menubar"})
_OVERLAY_TAGS = frozenset({"form", "dialog"})
_OVERLAY_ROLES = frozenset({"dialog", "alertdialog"})
# Verdicts of `_furniture`. FURNITURE always goes. WRAPPER (a form, dialog or hidden element) goes
# unless it holds more than half of the page's text: ASP.NET wraps whole pages in a <form>, and
# some pages hide <body> until a script shows it. BANNER (named like one) goes unless it holds
# that much text or more than `_BANNER_MAX_CHARS`: a banner is short, a "newsletter archive" is not.
_CONTENT, _FURNITURE, _WRAPPER, _BANNER = "", "furniture", "wrapper", "banner"
_BANNER_MAX_CHARS = 1500
# Class/id words of banners and overlays, at the start of a class or id part ("modal-dialog",
# "newsletterSignup", "cky-consent-bar"). A cookie is a banner only with a banner word beside it
# ("cookie-notice", "CookieBanner"): a bakery's "cookies" section is content. A state class on a
# page wrapper ("modal-open", "has-popup") names no banner.
_OVERLAY_WORDS = re.compile(
    r"(?:^|[_-])(?:consent|gdpr|onetrust|modal|popup|pop-up|newsletter|lightbox)|cookiebot|cookieyes"
    r"|cookies?[_-]?(?:banner|notice|consent|bar|law|popup|pop-up|message|alert|box|container|wrapper|modal|overlay"
    r"|info|warning|disclaimer|notification|dialog|accept|settings|preferences|policy|compliance)"
    r"|^cc-(?:window|banner)$"
)
_STATE_CLASS = re.compile(r"^(?:has|is|no|with|show|hide)-|-(?:enabled|disabled|open|opened|active|visible|shown|"
                          r"closed|hidden|loaded|ready|init|on|off)$")
_SCREEN_READER_CLASSES = frozenset({"sr-only", "screen-reader-text", "visually-hidden", "visuallyhidden",
                                    "skip-link"})
_IN_CONTENT = "ancestor::main|ancestor::article|ancestor::*[@role='main']"


# Elements `_furniture` has to look at: by tag or attribute here, by class/id in `named`.
_FURNITURE_CANDIDATES = etree.XPath(
    ".//nav|.//aside|.//footer|.//menu|.//header|.//form|.//dialog"
    "|.//*[@role or @aria-modal or @hidden or @aria-hidden or @style]"
)
_SUBSTANTIAL_SHARE = 0.25  # a semantic container is the root when it holds this share of the text
_WHOLE_ARTICLE_SHARE = 2 / 3  # ...and an <article> without a heading of its own only with this share
_HEADINGS = etree.XPath(".//h1|.//h2|.//h3|.//h4|.//h5|.//h6")


def extract(html: str | bytes, url: str = "", *, drop_blocks: frozenset[str] = frozenset()) -> Extracted:
    """Title, description, links, FAQ pairs and the main content as Markdown; see the module docstring.

    `drop_blocks` holds boilerplate fingerprints (`boilerplate.learn_furniture`): those blocks go first.
    """
    # Imported here: both modules read pages through this one.

    doc = parse_html(html)
    if doc is None:
        return Extracted(title="", markdown="", description="", method="empty")
    title = _title(doc)
    description = meta_description(doc)
    links = _links(doc, url)
    root, method = main_content(doc, drop_blocks=drop_blocks)
    picked = trafilatura_pick(root, url)
    if picked is not None and prune(root, picked, title):
        method = f"{method}+trafilatura"
    markdown = to_markdown(root)
    logger.debug("Extracted %s by %s: %d characters", url or "a page", method, len(markdown))
    return Extracted(title=title, markdown=markdown, description=description, method=method,
                     faq=faq_pairs(root), links=links)


def main_content(
    doc: lxml.html.HtmlElement, *, drop_blocks: frozenset[str] = frozenset()
) -> tuple[lxml.html.HtmlElement, str]:
    """Clean `doc` in place and return the main-content root and how it was chosen.

    The method is "main", "role-main" or "article" for a substantial semantic container, else "body".
    """
    body = clean_document(doc)
    if drop_blocks:
        drop_furniture(body, drop_blocks)
    total = text_length(body)
    for xpath, method in ((".//main", "main"), (".//*[@role='main']", "role-main"), (".//article", "article")):
        # The first substantial one: a page of stories repeats <main>/<article> for those after it.
        for candidate in body.xpath(xpath):
            size = text_length(candidate)
            if not size or size < _SUBSTANTIAL_SHARE * total:
                continue
            if method != "article" or _whole_article(candidate, size, total):
                return candidate, method
    return body, "body"


def _whole_article(article: lxml.html.HtmlElement, size: int, total: int) -> bool:
    """An <article> is the page's content when it has a heading of its own, or is the one <article>
    without a heading and holds most of the page's text.

    Small-business pages use <article> as a styled text box: a location page's address, phone and hours
    are three <article>s beside a fourth with a weather note, an about page's two stories sit in two
    sections under headings outside them, a home page's one <article> is a sentence under "Visit Our
    Store!". Any of those as the root would keep one box and lose the rest; the body keeps them all.
    A news story (its headline inside it, or most of the text) stays the root, as do teasers with headings.
    """
    if _HEADINGS(article):
        return True
    if size < _WHOLE_ARTICLE_SHARE * total:
        return False
    inside = set(article.iter("article"))
    inside.update(article.iterancestors("article"))
    return not any(other not in inside and text_length(other) and not _HEADINGS(other)
                   for other in article.getroottree().iter("article"))


def clean_document(doc: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    """Remove what is not page content (see the module docstring) and return the <body>."""
    # Imported here: faq_markup.py reads pages through this module.

    etree.strip_elements(doc, *_HARD_TAGS, with_tail=False)
    body = doc.find("body")
    if body is None:
        body = doc
    mark_faq(body)
    etree.strip_elements(body, *_CONTROL_TAGS, with_tail=False)
    keep = {body}
    for el in body.xpath(".//main|.//*[@role='main']"):
        keep.add(el)
        keep.update(el.iterancestors())
    total = text_length(body)
    doomed = []
    for el in [*_FURNITURE_CANDIDATES(body), *named(body, _overlay_name)]:
        if el in keep:
            continue
        verdict = _furniture(el)
        if verdict in (_WRAPPER, _BANNER):
            size = text_length(el)
            if size > 0.5 * total or (verdict == _BANNER and size > _BANNER_MAX_CHARS):
                continue
        if verdict:
            doomed.append(el)
    for el in doomed:
        if el.getparent() is not None:
            el.drop_tree()
    _unwrap_layout_tables(body)
    return body


# -- cleaning ------------------------------------------------------------------------------------------------


def _furniture(el: lxml.html.HtmlElement) -> str:
    """The element's verdict: content, furniture, a possible page wrapper, or a banner."""
    tag = el.tag
    role = (el.get("role") or "").strip().lower()
    if tag in _FURNITURE_TAGS or role in _FURNITURE_ROLES:
        return _FURNITURE
    if tag == "header" or role == "banner":
        return _CONTENT if el.xpath(_IN_CONTENT) else _FURNITURE
    if tag in _OVERLAY_TAGS or role in _OVERLAY_ROLES or el.get("aria-modal") == "true":
        return _WRAPPER
    if role != "tabpanel" and (  # inactive tabs are hidden, and they are content
        el.get("hidden") is not None
        or (el.get("aria-hidden") or "").strip().lower() == "true"
        or HIDDEN_STYLE.search(el.get("style") or "")
    ):
        return _WRAPPER
    if _overlay_name(el.get("class")) or _overlay_name(el.get("id")):
        return _BANNER
    return _CONTENT


def _overlay_name(names: str | None) -> bool:
    """A class/id naming a banner or overlay ("cookie-banner", "newsletterSignup"), not a state ("modal-open")."""
    if not names:
        return False
    for token in names.lower().split():
        if token in _SCREEN_READER_CLASSES:
            return True
        if not _STATE_CLASS.search(token) and _OVERLAY_WORDS.search(token):
            return True
    return False


def _unwrap_layout_tables(body: lxml.html.HtmlElement) -> None:
    """Turn tables used for page layout into plain blocks, so they do not become pipe tables."""
    for table in reversed(body.xpath(".//table")):
        own = [el for el in table.iter("thead", "tbody", "tfoot", "tr", "td", "th", "caption")
               if next(el.iterancestors("table"), None) is table]
        rows = [el for el in own if el.tag == "tr"]
        cells = [el for el in own if el.tag in ("td", "th")]
        layout = (
            not rows
            or all(len([c for c in row if c.tag in ("td", "th")]) <= 1 for row in rows)
            or bool(table.xpath(".//table|.//h1|.//h2|.//h3|.//h4|.//h5|.//h6|.//ul|.//ol|.//dl|.//blockquote"))
            or any(len(cell.xpath("./p|./div")) > 1 or text_length(cell) > 400 for cell in cells)
        )
        if layout:
            for el in [table, *own]:
                el.tag = "div"


# -- Markdown ------------------------------------------------------------------------------------------------


_SEPARATOR_LINE = re.compile(r"^\|(?: --- \|)+\n", re.MULTILINE)


class _Tag(Tag):
    """bs4's Tag, its `find_parent(name)` a plain walk up the parents. markdownify asks every tag
    whether a <pre> is above it, and bs4's general search (a filter, a result set, each parent
    matched against it) cost about a fifth of the whole conversion; the answer is the same."""

    def find_parent(self, name=None, attrs=None, **kwargs):  # type: ignore[no-untyped-def]
        if not isinstance(name, str) or attrs or kwargs:
            return super().find_parent(name, attrs, **kwargs)
        parent = self.parent
        while parent is not None:
            if parent.name == name:
                return parent
            parent = parent.parent
        return None


class _Converter(MarkdownConverter):
    """markdownify with the project's conventions (see `Extracted.markdown`)."""

    def __init__(self) -> None:
        super().__init__(heading_style="atx", bullets="-", escape_asterisks=False, escape_underscores=False,
                         bs4_options={"features": "lxml", "element_classes": {Tag: _Tag}},
                         table_infer_header=True, strip_document="strip")

    def convert_a(self, el, text, parent_tags):  # type: ignore[no-untyped-def]
        return text  # `Extracted.links` has the hrefs; the Markdown keeps the words

    def convert_img(self, el, text, parent_tags):  # type: ignore[no-untyped-def]
        return ""

    def convert_br(self, el, text, parent_tags):  # type: ignore[no-untyped-def]
        return " " if "_inline" in parent_tags else "\n"

    def convert_td(self, el, text, parent_tags):  # type: ignore[no-untyped-def]
        return super().convert_td(el, text.replace("|", "\\|"), parent_tags)

    def convert_th(self, el, text, parent_tags):  # type: ignore[no-untyped-def]
        return super().convert_th(el, text.replace("|", "\\|"), parent_tags)

    def convert_tr(self, el, text, parent_tags):  # type: ignore[no-untyped-def]
        row = super().convert_tr(el, text, parent_tags)
        table = el.find_parent("table")
        if table is not None and table.find("tr") is not el:
            # Only a table's first row heads it. markdownify also underlines an all-<th> row that
            # opens a <tbody> (a section label such as "Preventive"); a second separator line would
            # be read as a data row of dashes.
            row = _SEPARATOR_LINE.sub("", row)
        return row

    def convert_div(self, el, text, parent_tags):  # type: ignore[no-untyped-def]
        # Imported here: faq_markup.py reads pages through this module.

        role = el.get(FAQ_ATTR)
        if role == "q" and "_inline" not in parent_tags:
            return f"\n\n**{collapse(text)}**\n"
        if role == "a" and "_inline" not in parent_tags:
            return f"{text.strip()}\n\n"
        return super().convert_div(el, text, parent_tags)


_CONVERTER = _Converter()
_BLANK_RUNS = re.compile(r"\n{3,}")
_LINE_END_SPACE = re.compile(r"[ \t]+\n")


# Inline elements a layout sets side by side as cells of a row (flex or grid), with no space between
# them in the markup: <div class="hours-row"><span>Montag</span><span>10:00 – 13:00</span></div>.
_INLINE_TAGS = frozenset(
    "a abbr b bdi bdo cite code data dfn em i kbd label mark q s samp small span strong sub sup time u var".split()
)


def space_glued_cells(root: lxml.html.HtmlElement) -> int:
    """Put a space between two inline elements that an element holds side by side with no text of
    its own around them, where the join would glue two words into one ("Montag10:00",
    "Freitagnach Vereinbarung"): on a page the row's CSS sets them apart, and in text they are two
    words, for a reader, for keyword search and for the relevance model's word share. A word split
    inside running text (<p><b>un</b>believable</p>) has text of its parent beside it, and a letter
    of its own (a drop cap, a title animated letter by letter) is not a word: both are left alone. Changes `root` in place; the number of spaces put in."""
    put = 0
    for el in root.iter():
        if not isinstance(el.tag, str) or len(el) < 2 or (el.text and el.text.strip()):
            continue
        children = list(el)
        if any(child.tail and child.tail.strip() for child in children):
            continue
        for left, right in zip(children, children[1:]):
            if left.tail or left.tag not in _INLINE_TAGS or right.tag not in _INLINE_TAGS:
                continue
            before, after = left.text_content().strip(), right.text_content().strip()
            if len(before) > 1 and after and before[-1].isalnum() and after[0].isalnum():
                left.tail = " "
                put += 1
    return put


def to_markdown(root: lxml.html.HtmlElement) -> str:
    """`root`'s content as Markdown with the project's conventions (see `Extracted.markdown`)."""
    space_glued_cells(root)
    markup = lxml.html.tostring(root, encoding="unicode", with_tail=False)
    text = _CONVERTER.convert(markup).replace("\r", "").replace("\xa0", " ")
    return _BLANK_RUNS.sub("\n\n", _LINE_END_SPACE.sub("\n", text)).strip()


# -- metadata ------------------------------------------------------------------------------------------------


def _title(doc: lxml.html.HtmlElement) -> str:
    for xpath in ("//head/title", "//meta[@property='og:title']/@content", "//meta[@name='og:title']/@content", "//h1"):
        for found in doc.xpath(xpath):
            text = collapse(found if isinstance(found, str) else found.text_content())
            if text:
                return text
    return ""


def meta_description(doc: lxml.html.HtmlElement) -> str:
    """<meta name=description>, else og:description."""
    for wanted in ("description", "og:description"):
        for meta in doc.iter("meta"):
            name = (meta.get("name") or meta.get("property") or "").strip().lower()
            text = collapse(meta.get("content") or "") if name == wanted else ""
            if text:
                return text
    return ""


_NOT_PAGES = ("javascript:", "mailto:", "tel:", "sms:", "data:", "callto:", "whatsapp:", "fax:", "#")


def _links(doc: lxml.html.HtmlElement, url: str) -> list[str]:
    """Absolute <a href>s in document order, without fragments, each once."""
    base = url
    for href in doc.xpath("//base/@href"):
        base = urljoin(url, href.strip())
        break
    seen: dict[str, None] = {}
    for href in doc.xpath("//a/@href"):
        href = href.strip()
        if not href or href.lower().startswith(_NOT_PAGES):
            continue
        if not href.startswith(("http://", "https://")):
            try:
                href = urljoin(base, href)
            except ValueError:
                continue
        href = href.split("#", 1)[0]
        if href:
            seen.setdefault(href, None)
    return list(seen)
