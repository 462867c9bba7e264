"""The main content of an HTML page as Markdown, with its title, description, FAQ pairs and links.

Pure: str/bytes in, `Extracted` out; no Scrapy import. `extract(html, url)` does, in order:

1. Parse (bytes are decoded from their BOM or <meta charset>, else UTF-8) and read the title,
   the meta description and every <a href> of the whole document.
2. Clean (`clean_document`). Scripts, styles, svg, iframes and media go first. Then FAQ markup
   (<details>/<summary>, <dl>, accordions: an element whose class or id says accordion, faq or
   toggle, holding button or heading questions and answer panels) becomes marked question/answer
   pairs, so hidden answer panels count as content. Then controls, navigation, the site header
   and footer (a <header> inside <main>/<article> stays: it often holds the H1), asides, forms,
   dialogs, modals, cookie/consent/newsletter banners (by role, aria-modal, or class/id words) and
   hidden elements (hidden, aria-hidden=true, display:none) are dropped. A form, hidden or
   banner-named element holding more than half the page's text is a whole-page wrapper and stays.
   Tables used for layout are unwrapped into plain blocks.
3. Choose the root (`main_content`): the first <main>, else [role=main], else <article>, holding
   at least a quarter of the cleaned page's text; else the cleaned <body>. The method says which.
4. Prune the root with trafilatura's verdict (`_prune`). trafilatura scores the root's blocks for
   article text. On article-like pages (its pick has 50+ words in paragraphs of 15+ words) the
   blocks it left out go: related links, bylines, share bars, comments, a headline that only
   repeats the page title. Structure stays whole: a data table, a FAQ question, a list or table
   with most of its items kept, and the headings above kept text. Order and markup come from the
   page, not from trafilatura. Landing pages (cards, lists, calls to action, short paragraphs) are
   kept whole: there trafilatura's article scoring drops what a business page is made of.
   The method gains "+trafilatura" when something was pruned.
5. Convert with markdownify: ATX headings, "- " bullets, pipe tables, links as their words, no
   images. A FAQ pair is the bold question on its own line and the answer on the next.

Why prune with trafilatura rather than use either alone: on the article benchmark (bench/extract.py)
the semantic root alone scores F1 ~0.84 (news <main>s carry related links and bylines), and plain
trafilatura ~0.95 but reorders and drops what a small-business page is made of (headings, badges,
price cards, quotes). The pruned root scores ~0.95 and keeps the page's own order and markup.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable
from copy import deepcopy
from dataclasses import dataclass, field
from urllib.parse import urljoin

import lxml.html
import trafilatura
from lxml import etree
from markdownify import MarkdownConverter
from w3lib.encoding import html_to_unicode

logger = logging.getLogger(__name__)


@dataclass
class Extracted:
    title: str  # <title>, else og:title, else the first <h1>; whitespace collapsed
    markdown: str  # trimmed, "\n" breaks, "#" ATX headings, pipe tables, "- " bullets, <= 1 blank line in a row
    description: str  # <meta name=description>, else og:description; whitespace collapsed
    method: str  # the root: main, role-main, article, body (+trafilatura when pruned), or empty
    faq: list[tuple[str, str]] = field(default_factory=list)  # (question, answer) from accordion/details/dl markup
    links: list[str] = field(default_factory=list)  # absolute <a href> of the whole page, in order, no fragment


_TOKEN = re.compile(r"\w+")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_PARSER = lxml.html.HTMLParser(remove_comments=True, remove_pis=True, collect_ids=False)

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
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_IN_CONTENT = "ancestor::main|ancestor::article|ancestor::*[@role='main']"


# Elements `_furniture` has to look at: by tag or attribute here, by class/id in `_named`.
_FURNITURE_CANDIDATES = etree.XPath(
    ".//nav|.//aside|.//footer|.//menu|.//header|.//form|.//dialog"
    "|.//*[@role or @aria-modal or @hidden or @aria-hidden or @style]"
)
_NAMES = etree.XPath(".//@class|.//@id")

_SUBSTANTIAL_SHARE = 0.25  # a semantic container is the root when it holds this share of the text
_PROSE_MIN_WORDS = 50  # trafilatura prunes pages whose pick has this many words of running prose...
_PROSE_PARAGRAPH_WORDS = 15  # ...counted in paragraphs of at least this many words
_FOUND_SHARE = 0.7  # a block is in trafilatura's pick when this share of its word trigrams is


def extract(html: str | bytes, url: str = "", *, drop_blocks: frozenset[str] = frozenset()) -> Extracted:
    """Title, description, links, FAQ pairs and the main content as Markdown; see the module docstring.

    `drop_blocks` holds boilerplate fingerprints (`boilerplate.learn_furniture`): those blocks go first.
    """
    doc = parse_html(html)
    if doc is None:
        return Extracted(title="", markdown="", description="", method="empty")
    title = _title(doc)
    description = meta_description(doc)
    links = _links(doc, url)
    root, method = main_content(doc, drop_blocks=drop_blocks)
    picked = _trafilatura_pick(root, url)
    if picked is not None and _prune(root, picked, title):
        method = f"{method}+trafilatura"
    markdown = to_markdown(root)
    logger.debug("Extracted %s by %s: %d characters", url or "a page", method, len(markdown))
    return Extracted(title=title, markdown=markdown, description=description, method=method,
                     faq=_faq_pairs(root), links=links)


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


def main_content(
    doc: lxml.html.HtmlElement, *, drop_blocks: frozenset[str] = frozenset()
) -> tuple[lxml.html.HtmlElement, str]:
    """Clean `doc` in place and return the main-content root and how it was chosen.

    The method is "main", "role-main" or "article" for a substantial semantic container, else "body".
    """
    body = clean_document(doc)
    if drop_blocks:
        # Imported here: boilerplate.py reads pages through this module.
        from helppuff_crawl.text.boilerplate import drop_furniture

        drop_furniture(body, drop_blocks)
    total = text_length(body)
    for xpath, method in ((".//main", "main"), (".//*[@role='main']", "role-main"), (".//article", "article")):
        # The first substantial one: a page of stories repeats <main>/<article> for those after it.
        for candidate in body.xpath(xpath):
            size = text_length(candidate)
            if size and size >= _SUBSTANTIAL_SHARE * total:
                return candidate, method
    return body, "body"


def clean_document(doc: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    """Remove what is not page content (see the module docstring) and return the <body>."""
    etree.strip_elements(doc, *_HARD_TAGS, with_tail=False)
    body = doc.find("body")
    if body is None:
        body = doc
    _mark_faq(body)
    etree.strip_elements(body, *_CONTROL_TAGS, with_tail=False)
    keep = {body}
    for el in body.xpath(".//main|.//*[@role='main']"):
        keep.add(el)
        keep.update(el.iterancestors())
    total = text_length(body)
    doomed = []
    for el in [*_FURNITURE_CANDIDATES(body), *_named(body, _overlay_name)]:
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
        block = isinstance(node.tag, str) and node.tag not in _INLINE_TAGS
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
        or _HIDDEN_STYLE.search(el.get("style") or "")
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


def _named(body: lxml.html.HtmlElement, test: Callable[[str], object]) -> list[lxml.html.HtmlElement]:
    """Elements whose class or id passes `test`, in document order (reading attributes is cheaper than elements)."""
    found: dict[lxml.html.HtmlElement, None] = {}
    for value in _NAMES(body):
        if test(value):
            found.setdefault(value.getparent(), None)
    return list(found)


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


# -- FAQ markup ----------------------------------------------------------------------------------------------

_FAQ_ATTR = "data-hp-faq"
_ACCORDION_NAMES = re.compile(r"accordion|faq|toggle", re.IGNORECASE)
_FAQ_NAMES = re.compile(r"faq", re.IGNORECASE)
_QUESTION_NAMES = re.compile(r"question|title|trigger|header|heading", re.IGNORECASE)
_QUESTION_HEADINGS = ("h2", "h3", "h4", "h5", "h6")


def _mark_faq(body: lxml.html.HtmlElement) -> None:
    """Rewrite <details>, <dl> and accordion items as marked question/answer pairs.

    A pair is <div data-hp-faq="pair"><div data-hp-faq="q">question</div><div data-hp-faq="a">
    answer</div></div>; `to_markdown` prints it as a bold question line with the answer below.
    """
    for details in list(body.iter("details")):
        summary = details.find("summary")
        question = collapse(summary.text_content()) if summary is not None else ""
        if not question:
            continue
        summary.drop_tree()
        lead, details.text = details.text, None
        _make_pair(details, question, list(details), lead)
    for dl in list(body.iter("dl")):
        _mark_definition_list(dl)
    done: set[lxml.html.HtmlElement] = set()
    for container in _named(body, _ACCORDION_NAMES.search):
        if container.get(_FAQ_ATTR) or any(a in done or a.get(_FAQ_ATTR) for a in container.iterancestors()):
            continue
        done.add(container)
        _mark_accordion(container)


def _mark_definition_list(dl: lxml.html.HtmlElement) -> None:
    items = []
    for el in dl:
        if el.tag == "div":  # <dl><div><dt/><dd/></div></dl>, HTML's grouping of a term
            items.extend(child for child in el if isinstance(child.tag, str))
        elif isinstance(el.tag, str):
            items.append(el)
    pairs: list[tuple[str, list[lxml.html.HtmlElement]]] = []
    for el in items:
        if el.tag == "dt":
            pairs.append((collapse(el.text_content()), []))
        elif el.tag == "dd" and pairs:
            pairs[-1][1].append(el)
    if not pairs or not all(question and answers for question, answers in pairs):
        return
    wrapper = lxml.html.Element("div")
    for question, answers in pairs:
        for dd in answers:
            dd.tag = "div"
        _make_pair(etree.SubElement(wrapper, "div"), question, answers, None)
    wrapper.tail = dl.tail
    dl.getparent().replace(dl, wrapper)


def _mark_accordion(container: lxml.html.HtmlElement) -> None:
    """Pair each question in an accordion with its answer panel.

    Questions are the explicit triggers (button, summary, role=button, aria-expanded,
    aria-controls) when there are any, else elements whose class names a question or title,
    else h2-h6 headings. The answer is the element the trigger's aria-controls names, else the
    siblings after the question up to the next question.
    """
    triggers = [el for el in container.iter() if isinstance(el.tag, str) and el is not container and (
        el.tag in ("button", "summary") or el.get("role") == "button"
        or el.get("aria-expanded") is not None or el.get("aria-controls"))]
    if not triggers:
        triggers = [el for el in container.iter() if isinstance(el.tag, str) and el is not container
                    and _QUESTION_NAMES.search(el.get("class") or "") and not el.xpath(".//p|.//div|.//ul")]
    if not triggers:
        triggers = [el for el in container.iter(*_QUESTION_HEADINGS) if el is not container]
    questions = []
    for trigger in triggers:
        question_el = trigger
        # climb out of wrappers that hold nothing but the trigger (<h3><button>Q</button></h3>)
        while (parent := question_el.getparent()) is not None and parent is not container \
                and len(parent) == 1 and not (parent.text or "").strip() and not (question_el.tail or "").strip():
            question_el = parent
        questions.append((trigger, question_el))
    starts = {question_el for _, question_el in questions}
    for trigger, question_el in questions:
        if question_el.getparent() is None or question_el.xpath(f"ancestor::*[@{_FAQ_ATTR}]"):
            continue
        question = collapse(trigger.text_content())
        answer = _answer_for(trigger, question_el, container, starts)
        if not question or len(question) > 300 or not answer:
            continue
        if not collapse(" ".join(el.text_content() for el in answer)):
            continue
        if not question.endswith("?") and any(el.xpath("boolean(self::nav|.//nav) or count(.//a[@href]) > 3")
                                              for el in answer):
            continue  # a menu toggle, not a question
        pair = lxml.html.Element("div")
        question_el.addprevious(pair)
        pair.tail = question_el.tail
        question_el.getparent().remove(question_el)
        _make_pair(pair, question, answer, None)


def _answer_for(
    trigger: lxml.html.HtmlElement, question_el: lxml.html.HtmlElement,
    container: lxml.html.HtmlElement, starts: set[lxml.html.HtmlElement],
) -> list[lxml.html.HtmlElement]:
    controls = (trigger.get("aria-controls") or "").split()
    if controls:
        found = container.xpath(".//*[@id=$id]", id=controls[0])
        if found and found[0] is not question_el and question_el not in found[0].iterancestors() \
                and not found[0].xpath(f"ancestor-or-self::*[@{_FAQ_ATTR}]"):
            return [found[0]]
    answer = []
    sibling = question_el.getnext()
    while sibling is not None and sibling not in starts and not any(el in starts for el in sibling.iter()):
        if isinstance(sibling.tag, str):
            answer.append(sibling)
        sibling = sibling.getnext()
    return answer


def _make_pair(
    pair: lxml.html.HtmlElement, question: str, answer: list[lxml.html.HtmlElement], lead: str | None
) -> None:
    """Make `pair` a marked FAQ pair holding `question` and the `answer` elements (moved in)."""
    tail = pair.tail
    for child in list(pair):
        if child not in answer:
            pair.remove(child)
    pair.attrib.clear()
    pair.tag, pair.text, pair.tail = "div", None, tail
    pair.set(_FAQ_ATTR, "pair")
    q = etree.SubElement(pair, "div", {_FAQ_ATTR: "q"})
    q.text = question
    a = etree.SubElement(pair, "div", {_FAQ_ATTR: "a"})
    a.text = lead
    for el in answer:
        a.append(el)
    for el in a.iter():
        # answer panels are hidden until clicked: content, not hidden furniture
        if isinstance(el.tag, str):
            el.attrib.pop("hidden", None)
            el.attrib.pop("aria-hidden", None)
            if _HIDDEN_STYLE.search(el.get("style") or ""):
                del el.attrib["style"]


def _faq_pairs(root: lxml.html.HtmlElement) -> list[tuple[str, str]]:
    """The marked pairs that are questions: ending in "?", or inside an element named faq."""
    pairs: list[tuple[str, str]] = []
    for pair in root.iter():
        if not isinstance(pair.tag, str) or pair.get(_FAQ_ATTR) != "pair" or len(pair) != 2:
            continue
        question, answer = collapse(pair[0].text_content()), block_text(pair[1])
        if not question or not answer or (question, answer) in pairs:
            continue
        if question.endswith("?") or any(
            _FAQ_NAMES.search(f"{a.get('class') or ''} {a.get('id') or ''}") for a in pair.iterancestors()
        ):
            pairs.append((question, answer))
    return pairs


# -- pruning with trafilatura's verdict ----------------------------------------------------------------------

_INLINE_TAGS = frozenset({"a", "abbr", "b", "bdi", "bdo", "br", "cite", "code", "data", "dfn", "em", "font", "i",
                          "kbd", "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time", "u",
                          "var", "del", "ins", "strike", "tt", "big", "nobr", "wbr"})
_HEADING_LEVEL = {f"h{n}": n for n in range(1, 7)}


def _trafilatura_pick(root: lxml.html.HtmlElement, url: str) -> str | None:
    """The text trafilatura picks under `root`, when the page reads as an article; else None."""
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
        if isinstance(child.tag, str) and child.tag in _INLINE_TAGS:
            parts.append(child.text_content())
        parts.append(child.tail or "")
    return " ".join(parts)


def _prune(root: lxml.html.HtmlElement, picked: str, title: str) -> int:
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
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag not in _INLINE_TAGS:
            own = _TOKEN.findall(_own_text(el).lower())
            if own:
                units.append(el)
                found.append(_found(own, joined, trigrams))
    kept = {el for index, el in enumerate(units)
            if found[index] or (found[index] is None and _neighbour_found(found, index))}
    if not kept or len(kept) == len(units):
        return 0
    # Structure stays whole.
    for whole in root.xpath(f".//table|.//ul|.//ol|.//*[@{_FAQ_ATTR}='pair']"):
        if whole.tag == "div":
            question = collapse(whole[0].text_content()) if len(whole) else ""
            always = question.endswith("?")
            parts = [whole]
        else:
            always = whole.tag == "table" and _link_share(whole) < 0.3
            parts = whole.xpath(".//tr" if whole.tag == "table" else "./li")
        if always or _kept_share(whole, parts, kept) >= 0.5:
            kept.update(el for el in whole.iter() if isinstance(el.tag, str))
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
            inline = not isinstance(child.tag, str) or child.tag in _INLINE_TAGS
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


# -- Markdown ------------------------------------------------------------------------------------------------


_SEPARATOR_LINE = re.compile(r"^\|(?: --- \|)+\n", re.MULTILINE)


class _Converter(MarkdownConverter):
    """markdownify with the project's conventions (see `Extracted.markdown`)."""

    def __init__(self) -> None:
        super().__init__(heading_style="atx", bullets="-", escape_asterisks=False, escape_underscores=False,
                         bs4_options="lxml", table_infer_header=True, strip_document="strip")

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
        role = el.get(_FAQ_ATTR)
        if role == "q" and "_inline" not in parent_tags:
            return f"\n\n**{collapse(text)}**\n"
        if role == "a" and "_inline" not in parent_tags:
            return f"{text.strip()}\n\n"
        return super().convert_div(el, text, parent_tags)


_CONVERTER = _Converter()
_BLANK_RUNS = re.compile(r"\n{3,}")
_LINE_END_SPACE = re.compile(r"[ \t]+\n")


def to_markdown(root: lxml.html.HtmlElement) -> str:
    """`root`'s content as Markdown with the project's conventions (see `Extracted.markdown`)."""
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
