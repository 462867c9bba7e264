"""Business facts from a page's own words, and the checks any reader's answer must pass. Pure: no Scrapy import.

When structured data leaves gaps (no tel: link, hours written in a footer or a paragraph), the
contact, home and location pages' text fills them (kb/page_facts.py). Two readers give candidates:

- a chat model (kb/page_facts.py asks it), whose answers are untrusted;
- `read_rules(pages)`, the rule-based reader here: opening-hours lines ("Mon–Fri 8am–5pm",
  "Monday to Friday: 8:00 - 17:00", "Sat 9-12", "Mo–Fr 8–18 Uhr", "Montag bis Donnerstag 10–13 und
  15–17:30 Uhr", table rows "| Monday to Friday | 7:00 am | 5:00 pm |"), phone numbers (Google's
  libphonenumber rules through `phonenumbers`: what a number looks like differs by country, and
  that library knows them all; a number labelled fax is left out), email addresses, and a street
  address (`read_address`: a line with a house number and a street, "41 Beach Road",
  "Hauptstraße 94", "12 rue de la Paix", "Via Roma 12", or after an "Address:"/"Anschrift" label,
  with the next line joined when it gives the postcode and town).

Every candidate then goes through `check(candidate, page_text)`, whichever reader gave it:

- telephone: 7-15 digits, and those digits, in order, written in the page (spaces, dots, dashes,
  brackets and "·" between them allowed): an invented number is dropped;
- email: one address (one "@", a dot in the domain), written in the page;
- hours: the facts' hours shape ({"Monday": [["08:00", "17:00"]], ...}, days by their English names,
  "HH:MM" clocks up to "24:00", as worker/src/chat/hours.ts reads them), at least one span, and every
  clock of it one the page writes ("5pm", "17:00", "17.00", "17 Uhr" all are 17:00);
- address: one line of text, with letters and a digit, present in the page (compared without
  case, spacing or punctuation, so lines joined with commas still match).

A failed check gives its reason; the candidate is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import lxml.html
import phonenumbers

from helppuff_crawl.text.structured_data import DAYS
from helppuff_crawl.text.html_text import parse_html

FACT_KEYS = ("telephone", "email", "hours", "address")  # what the pages' words can fill
MIN_PHONE_DIGITS, MAX_PHONE_DIGITS = 7, 15  # E.164 allows 15; no real number has fewer than 7
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


# -- opening hours -----------------------------------------------------------------------------------------

_DAY_WORDS: dict[str, tuple[str, ...]] = {
    "Monday": ("monday", "mon", "montag"), "Tuesday": ("tuesday", "tues", "tue", "dienstag"),
    "Wednesday": ("wednesday", "wed", "mittwoch"), "Thursday": ("thursday", "thurs", "thur", "thu", "donnerstag"),
    "Friday": ("friday", "fri", "freitag"), "Saturday": ("saturday", "sat", "samstag", "sonnabend"),
    "Sunday": ("sunday", "sun", "sonntag"),
}
_GERMAN_SHORT = {"Mo": "Monday", "Di": "Tuesday", "Mi": "Wednesday", "Do": "Thursday", "Fr": "Friday",
                 "Sa": "Saturday", "So": "Sunday"}  # capitalised only: "do" and "so" are English words
_GROUPS = {"weekdays": DAYS[:5], "weekday": DAYS[:5], "werktags": DAYS[:5], "weekends": DAYS[5:],
           "weekend": DAYS[5:], "daily": DAYS, "everyday": DAYS, "every day": DAYS, "täglich": DAYS,
           "7 days": DAYS, "seven days": DAYS}
_WORD_DAY = {word: day for day, words in _DAY_WORDS.items() for word in words}
_DAY_NAMES = sorted([*_WORD_DAY, *_GROUPS], key=len, reverse=True)
_DAY = (r"(?:(?i:(?<![^\W\d_])(?:" + "|".join(re.escape(w) for w in _DAY_NAMES) + r")\.?)"
        r"|(?<![^\W\d_])(?:" + "|".join(_GERMAN_SHORT) + r")\.?)(?![^\W\d_])")
_DAY_JOIN = r"\s*(?:[-–—/,&+]|(?i:to|through|thru|till|until|bis|and|und))\s*"
_DAYSPEC = rf"{_DAY}(?:{_DAY_JOIN}{_DAY})*"
_CLOCK = r"(?:\d{1,2}(?:[:.]\d{2})?\s*(?i:[ap]\.?\s?m\.?)?|(?i:noon|midday|midnight|mittag))"
_UNIT = r"(?:\s*(?i:uhr|h|hrs)(?![^\W\d_]))?"
_TIME_JOIN = r"\s*(?:[-–—]|(?i:to|till|until|bis))\s*"
_RANGE = rf"{_CLOCK}{_UNIT}{_TIME_JOIN}{_CLOCK}{_UNIT}"
_RANGES_JOIN = r"\s*(?:[,&/·;+]|(?i:and|und))\s*"
_CLOSED = r"(?i:closed|geschlossen)"
_SPEC = re.compile(
    rf"(?P<days>{_DAYSPEC})\s*(?:[:=|]|-(?=\s))?\s*(?i:from\s+|von\s+)?"
    rf"(?:(?P<times>{_RANGE}(?:{_RANGES_JOIN}{_RANGE})*)|(?P<closed>{_CLOSED}))"
)
_CLOSED_FIRST = re.compile(rf"{_CLOSED}\s+(?i:on\s+|am\s+)?(?P<days>{_DAYSPEC})")
_UNTIL = re.compile(rf"(?P<day>{_DAY})\s+(?i:until|till|to|bis)\s+(?P<clock>{_CLOCK}){_UNIT}")
_CLOCK_PARTS = re.compile(r"(\d{1,2})(?:[:.](\d{2}))?\s*(?:([ap])\.?\s?m\.?)?", re.IGNORECASE)
# Open round the clock: "Open 24/7", "open 24 hours"; a bare "24/7 Emergency" is a service, not opening hours.
_ALL_DAY = re.compile(r"(?i)\bopen\s+(?:24/7|24\s+hours|24\s+hours\s+a\s+day,?\s+7\s+days(?:\s+a\s+week)?)(?!\s+emergenc)")


def _days(spec: str) -> list[str]:
    """ "Mon–Fri" -> Monday..Friday; "Mo, Mi" -> Monday, Wednesday; "Sat-Mon" wraps round the week."""
    tokens = re.findall(rf"{_DAY}|{_DAY_JOIN}", spec)
    days: list[str] = []
    pending_range = False
    for token in tokens:
        word = token.strip().rstrip(".")
        if not word or re.fullmatch(_DAY_JOIN, token):
            pending_range = bool(re.fullmatch(r"[-–—]|to|through|thru|till|until|bis", word, re.IGNORECASE))
            continue
        group = _GROUPS.get(word.lower())
        if group:
            days.extend(d for d in group if d not in days)
            pending_range = False
            continue
        day = _GERMAN_SHORT.get(word) or _WORD_DAY.get(word.lower())
        if day is None:
            continue
        if pending_range and days:
            start = DAYS.index(days[-1])
            count = (DAYS.index(day) - start) % 7
            days.extend(DAYS[(start + step) % 7] for step in range(1, count + 1) if DAYS[(start + step) % 7] not in days)
        elif day not in days:
            days.append(day)
        pending_range = False
    return days


def _clock(text: str) -> tuple[int, int, str] | None:
    """(hour, minute, "a"|"p"|"") for "8", "8:30", "5.30 pm", "noon"; None when unreadable."""
    word = text.strip().lower()
    if word in ("noon", "midday", "mittag"):
        return 12, 0, ""
    if word == "midnight":
        return 24, 0, ""
    match = _CLOCK_PARTS.fullmatch(word)
    if not match:
        return None
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    if hour > 24 or minute > 59:
        return None
    return hour, minute, (match.group(3) or "").lower()


def _as_24(hour: int, minute: int, half: str) -> str:
    if half == "p" and hour < 12:
        hour += 12
    elif half == "a" and hour == 12:
        hour = 0
    return f"{hour:02d}:{minute:02d}"


def _span(text: str) -> tuple[str, str] | None:
    """ "8am–5pm" -> ("08:00", "17:00"); "9-12" -> ("09:00", "12:00"); "8-5" -> ("08:00", "17:00")."""
    parts = re.split(_TIME_JOIN, re.sub(r"(?i)\s*(?:uhr|hrs|h)(?![^\W\d_])", "", text).strip(), maxsplit=1)
    if len(parts) != 2:
        return None
    opens, closes = _clock(parts[0]), _clock(parts[1])
    if opens is None or closes is None:
        return None
    if closes[2] and not opens[2]:  # "8-5pm": the opening takes the closing's half unless that makes it later
        same = _as_24(opens[0], opens[1], closes[2])
        opens = (opens[0], opens[1], closes[2] if same < _as_24(*closes) else ("a" if closes[2] == "p" else "p"))
    start, end = _as_24(*opens), _as_24(*closes)
    if not opens[2] and not closes[2] and end <= start and opens[0] < 12 and closes[0] < 12:
        end = _as_24(closes[0] + 12, closes[1], "")  # "8-5" on a shop sign means 8am to 5pm
    if end > "24:00" or start >= "24:00":
        return None
    return start, end


def _table_line(line: str) -> str:
    """A Markdown table row as an hours line: "| Mon to Fri | 7:00 am | 5:00 pm |" -> "Mon to Fri 7:00 am - 5:00 pm".

    A row with times for several places ("| Monday | 8am to 6pm | 8:30am to 5:30pm |") is left out: it
    says nothing of one business's hours alone."""
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    if len(cells) < 2 or not re.fullmatch(_DAYSPEC, cells[0]):
        return ""
    rest = [cell for cell in cells[1:] if cell and not re.fullmatch(r"-+|–", cell)]
    ranges = [cell for cell in rest if re.fullmatch(rf"{_RANGE}(?:{_RANGES_JOIN}{_RANGE})*", cell)]
    clocks = [cell for cell in rest if re.fullmatch(rf"{_CLOCK}{_UNIT}", cell)]
    if len(ranges) == 1 and len(rest) == 1:
        return f"{cells[0]} {ranges[0]}"
    if len(clocks) == 2 and len(rest) == 2:
        return f"{cells[0]} {clocks[0]} - {clocks[1]}"
    if rest and all(re.fullmatch(_CLOSED, cell) for cell in rest):
        return f"{cells[0]} closed"
    return ""


def read_hours(text: str) -> tuple[dict[str, list[list[str]]], list[str]]:
    """The weekly table the text writes, and the lines it was read from ({} and [] when none).

    Every day is in the table (a day the text does not open is closed). A day keeps the first hours
    written for it: a second place's hours further down do not mix in."""
    table: dict[str, list[tuple[str, str]]] = {}
    used: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("|"):
            line = _table_line(line)
        line = line.replace("*", "").replace("\u00a0", " ")
        if not line:
            continue
        found = False
        here: set[str] = set()  # days this line gave hours: only they take its "Thu until 8pm"
        if _ALL_DAY.search(line) and not table:
            for day in DAYS:
                table[day] = [("00:00", "24:00")]
            found = True
        for match in _SPEC.finditer(line):
            if match.group("days").strip() in _GERMAN_SHORT and "uhr" not in match.group(0).lower():
                continue  # "So 10-12 people": a lone German abbreviation counts only with "Uhr"
            days = _days(match.group("days"))
            if match.group("closed"):
                spans: list[tuple[str, str]] = []
            else:
                spans = [span for part in re.split(_RANGES_JOIN + r"(?=\d|noon|midday)",
                                                   match.group("times"), flags=re.IGNORECASE)
                         if (span := _span(part))]
                if not spans:
                    continue
            for day in days:
                if day not in table:
                    table[day] = list(spans)
                    here.add(day)
                    found = True
        for match in _CLOSED_FIRST.finditer(line):
            for day in _days(match.group("days")):
                if day not in table:
                    table[day] = []
                    found = True
        for match in _UNTIL.finditer(line):  # "(Thu until 8pm)": that day closes later
            day_list = _days(match.group("day"))
            clock = _clock(match.group("clock"))
            if day_list and clock and day_list[0] in here and table.get(day_list[0]):
                opens, _ = table[day_list[0]][-1]
                closes = _as_24(clock[0], clock[1], clock[2] or ("p" if clock[0] < 12 else ""))
                if closes > opens:
                    table[day_list[0]][-1] = (opens, closes)
        if found:
            used.append(raw.strip())
    if not any(table.values()):
        return {}, []
    return {day: [list(span) for span in table.get(day, [])] for day in DAYS}, used


def page_clocks(text: str) -> set[str]:
    """Every clock the text writes, as "HH:MM": "5pm", "17:00", "17.00", the ends of "8–18 Uhr" and "9-12"."""
    clean = text.replace("*", "").replace("\u00a0", " ")
    clocks: set[str] = set()
    for match in re.finditer(rf"{_CLOCK}{_UNIT}{_TIME_JOIN}{_CLOCK}{_UNIT}", clean):
        span = _span(match.group(0))
        if span:
            clocks.update(span)
    for match in re.finditer(r"(?<![\d.:])(\d{1,2})(?:[:.](\d{2}))?\s*(?:([ap])\.?\s?m\.?|uhr\b)?(?![\d])", clean,
                             re.IGNORECASE):
        if match.group(2) or match.group(3) or "uhr" in match.group(0).lower():
            clock = _clock(re.sub(r"(?i)\s*uhr", "", match.group(0)))
            if clock:
                clocks.add(_as_24(*clock))
    if re.search(r"(?i)\b(?:noon|midday|mittag)\b", clean):
        clocks.add("12:00")
    if re.search(r"(?i)\bmidnight\b|24/7|24\s+hours", clean):
        clocks.update({"00:00", "24:00"})
    return clocks


# -- phones and emails -------------------------------------------------------------------------------------

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_FAX = re.compile(r"(?i)\b(?:fax|telefax)\b[\s.:]*$")
_PHONE_SEPARATORS = r"[\s().\-–·/]*"


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


# -- the checks --------------------------------------------------------------------------------------------


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def check(candidate: Candidate, page_text: str) -> str:
    """Why `candidate` cannot be kept against the page it came from ("" when it can)."""
    checker = _CHECKS.get(candidate.key)
    if checker is None:
        return f"{candidate.key}: not a fact the pages fill"
    return checker(candidate.value, page_text)


def _check_phone(value: Any, page_text: str) -> str:
    if not isinstance(value, str) or not value.strip():
        return "telephone: not text"
    if re.search(r"[^\d\s().+\-–·/]", value):
        return f"telephone: {value!r} holds more than a number"
    digits = _digits(value)
    if not MIN_PHONE_DIGITS <= len(digits) <= MAX_PHONE_DIGITS:
        return f"telephone: {len(digits)} digits, a number has {MIN_PHONE_DIGITS}-{MAX_PHONE_DIGITS}"
    written = _PHONE_SEPARATORS.join(digits)
    if not re.search(rf"(?<!\d){written}(?!\d)", page_text):
        return f"telephone: {value!r} is not written in the page"
    return ""


def _check_email(value: Any, page_text: str) -> str:
    if not isinstance(value, str):
        return "email: not text"
    address = value.strip().lower().removeprefix("mailto:")
    local, at, domain = address.partition("@")
    if address.count("@") != 1 or not local or "." not in domain.strip(".") or re.search(r"[\s,;<>]", address):
        return f"email: {value!r} is not one address"
    if address not in page_text.lower():
        return f"email: {value!r} is not written in the page"
    return ""


def hours_table(value: Any) -> dict[str, list[list[str]]] | None:
    """`value` in the facts' hours shape, every day named, or None when it is not one (as hours.ts reads it)."""
    if not isinstance(value, Mapping):
        return None
    table: dict[str, list[list[str]]] = {day: [] for day in DAYS}
    spans = 0
    for name, raw in value.items():
        day = next((d for d in DAYS if d.lower() == str(name).strip().lower()), None)
        if day is None or not isinstance(raw, list):
            return None
        for span in raw:
            if not (isinstance(span, list | tuple) and len(span) == 2 and all(isinstance(t, str) for t in span)
                    and all(re.fullmatch(r"(?:[01]\d|2[0-3]):[0-5]\d|24:00", t) for t in span)):
                return None
            table[day].append([span[0], span[1]])
            spans += 1
    return table if spans else None


def _check_hours(value: Any, page_text: str) -> str:
    table = hours_table(value)
    if table is None:
        return "hours: not an hours table ({day: [[\"HH:MM\", \"HH:MM\"]]}, at least one span)"
    written = page_clocks(page_text)
    missing = sorted({clock for spans in table.values() for span in spans for clock in span} - written)
    if missing:
        return f"hours: {', '.join(missing)} not written in the page"
    return ""


def _place_key(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def _check_address(value: Any, page_text: str) -> str:
    if not isinstance(value, str) or not value.strip():
        return "address: not text"
    line = " ".join(value.split())
    if "\n" in value.strip() or len(line) > MAX_ADDRESS_CHARS:
        return "address: not one line"
    if not re.search(r"\d", line) or not re.search(r"[^\W\d_]", line):
        return f"address: {value!r} has no number and street"
    if _place_key(line) not in _place_key(page_text):
        return f"address: {value!r} is not written in the page"
    return ""


_CHECKS = {"telephone": _check_phone, "email": _check_email, "hours": _check_hours, "address": _check_address}


@dataclass
class Checked:
    """Candidates after the checks: those kept, and those dropped with their reason."""

    kept: list[Candidate] = field(default_factory=list)
    dropped: list[Candidate] = field(default_factory=list)


def check_all(candidates: Iterable[Candidate], pages: Sequence[PageText]) -> Checked:
    """Check each candidate against its page's text; one with no page yet takes the first page it passes
    on (the model reads all pages at once). The first candidate of a key that passes is kept."""
    checked = Checked()
    seen: set[str] = set()
    everything = "\n\n".join(page.text for page in pages)
    for candidate in candidates:
        own = [page for page in pages if page.url == candidate.source_url] or list(pages)
        reason = check(candidate, everything) if not own else ""
        for page in own:
            reason = check(candidate, page.text)
            if not reason:
                candidate.source_url = page.url
                break
        if not reason and candidate.key in seen:
            reason = f"{candidate.key}: given twice"
        if reason:
            candidate.reason = reason
            checked.dropped.append(candidate)
            continue
        if candidate.key == "hours":
            candidate.value = hours_table(candidate.value)
        elif candidate.key == "email":
            candidate.value = candidate.value.strip().lower().removeprefix("mailto:")
        else:
            candidate.value = " ".join(candidate.value.split())
        seen.add(candidate.key)
        checked.kept.append(candidate)
    return checked
