"""The facts passage: the business details as one Markdown passage, always retrievable ("what's your
number?"). Pure: no Scrapy import.

kb/facts_table.py builds it from the stored facts (the owner's win) and learns it as one chunk.
"""

from __future__ import annotations

import re

from helppuff_crawl.text.business_facts import Facts, Location
from helppuff_crawl.text.hours import DAYS, Week


def facts_passage(facts: Facts, site_name: str = "") -> str:
    """One Markdown passage with the business details; only lines with values ("" when none)."""
    lines = []
    name = facts.name or site_name
    if name:
        lines.append(f"- Name: {name}")
    phones = _distinct_phones([facts.telephone, *facts.phones])
    if phones:
        lines.append(f"- Phone: {', '.join(phones)}")
    emails = list(dict.fromkeys(e.lower() for e in [facts.email, *facts.emails] if e))
    if emails:
        lines.append(f"- Email: {', '.join(emails)}")
    if facts.address:
        lines.append(f"- Address: {facts.address}")
    if facts.areas:
        lines.append(f"- Areas served: {', '.join(facts.areas)}")
    if facts.price_range:
        lines.append(f"- Price range: {facts.price_range}")
    if not lines and not facts.hours and not facts.locations:
        return ""
    parts = ["# Business details", "\n".join(lines)] if lines else ["# Business details"]
    if facts.hours:
        # A line, not a heading: the passage stays one section, so one chunk.
        rows = ["| Day | Hours |", "| --- | --- |"]
        for day in DAYS:
            spans = facts.hours.get(day, [])
            rows.append(f"| {day} | {', '.join(f'{a}-{b}' for a, b in spans) if spans else 'Closed'} |")
        where = f" at {facts.address}" if facts.locations and facts.address else ""
        parts += [f"Opening hours{where}:", "\n".join(rows)]
    if facts.locations:
        parts += ["Other locations:", "\n".join(_location_line(location) for location in facts.locations)]
    return "\n\n".join(parts)


def _location_line(location: Location) -> str:
    """ "- Aspley: 1 Main Rd, Aspley; phone 07 3263 8810; hours Monday-Friday 08:00-17:30, ..." """
    details = [location.address]
    if location.telephone:
        details.append(f"phone {location.telephone}")
    if location.hours:
        details.append(f"hours {week_text(location.hours)}")
    head = f"{location.name}: " if location.name else ""
    return f"- {head}{'; '.join(details)}"


def week_text(hours: Week) -> str:
    """A week on one line, runs of days with the same hours together:
    "Monday-Wednesday 08:00-17:30, Thursday 08:00-20:00, Friday 08:00-17:30, Saturday-Sunday closed"."""
    runs: list[tuple[str, str, str]] = []  # (first day, last day, hours)
    for day in DAYS:
        spans = hours.get(day, [])
        text = " and ".join(f"{a}-{b}" for a, b in spans) if spans else "closed"
        if runs and runs[-1][2] == text:
            runs[-1] = (runs[-1][0], day, text)
        else:
            runs.append((day, day, text))
    return ", ".join(f"{first}-{last} {text}" if first != last else f"{first} {text}" for first, last, text in runs)


def _distinct_phones(numbers: list[str]) -> list[str]:
    """Each number once: "03 9999 9999" and "+61399999999" are one (same last eight digits)."""
    kept: list[str] = []
    seen: set[str] = set()
    for number in numbers:
        digits = re.sub(r"\D", "", number)
        if not digits:
            continue
        key = digits[-8:]
        if key not in seen:
            seen.add(key)
            kept.append(number)
    return kept
