"""Pruning the main-content root with trafilatura's verdict.

Pure: lxml trees in and out; no Scrapy import. `extract` (markdown.py) calls `trafilatura_pick`
and then `prune` on the root `main_content` chose. trafilatura scores the root's blocks for
article text. On article-like pages (its pick has 50+ words in paragraphs of 15+ words) the
blocks it left out go: related links, bylines, share bars, comments, a headline that only
repeats the page title. Structure stays whole: a data table, a FAQ question, a list or table
with most of its items kept, and the headings above kept text. So do a list without links that
sits in kept text, and a grid of cards there (three or more boxes alike, each a heading and a line
or two; not a slider), a block with a tel: link or opening hours with the small card or table holding
it, and a badge of one to three words (a price, a duration) in a small card that keeps text: on a
page without a container trafilatura knows (utility classes, plain <div>s) it reads the paragraphs
alone, and a policy's rule lists, a treatment list, a "call us" card, a table of hours or a
service's price would go. Order and markup come from the page, not from trafilatura. Landing pages (cards, lists, calls to action, short paragraphs) are
kept whole: there trafilatura's article scoring drops what a business page is made of.

Why prune with trafilatura rather than use either alone: on the article benchmark (bench/extract.py)
the semantic root alone scores F1 ~0.84 (news <main>s carry related links and bylines), and plain
trafilatura ~0.95 but reorders and drops what a small-business page is made of (headings, badges,
price cards, quotes). The pruned root scores ~0.95 and keeps the page's own order and markup.
"""

from __future__ import annotations

import functools
import logging
import pkgutil
import re
from collections import Counter
from copy import deepcopy

import lxml.html
import trafilatura
import trafilatura.external
from justext.utils import get_stoplist, get_stoplists
from lxml import etree
from trafilatura.settings import JUSTEXT_LANGUAGES

from helppuff_crawl.text.blocks import opening_hours
from helppuff_crawl.text.faq_markup import FAQ_ATTR
from helppuff_crawl.text.html_text import INLINE_TAGS, collapse, text_length

logger = logging.getLogger(__name__)

_TOKEN = re.compile(r"\w+")
_PROSE_MIN_WORDS = 50  # trafilatura prunes pages whose pick has this many words of running prose...
_PROSE_PARAGRAPH_WORDS = 15  # ...counted in paragraphs of at least this many words
_FOUND_SHARE = 0.7  # a block is in trafilatura's pick when this share of its word trigrams is
_LINK_LIST_SHARE = 0.3  # a list or table with this share of its words in links is links (related, share, tags)
# Class/id words of lists that are not the text even without links: photo galleries (their captions),
# comment threads, author boxes.
_ASIDE_WORDS = re.compile(r"galler|slider|swiper|carousel|slideshow|comment|author|byline|caption|credit")
_CARD_CHARS = 300  # contact details keep the block holding them when it is this small (a card, a table of hours)
_HEADING_LEVEL = {f"h{n}": n for n in range(1, 7)}
_GRID_CARDS = 3  # a grid of cards has at least this many
_CARD_HEADINGS = etree.XPath(".//h2|.//h3|.//h4|.//h5|.//h6")


@functools.cache
def all_languages_stoplist() -> frozenset[str]:
    """Every language's justext stopwords, lower case: the stoplist trafilatura builds for its
    justext fallback when it is not told the page's language. trafilatura reads the words one at a
    time (~190 ms of CPU once per process); a file at a time gives the same words in a third of
    that. The same set of words (tests/test_text_pruning.py), so the same verdicts.

    A frozenset, not trafilatura's tuple: justext's classify_paragraphs looks its stoplist up in an
    lru_cache on every call, which hashes the argument; a tuple of 154,000 words is hashed anew
    each time (7 ms of CPU a page that falls back to justext), a frozenset's hash is computed once
    and kept."""
    words: set[str] = set()
    for language in get_stoplists():
        lines = (pkgutil.get_data("justext", f"stoplists/{language}.txt") or b"").splitlines()
        if lines:  # as justext's get_stoplist: a line a word, decoded, lower-cased
            words.update(b"\n".join(lines).decode("utf8").lower().split("\n"))
    return frozenset(words)


@functools.cache
def _language_stoplist(lang: str) -> frozenset[str] | None:
    """justext's stoplist for a language code ("de"), read once; None when justext has none."""
    name = JUSTEXT_LANGUAGES.get(lang)
    return frozenset(get_stoplist(name)) if name is not None and name in get_stoplists() else None


def page_stoplist(root: lxml.html.HtmlElement) -> frozenset[str]:
    """The stoplist justext reads a page with: its declared language's (<html lang>, "de-AT" as
    "de"), as trafilatura takes when it is told the page's language, when justext has one; else
    every language's. Building every language's costs ~150-250 ms of CPU in each crawl's process
    (and justext lower-cases the 154,000 words again), a third of a small site's extraction; one
    language's is a few hundred words."""
    lang = (root.getroottree().getroot().get("lang") or "").strip().lower()[:2]
    return _language_stoplist(lang) or all_languages_stoplist()


def trafilatura_pick(root: lxml.html.HtmlElement, url: str) -> str | None:
    """The text trafilatura picks under `root`, when the page reads as an article; else None."""
    # trafilatura's justext fallback reads this module global when it is not given a language
    # (and builds every language's stoplist itself when it is None): this page's, set before each
    # page (extraction runs on one thread).
    trafilatura.external.JT_STOPLIST = page_stoplist(root)
    page = lxml.html.Element("html")
    body = etree.SubElement(page, "body")
    if root.tag == "body":
        body.text = root.text
        body.extend(deepcopy(child) for child in root)
    else:
        body.append(deepcopy(root))
    try:
        document = trafilatura.bare_extraction(
            page, url=url or None, include_comments=False, include_tables=True, include_formatting=False,
            include_links=False, include_images=False, with_metadata=False, deduplicate=False,
        )
    except (ValueError, TypeError, etree.LxmlError):
        logger.debug("trafilatura failed on %s", url or "a page", exc_info=True)
        return None
    if document is None or document.body is None:
        return None
    prose = 0
    for paragraph in document.body.iter("p"):
        words = len(_TOKEN.findall(" ".join(paragraph.itertext())))
        if words >= _PROSE_PARAGRAPH_WORDS:
            prose += words
    if prose < _PROSE_MIN_WORDS:
        return None
    return " ".join(document.body.itertext())


def _own_text(el: lxml.html.HtmlElement) -> str:
    """Text of `el` itself and its inline children, without the blocks nested in it."""
    parts = [el.text or ""]
    for child in el:
        if isinstance(child.tag, str) and child.tag in INLINE_TAGS:
            parts.append(child.text_content())
        parts.append(child.tail or "")
    return " ".join(parts)


def prune(root: lxml.html.HtmlElement, picked: str, title: str) -> int:
    """Remove from `root` the blocks trafilatura left out of `picked`; return how many went.

    A block (an element with words of its own) is in the pick when most of its word trigrams
    are, each counted as often as the pick has it (a caption repeated ten times is kept as often
    as trafilatura kept it). A block of one to three words is in the pick when its words are and
    the nearest longer block beside it is.
    """
    words = _TOKEN.findall(picked.lower())
    joined = f" {' '.join(words)} "
    trigrams = Counter(zip(words, words[1:], words[2:]))
    units: list[lxml.html.HtmlElement] = []
    found: list[bool | None] = []  # None: too short to tell alone
    telling: list[lxml.html.HtmlElement] = []  # blocks of four words or more, not headings: where a list sits
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag not in INLINE_TAGS:
            own = _TOKEN.findall(_own_text(el).lower())
            if own:
                units.append(el)
                found.append(_found(own, joined, trigrams))
                if len(own) >= 4 and el.tag not in _HEADING_LEVEL:
                    telling.append(el)
    kept = {el for index, el in enumerate(units)
            if found[index] or (found[index] is None and _neighbour_found(found, index))}
    if not kept or len(kept) == len(units):
        return 0
    # Structure stays whole.
    in_pick = frozenset(kept)  # trafilatura's own verdict, before structure adds to it
    order = {el: index for index, el in enumerate(telling)}
    grids = [el for el in root.iter("div", "section", "ul", "ol") if _card_grid(el)]
    for whole in [*root.xpath(f".//table|.//ul|.//ol|.//*[@{FAQ_ATTR}='pair']"), *grids]:
        if whole in grids:
            # A grid of cards (the same kind of box, each a heading and a line or two: "02 Reports
            # Filed for You / We take care of the documentation...") is a list drawn as boxes.
            always = (_link_share(whole) < _LINK_LIST_SHARE and not _named_aside(whole, root)
                      and _beside(whole, telling, order, kept, in_pick))
            parts = [child for child in whole if isinstance(child.tag, str)]
        elif whole.tag == "div":
            question = collapse(whole[0].text_content()) if len(whole) else ""
            always = question.endswith("?")
            parts = [whole]
        elif whole.tag == "table":
            always = _link_share(whole) < _LINK_LIST_SHARE
            parts = whole.xpath(".//tr")
        else:
            always = (_link_share(whole) < _LINK_LIST_SHARE and not _named_aside(whole, root)
                      and _beside(whole, telling, order, kept, in_pick))
            parts = whole.xpath("./li")
        if always or _kept_share(whole, parts, kept) >= 0.5:
            kept.update(el for el in whole.iter() if isinstance(el.tag, str))
    # Contact details and opening hours stay, with the small card or table they are in: trafilatura
    # reads a phone number under "Call us" or a row of opening hours as furniture.
    for el in units:
        if el not in kept and _own_contact(el):
            parent = el.getparent()
            card = parent if parent is not None and parent is not root and text_length(parent) <= _CARD_CHARS else el
            kept.update(part for part in card.iter() if isinstance(part.tag, str))
    # A badge of one to three words (a price, a duration; not a link: "Read more", nor a list's
    # item: its list decides) stays in a small card that keeps text.
    for el in units:
        if (el not in kept and el.tag != "li" and len(_TOKEN.findall(_own_text(el))) < 4
                and _link_share(el) < _LINK_LIST_SHARE):
            card = _card(el, root)
            if card is not None and any(part in kept for part in card.iter()):
                kept.add(el)
    # A heading stays when its section keeps something, with the headings above it; not a
    # headline that only repeats the page title, which `Extracted.title` carries.
    path: list[tuple[int, lxml.html.HtmlElement]] = []
    for el in units:
        level = _HEADING_LEVEL.get(el.tag)
        if level is None:
            if el in kept:
                kept.update(heading for _, heading in path)
                path.clear()
            continue
        while path and path[-1][0] >= level:
            path.pop()
        if el not in kept and not (level == 1 and _repeats(el, title)):
            path.append((level, el))
    return _remove_unkept(root, kept)


def _found(words: list[str], joined: str, trigrams: Counter[tuple[str, str, str]]) -> bool | None:
    if len(words) < 4:
        return None if f" {' '.join(words)} " in joined else False
    grams = Counter(zip(words, words[1:], words[2:]))
    hits = sum(min(count, max(0, trigrams[gram])) for gram, count in grams.items())
    if hits < _FOUND_SHARE * grams.total():
        return False
    trigrams.subtract(grams)
    return True


def _neighbour_found(found: list[bool | None], index: int) -> bool:
    for step in (-1, 1):
        at = index + step
        while 0 <= at < len(found) and found[at] is None:
            at += step
        if 0 <= at < len(found) and found[at]:
            return True
    return False


def _kept_share(whole: lxml.html.HtmlElement, parts: list[lxml.html.HtmlElement],
                kept: set[lxml.html.HtmlElement]) -> float:
    """The share of `parts` (rows, items) holding a kept block."""
    if not parts:
        return 0.0
    holding = sum(1 for part in parts if any(el in kept for el in part.iter()))
    return holding / len(parts)


def _beside(whole: lxml.html.HtmlElement, telling: list[lxml.html.HtmlElement], order: dict[lxml.html.HtmlElement, int],
            kept: set[lxml.html.HtmlElement], in_pick: frozenset[lxml.html.HtmlElement]) -> bool:
    """Whether `whole` sits in kept text: the element holding it holds a block of trafilatura's
    pick, or the nearest telling block before it is kept, or the nearest one after it is in the
    pick (`telling`: the blocks of four words or more that are not headings, in document order).
    Lists come in document order, so a run of lists after kept prose (a policy's sections of
    rules) stays together."""
    parent = whole.getparent()
    if parent is not None:
        own = set(whole.iter())
        if any(el in in_pick and el not in own for el in parent.iter()):
            return True
    inside = [order[el] for el in whole.iter() if el in order]
    if not inside:
        return False
    before = telling[min(inside) - 1] if min(inside) > 0 else None
    after = telling[max(inside) + 1] if max(inside) + 1 < len(telling) else None
    return (before is not None and before in kept) or (after is not None and after in in_pick)


def _card_grid(el: lxml.html.HtmlElement) -> bool:
    """Whether `el` holds only cards, at least `_GRID_CARDS` of them: children of one tag and first
    class, each with a heading of its own and at most `_CARD_CHARS` of text."""
    children = [child for child in el if isinstance(child.tag, str)]
    if len(children) < _GRID_CARDS:
        return False
    kind = (children[0].tag, (children[0].get("class") or "").split()[:1])
    return all(
        (child.tag, (child.get("class") or "").split()[:1]) == kind
        and _CARD_HEADINGS(child) and text_length(child) <= _CARD_CHARS
        for child in children
    )


def _card(el: lxml.html.HtmlElement, root: lxml.html.HtmlElement) -> lxml.html.HtmlElement | None:
    """The largest wrapper of `el` inside `root` with at most `_CARD_CHARS` of text, if any."""
    card = None
    for wrapper in el.iterancestors():
        if wrapper is root or text_length(wrapper) > _CARD_CHARS:
            break
        card = wrapper
    return card


def _own_contact(el: lxml.html.HtmlElement) -> bool:
    """Whether the block's own links call a phone number (tel:) or its own words (`_own_text`) are
    opening hours. Not an email address nor a number in the text: on articles those are a byline's
    and a footer's."""
    links = [a for child in el if isinstance(child.tag, str) and child.tag in INLINE_TAGS
             for a in child.iter("a")]
    return any((a.get("href") or "").strip().lower().startswith("tel:") for a in links) or opening_hours(_own_text(el))


def _named_aside(whole: lxml.html.HtmlElement, root: lxml.html.HtmlElement) -> bool:
    """Whether `whole` or a wrapper of it inside `root` is named as a gallery, comments or an author box."""
    for el in (whole, *whole.iterancestors()):
        if _ASIDE_WORDS.search(f"{el.get('class') or ''} {el.get('id') or ''}".lower()):
            return True
        if el is root:
            break
    return False


def _link_share(el: lxml.html.HtmlElement) -> float:
    total = len(_TOKEN.findall(el.text_content()))
    linked = sum(len(_TOKEN.findall(a.text_content())) for a in el.iter("a"))
    return linked / total if total else 1.0


def _repeats(heading: lxml.html.HtmlElement, title: str) -> bool:
    """Whether the heading's words are the title's, or one part of it ("Headline | Site")."""
    words = " ".join(_TOKEN.findall(heading.text_content().lower()))
    return bool(words) and f" {words} " in f" {' '.join(_TOKEN.findall(title.lower()))} "


def _remove_unkept(root: lxml.html.HtmlElement, kept: set[lxml.html.HtmlElement]) -> int:
    """Drop what holds no kept block; strip the own words of wrappers that hold some."""
    alive: set[lxml.html.HtmlElement] = set()
    for el in kept:
        while el is not None and el not in alive:
            alive.add(el)
            el = el.getparent()
    removed = 0
    stack = [root]
    while stack:
        el = stack.pop()
        own_kept = el in kept
        if not own_kept and (el.text or "").strip():
            el.text = None
            removed += 1
        for child in list(el):
            inline = not isinstance(child.tag, str) or child.tag in INLINE_TAGS
            if not own_kept:
                if (child.tail or "").strip():
                    removed += 1
                child.tail = None
                if inline:
                    el.remove(child)
                    continue
            if inline:
                continue
            if child in alive:
                stack.append(child)
            else:
                removed += 1
                child.drop_tree()
    return removed
