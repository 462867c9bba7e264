"""Contact details written in a page: its tel: and mailto: links, and its own words. Pure: no Scrapy import.

`contact_links(doc)` gives the numbers and addresses of a page's tel: and mailto: links
(structured_data.py keeps them with the page's facts).

When structured data leaves gaps (no tel: link, hours written in a footer or a paragraph), the
contact, home and location pages' text fills them (kb/facts_detect.py). Two readers give candidates:

- a chat model (kb/facts_detect.py asks it), whose answers are untrusted;
- `read_rules(pages)`, the rule-based reader here: opening-hours lines (hours.py's `read_hours`),
  phone numbers (Google's libphonenumber rules through `phonenumbers`: what a number looks like
  differs by country, and that library knows them all; a number labelled fax is left out), email
  addresses, and a street address (`read_address`: a line with a house number and a street,
  "41 Beach Road", "Hauptstraße 94", "12 rue de la Paix", "Via Roma 12", or after an
  "Address:"/"Anschrift" label, with the next line joined when it gives the postcode and town).

Either reader's candidates then go through fact_checks.py, and one that fails is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import lxml.html
import phonenumbers

from helppuff_crawl.text.hours import read_hours
from helppuff_crawl.text.html_text import parse_html

FACT_KEYS = ("telephone", "email", "hours", "address")  # what the pages' words can fill
MAX_ADDRESS_CHARS = 200


@dataclass(frozen=True)
class PageText:
    """One page's words: its URL, category and text (Markdown, description, footer...)."""

    url: str
    category: str
    text: str


@dataclass
class Candidate:
    """A fact a reader says a page gives; `reason` is why a check dropped it ("" when it passed)."""

    key: str  # one of FACT_KEYS
    value: Any  # text, or the hours table {day: [[opens, closes]]}
    source_url: str = ""
    reader: str = ""  # "rules" or "model <id>"
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        data = {"key": self.key, "value": self.value, "source_url": self.source_url, "reader": self.reader}
        if self.reason:
            data["reason"] = self.reason
        return data


# -- the page's words outside its main content -------------------------------------------------------------

_FOOTERS = "//footer|//*[@role='contentinfo']"
_BLOCKS = frozenset({"p", "div", "li", "address", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "tr", "ul",
                     "ol", "dl", "dt", "dd", "section", "table", "br", "footer", "header"})
_SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "nav", "form", "button"})


def footer_text(html: str | bytes) -> str:
    """The text of the page's footers (<footer>, role=contentinfo), a line per block or line break.

    The extracted Markdown leaves the site footer out (text/markdown.py), but it is where many small
    businesses write their hours and number."""
    doc = parse_html(html)
    if doc is None:
        return ""
    found = doc.xpath(_FOOTERS)
    inner = {id(el) for outer in found for el in outer.iterdescendants() if el in found}
    parts: list[str] = []
    for footer in found:
        if id(footer) not in inner:
            _text_lines(footer, parts)
            parts.append("\n")
    lines = (" ".join(line.split()) for line in "".join(parts).splitlines())
    return "\n".join(dict.fromkeys(line for line in lines if line))


def _text_lines(el: lxml.html.HtmlElement, parts: list[str]) -> None:
    tag = el.tag if isinstance(el.tag, str) else ""
    if tag in _SKIPPED:
        return
    block = tag in _BLOCKS
    if block:
        parts.append("\n")
    parts.append(el.text or "")
    for child in el:
        _text_lines(child, parts)
        parts.append(child.tail or "")
    if block:
        parts.append("\n")


# -- tel: and mailto: links --------------------------------------------------------------------------------


def contact_links(doc: lxml.html.HtmlElement) -> tuple[list[str], list[str]]:
    """The page's tel: numbers (digits and a leading "+") and mailto: addresses (the address only,
    lower-cased), each once, in order."""
    phones: list[str] = []
    emails: list[str] = []
    for href in doc.xpath("//a/@href"):
        href = unquote(href.strip())
        scheme, _, rest = href.partition(":")
        scheme = scheme.lower()
        if scheme == "tel":
            digits = re.sub(r"[^\d+]", "", rest.split(";")[0])
            number = ("+" if digits.startswith("+") else "") + digits.replace("+", "")
            if sum(ch.isdigit() for ch in number) >= 3 and number not in phones:
                phones.append(number)
        elif scheme == "mailto":
            for address in rest.split("?")[0].split(","):
                address = address.strip().lower()
                if "@" in address and address not in emails:
                    emails.append(address)
    return phones, emails


# -- phones and emails -------------------------------------------------------------------------------------

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_FAX = re.compile(r"(?i)\b(?:fax|telefax)\b[\s.:]*$")


def read_phones(text: str, regions: Sequence[str] = ("AU",)) -> list[str]:
    """Phone numbers written in the text, as written, in order (fax numbers left out).

    Each region in turn (the site's country first) until one finds any: a number written without
    its country code is read by that country's rules."""
    clean = text.replace("·", " ").replace("\u00a0", " ")
    for region in dict.fromkeys(r.upper() for r in regions if r):
        found: list[str] = []
        for match in phonenumbers.PhoneNumberMatcher(clean, region):
            if _FAX.search(clean[max(0, match.start - 12):match.start]):
                continue
            written = text[match.start:match.end] if len(text) == len(clean) else match.raw_string
            if written not in found:
                found.append(written)
        if found:
            return found
    return []


# A street's kind, after its name ("Roosevelt Ave", "Beach Road") or as the end of one word
# ("Hauptstraße", "Lindenweg"), or before it ("rue de la Paix", "Via Roma", "Calle Mayor").
_STREET_AFTER = (
    r"st|street|rd|road|ave|av|avenue|blvd|boulevard|dr|drive|ln|lane|way|hwy|highway|pde|parade|cres|"
    r"crescent|ct|court|pl|place|tce|terrace|cl|close|cct|circuit|esp|esplanade|sq|square|pkwy|parkway"
)
_STREET_END = r"stra(?:ß|ss)e|str\.?|weg|gasse|platz|allee|ring|damm|ufer|chaussee|straat|laan|plein|gracht|kade|dijk"
_STREET_BEFORE = r"rue|avenue|boulevard|chemin|place|calle|avenida|plaza|paseo|via|viale|piazza|corso|rua|travessa"
_NUMBER = r"\d+[a-zA-Z]?(?:[-/]\d+[a-zA-Z]?)?"
_NAME = r"[^\W\d_][\w'.-]*"
# Each shape, with the words that name the street in group "name" (they must be capitalised).
_STREETS = [re.compile(pattern) for pattern in (
    rf"(?<![\w-]){_NUMBER},?\s+(?P<name>(?:{_NAME}\s+){{1,4}})(?i:{_STREET_AFTER})(?![\w])",  # 41 Beach Road
    rf"(?<![\w-])(?P<name>{_NAME}?)(?i:{_STREET_END})\s+{_NUMBER}(?![\w])",  # Hauptstraße 94
    rf"(?<![\w-])(?P<name>(?:{_NAME}\s+){{1,3}})(?i:{_STREET_AFTER}|{_STREET_END})\s+{_NUMBER}(?![\w])",  # Lange Str. 5
    rf"(?<![\w-]){_NUMBER},?\s+(?i:{_STREET_BEFORE})\s+(?P<name>(?:{_NAME}\s*){{1,4}})",  # 12 rue de la Paix
    rf"(?<![\w-])(?i:{_STREET_BEFORE})\s+(?P<name>(?:{_NAME}\s+){{1,4}}){_NUMBER}(?![\w])",  # Via Roma 12
)]
_PARTICLES = frozenset({"de", "la", "le", "les", "du", "des", "del", "della", "di", "van", "der", "den", "von", "am",
                        "an", "im", "dos", "da", "do", "y", "e"})
# The line after a street that gives its town: a postcode and a name ("35716 Ewersbach",
# "Sandringham VIC 3191", "Flushing, NY 11354").
_TOWN = re.compile(r"^(?=.*\d)(?=.*[^\W\d_]{3})[\w\s,.'·-]{4,60}$")
_ADDRESS_LABEL = re.compile(
    r"(?i)^(?:address|our address|postal address|street address|adresse|anschrift|dirección|direccion|"
    r"indirizzo|adres|endereço|endereco|地址|住址)\s*[:：]?\s*"
)
_EMPHASIS = re.compile(r"[*_]{1,3}")
_AFTER_POSTCODE = re.compile(r"(?<=\d{4})(?:,\s*|\s+)(?=[a-z])\D*$")


def _street(line: str) -> int:
    """Where a street with its house number starts in `line` (-1: none): its name's words are
    capitalised, but for particles ("rue de la Paix"), so "3 vans on the road" is none."""
    for pattern in _STREETS:
        for match in pattern.finditer(line):
            words = match.group("name").split()
            if words and all(w[0].isupper() or w.lower() in _PARTICLES for w in words) and words[0][0].isupper():
                return match.start()
            if not words and match.group(0)[0].isupper():  # "Hauptstraße 94": one word, its kind in it
                return match.start()
    return -1


def read_address(text: str) -> str:
    """The first street address written in the text, as one line: from the street with its house
    number (or what follows an address label) to the end of its line, with the next line joined
    when it gives the postcode and town ("Hauptstraße 94" and "35716 Ewersbach" are
    "Hauptstraße 94, 35716 Ewersbach"); "" when none."""
    lines = [" ".join(_EMPHASIS.sub("", line).strip(" \t-|#>").split()) for line in text.replace("\u00a0", " ").splitlines()]
    lines = [line for line in lines if line]
    for i, line in enumerate(lines):
        labelled = _ADDRESS_LABEL.match(line)
        value = line[labelled.end():] if labelled else line
        if labelled and not value and i + 1 < len(lines):
            value, i = lines[i + 1], i + 1
        if not value or len(value) > MAX_ADDRESS_CHARS or not re.search(r"\d", value):
            continue
        at = _street(value)
        if at < 0 and not (labelled and re.search(r"[^\W\d_]{3}", value)):
            continue
        # From the street on; a sentence's words after the postcode are not the address
        # ("41 Beach Road, Sandringham VIC 3191, next to the station car park").
        value = _AFTER_POSTCODE.sub("", value[max(at, 0):]).rstrip(" ,.")
        town = lines[i + 1].rstrip(" .") if i + 1 < len(lines) else ""
        if town and _TOWN.match(town) and _street(town) < 0 and not re.search(r"\d{6,}", town) \
                and not re.search(r"\d{4,5}$", value):
            value = f"{value}, {town}"
        return value
    return ""


def read_emails(text: str) -> list[str]:
    """Email addresses written in the text, lower-cased, in order."""
    return list(dict.fromkeys(address.lower().rstrip(".") for address in _EMAIL.findall(text)))


# -- the rule-based reader ---------------------------------------------------------------------------------


def read_rules(pages: Iterable[PageText], regions: Sequence[str] = ("AU",)) -> list[Candidate]:
    """Candidates from the pages, the first page that writes each fact giving it (pages in the order given)."""
    found: dict[str, Candidate] = {}
    for page in pages:
        if "telephone" not in found and (phones := read_phones(page.text, regions)):
            found["telephone"] = Candidate("telephone", phones[0], page.url, "rules")
        if "email" not in found and (emails := read_emails(page.text)):
            found["email"] = Candidate("email", emails[0], page.url, "rules")
        if "hours" not in found:
            hours, _ = read_hours(page.text)
            if hours:
                found["hours"] = Candidate("hours", hours, page.url, "rules")
        if "address" not in found and (address := read_address(page.text)):
            found["address"] = Candidate("address", address, page.url, "rules")
    return [found[key] for key in FACT_KEYS if key in found]
