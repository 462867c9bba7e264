"""Site facts between the page extractor and the `facts` table, and the facts passage.

Pure functions. Facts are stored one row per key (`facts.value` is JSON); a crawl writes the
keys it found (source "crawl") and never touches a key the owner set (source "owner"). The
passage is rebuilt from the stored rows, so the owner's values win in it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from helppuff_crawl.text.facts import Facts, Location, facts_passage, week_from_json

FACTS_URL = "helppuff://facts"  # the facts passage's page URL in `chunks`
FACTS_TITLE = "Business details"
SITE_BLOCKS_KEY = "_site_blocks"  # furniture with contact details/hours, kept once with the facts
FACT_KEYS = ("name", "telephone", "email", "address", "hours", "areas", "price_range", "phones", "emails",
             "description", "locations")
_LABELS = {"hours": "Opening hours"}


def fact_values(facts: Facts) -> dict[str, Any]:
    """The non-empty facts worth storing, JSON-ready (hours as {day: [[opens, closes]]})."""
    data = facts.as_dict()
    return {key: data[key] for key in FACT_KEYS if data.get(key)}


def parse_owner_value(text: str) -> Any:
    """An owner's value: JSON when it parses as JSON (lists, hours tables), else the text itself."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, (list, dict)) else text


def passage(rows: Iterable[Mapping[str, Any]], site_blocks: Sequence[str] = (), site_name: str = "") -> str:
    """The facts passage from stored rows ({key, value (JSON)}), plus furniture blocks with contact details."""
    facts = Facts()
    extra: list[str] = []
    blocks = list(site_blocks)
    for row in rows:
        key = row["key"]
        value = json.loads(row["value"])
        if key == SITE_BLOCKS_KEY:
            if isinstance(value, list):
                blocks.extend(str(v) for v in value)
        elif key in ("phones", "emails", "areas") and isinstance(value, list):
            setattr(facts, key, [str(v) for v in value])
        elif key == "hours" and isinstance(value, dict):
            facts.hours = week_from_json(value)
        elif key == "locations" and isinstance(value, list) and all(isinstance(v, dict) for v in value):
            facts.locations = [Location.from_dict(v) for v in value if v.get("address")]
        elif key in ("name", "telephone", "email", "address", "price_range") and isinstance(value, str):
            setattr(facts, key, value)
        elif key != "description":
            label = _LABELS.get(key, key.replace("_", " ").capitalize())
            shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            extra.append(f"- {label}: {shown}")
    text = facts_passage(facts, site_name)
    if extra:
        text = (text or f"# {FACTS_TITLE}") + "\n\n" + "\n".join(extra)
    blocks = [block.strip() for block in blocks if block.strip()]
    if blocks:
        text = (text or f"# {FACTS_TITLE}") + "\n\n" + "\n\n".join(dict.fromkeys(blocks))
    return text

