"""FAQ markup as marked question/answer pairs, and the pairs that are questions.

Pure: lxml trees in and out; no Scrapy import. `clean_document` (markdown.py) calls `mark_faq`
on the <body> before controls and hidden elements go: FAQ markup (<details>/<summary>, <dl>,
accordions: an element whose class or id says accordion, faq or toggle, holding button or
heading questions and answer panels) becomes marked question/answer pairs, so hidden answer
panels count as content. A pair is an element with `FAQ_ATTR`="pair" holding a "q" and an "a"
element; `to_markdown` (markdown.py) prints it as the bold question on its own line and the answer on the next,
`prune` (pruning.py) keeps a question whole, and `faq_pairs` gives `Extracted.faq`.
"""

from __future__ import annotations

import logging
import re

import lxml.html
from lxml import etree

from helppuff_crawl.text.html_text import HIDDEN_STYLE, block_text, collapse, named

logger = logging.getLogger(__name__)

FAQ_ATTR = "data-hp-faq"
_ACCORDION_NAMES = re.compile(r"accordion|faq|toggle", re.IGNORECASE)
_FAQ_NAMES = re.compile(r"faq", re.IGNORECASE)
_QUESTION_NAMES = re.compile(r"question|title|trigger|header|heading", re.IGNORECASE)
_QUESTION_HEADINGS = ("h2", "h3", "h4", "h5", "h6")


def mark_faq(body: lxml.html.HtmlElement) -> None:
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
    for container in named(body, _ACCORDION_NAMES.search):
        if container.get(FAQ_ATTR) or any(a in done or a.get(FAQ_ATTR) for a in container.iterancestors()):
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
        if question_el.getparent() is None or question_el.xpath(f"ancestor::*[@{FAQ_ATTR}]"):
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
                and not found[0].xpath(f"ancestor-or-self::*[@{FAQ_ATTR}]"):
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
    pair.set(FAQ_ATTR, "pair")
    q = etree.SubElement(pair, "div", {FAQ_ATTR: "q"})
    q.text = question
    a = etree.SubElement(pair, "div", {FAQ_ATTR: "a"})
    a.text = lead
    for el in answer:
        a.append(el)
    for el in a.iter():
        # answer panels are hidden until clicked: content, not hidden furniture
        if isinstance(el.tag, str):
            el.attrib.pop("hidden", None)
            el.attrib.pop("aria-hidden", None)
            if HIDDEN_STYLE.search(el.get("style") or ""):
                del el.attrib["style"]


def faq_pairs(root: lxml.html.HtmlElement) -> list[tuple[str, str]]:
    """The marked pairs that are questions: ending in "?", or inside an element named faq."""
    pairs: list[tuple[str, str]] = []
    for pair in root.iter():
        if not isinstance(pair.tag, str) or pair.get(FAQ_ATTR) != "pair" or len(pair) != 2:
            continue
        question, answer = collapse(pair[0].text_content()), block_text(pair[1])
        if not question or not answer or (question, answer) in pairs:
            continue
        if question.endswith("?") or any(
            _FAQ_NAMES.search(f"{a.get('class') or ''} {a.get('id') or ''}") for a in pair.iterancestors()
        ):
            pairs.append((question, answer))
    return pairs
