"""The checks every candidate fact read from a page's words must pass, whichever reader gave it. Pure: no Scrapy import.

A candidate (contact_details.py's `Candidate`, from the rule-based reader or a chat model) is checked
against the page it came from (`check(candidate, page_text)`):

- telephone: 7-15 digits, and those digits, in order, written in the page (spaces, dots, dashes,
  brackets and "·" between them allowed): an invented number is dropped;
- email: one address (one "@", a dot in the domain), written in the page;
- hours: the facts' hours shape ({"Monday": [["08:00", "17:00"]], ...}, days by their English names,
  "HH:MM" clocks up to "24:00", as worker/src/chat/hours.ts reads them: hours.py's `hours_table`), at
  least one span, and every clock of it one the page writes ("5pm", "17:00", "17.00", "17 Uhr" all are 17:00);
- address: one line of text, with letters and a digit, present in the page (compared without
  case, spacing or punctuation, so lines joined with commas still match).

A failed check gives its reason; the candidate is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from helppuff_crawl.text.business_facts import place_key
from helppuff_crawl.text.contact_details import MAX_ADDRESS_CHARS, Candidate, PageText
from helppuff_crawl.text.hours import hours_table, page_clocks

MIN_PHONE_DIGITS, MAX_PHONE_DIGITS = 7, 15  # E.164 allows 15; no real number has fewer than 7
_PHONE_SEPARATORS = r"[\s().\-–·/]*"


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


def _check_hours(value: Any, page_text: str) -> str:
    table = hours_table(value)
    if table is None:
        return "hours: not an hours table ({day: [[\"HH:MM\", \"HH:MM\"]]}, at least one span)"
    written = page_clocks(page_text)
    missing = sorted({clock for spans in table.values() for span in spans for clock in span} - written)
    if missing:
        return f"hours: {', '.join(missing)} not written in the page"
    return ""


def _check_address(value: Any, page_text: str) -> str:
    if not isinstance(value, str) or not value.strip():
        return "address: not text"
    line = " ".join(value.split())
    if "\n" in value.strip() or len(line) > MAX_ADDRESS_CHARS:
        return "address: not one line"
    if not re.search(r"\d", line) or not re.search(r"[^\W\d_]", line):
        return f"address: {value!r} has no number and street"
    if place_key(line) not in place_key(page_text):
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
