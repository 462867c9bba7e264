"""helppuff_crawl.kb.facts_table: site facts as stored rows, and the facts passage built from them."""

from __future__ import annotations

import json

from helppuff_crawl.kb.crawl_facts import fact_values
from helppuff_crawl.kb.facts_table import passage
from helppuff_crawl.text.business_facts import Facts, Location
from helppuff_crawl.text.hours import DAYS

ASPLEY = Location(name="Aspley", address="1401 Albany Creek Rd, Aspley", telephone="07 3263 8810",
                  hours={day: [("08:00", "17:30")] if day != "Sunday" else [] for day in DAYS})


def _rows(values: dict[str, object]) -> list[dict[str, str]]:
    return [{"key": key, "value": json.dumps(value)} for key, value in values.items()]


def test_the_passage_round_trips_stored_locations() -> None:
    stored = _rows(fact_values(Facts(name="Northside", address="812 Gympie Rd", locations=[ASPLEY])))
    text = passage(stored)
    assert text.endswith(
        "Other locations:\n\n- Aspley: 1401 Albany Creek Rd, Aspley; phone 07 3263 8810; "
        "hours Monday-Saturday 08:00-17:30, Sunday closed"
    )


def test_an_owner_can_list_locations_and_odd_entries_are_left_out() -> None:
    owner = [{"name": "Kedron pop-up", "address": "5 Lutwyche Rd"}, {"name": "no address"}, "not an object"]
    assert "Other locations" not in passage(_rows({"name": "Northside", "locations": owner}))  # one bad entry: all out
    text = passage(_rows({"name": "Northside", "locations": owner[:2]}))
    assert text == "# Business details\n\n- Name: Northside\n\nOther locations:\n\n- Kedron pop-up: 5 Lutwyche Rd"
