"""helppuff_crawl.sitefacts: site facts as stored rows, and the facts passage built from them."""

from __future__ import annotations

import json

from helppuff_crawl.kb.facts_table import fact_values, passage
from helppuff_crawl.text.structured_data import DAYS, Facts, Location

ASPLEY = Location(name="Aspley", address="1401 Albany Creek Rd, Aspley", telephone="07 3263 8810",
                  hours={day: [("08:00", "17:30")] if day != "Sunday" else [] for day in DAYS})


def _rows(values: dict[str, object]) -> list[dict[str, str]]:
    return [{"key": key, "value": json.dumps(value)} for key, value in values.items()]


def test_fact_values_keep_what_is_known_json_ready() -> None:
    facts = Facts(name="Northside", address="812 Gympie Rd", locations=[ASPLEY], faq=[("Q?", "A.")],
                  problems=["unknown type Foo"])
    values = fact_values(facts)
    assert set(values) == {"name", "address", "locations"}  # no empty keys, no FAQ, no problems
    assert json.loads(json.dumps(values))["locations"] == [{
        "name": "Aspley", "address": "1401 Albany Creek Rd, Aspley", "telephone": "07 3263 8810",
        "hours": {day: [["08:00", "17:30"]] if day != "Sunday" else [] for day in DAYS},
    }]


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
