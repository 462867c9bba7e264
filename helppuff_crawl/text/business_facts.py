"""The business facts as data: `Facts`, with the business's other places as `Location`s. Pure: no Scrapy import.

structured_data.py reads a page's facts, facts_merge.py merges the pages' into the site's, and
facts_passage.py writes them as the Markdown passage; a crawled page item carries them as
`Facts.as_dict()` (JSON-ready), and kb/crawl_facts.py reads them back with `Facts.from_dict`.
A location at the business's own address is no other place: `add_location` leaves it out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from helppuff_crawl.text.hours import Week, week_from_json


@dataclass
class Location:
    """Another place of the business (a branch): what a visitor needs to find and call it."""

    name: str = ""
    address: str = ""
    telephone: str = ""
    hours: Week = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["hours"] = {day: [list(span) for span in spans] for day, spans in self.hours.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Location:
        """From `as_dict` (or a stored value); odd values are left out."""
        text = {key: data[key] if isinstance(data.get(key), str) else "" for key in ("name", "address", "telephone")}
        return cls(**text, hours=week_from_json(data.get("hours")))


@dataclass
class Facts:
    name: str = ""
    telephone: str = ""  # as written in the structured data
    email: str = ""  # lower-cased
    address: str = ""  # one line: street, locality, region, postcode, country
    hours: Week = field(default_factory=dict)
    areas: list[str] = field(default_factory=list)  # areas served, as written
    price_range: str = ""
    phones: list[str] = field(default_factory=list)  # tel: links, digits and a leading "+"
    emails: list[str] = field(default_factory=list)  # mailto: links, the address only, lower-cased
    description: str = ""  # meta description, else og:description
    faq: list[tuple[str, str]] = field(default_factory=list)  # FAQPage (question, answer) pairs
    locations: list[Location] = field(default_factory=list)  # other places of the business
    problems: list[str] = field(default_factory=list)  # what was skipped and why

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: hours as {"Monday": [["08:00", "17:00"]], ...}, faq as [[question, answer], ...]."""
        data = asdict(self)
        data["hours"] = {day: [list(span) for span in spans] for day, spans in self.hours.items()}
        data["faq"] = [list(pair) for pair in self.faq]
        data["locations"] = [location.as_dict() for location in self.locations]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Facts:
        """From `as_dict` (what a crawled page item carries); unknown keys are ignored."""
        facts = cls(**{key: data[key] for key in ("name", "telephone", "email", "address", "price_range",
                                                   "description") if isinstance(data.get(key), str)})
        for key in ("areas", "phones", "emails", "problems"):
            if isinstance(data.get(key), list):
                setattr(facts, key, [str(value) for value in data[key]])
        facts.hours = week_from_json(data.get("hours"))
        facts.faq = [(str(pair[0]), str(pair[1])) for pair in data.get("faq") or []
                     if isinstance(pair, list | tuple) and len(pair) == 2]
        facts.locations = [Location.from_dict(value) for value in data.get("locations") or []
                           if isinstance(value, Mapping) and value.get("address")]
        return facts


def place_key(text: str) -> str:
    """Addresses compared without case, punctuation or spacing."""
    return re.sub(r"[\W_]+", "", text.lower())


def add_location(facts: Facts, location: Location) -> None:
    """Add a location unless its address is the business's own or already listed (then fill its gaps)."""
    key = place_key(location.address)
    if not key or key == place_key(facts.address):
        return
    for known in facts.locations:
        if place_key(known.address) == key:
            known.name = known.name or location.name
            known.telephone = known.telephone or location.telephone
            known.hours = known.hours or location.hours
            return
    facts.locations.append(location)
