"""helppuff_crawl.text.business_facts: the facts as data, JSON-ready and read back."""

from __future__ import annotations

import json

from helppuff_crawl.text.business_facts import Facts, Location
from helppuff_crawl.text.structured_data import extract_facts
from tests.test_text_structured_data import CLINIC, PLUMBER, jsonld_page


def test_as_dict_is_json_ready() -> None:
    facts = extract_facts(jsonld_page(PLUMBER, {"@type": "FAQPage", "mainEntity": {
        "@type": "Question", "name": "Q?", "acceptedAnswer": {"text": "A."}}}))
    data = json.loads(json.dumps(facts.as_dict()))
    assert data["hours"]["Monday"] == [["08:00", "17:00"]]
    assert data["hours"]["Sunday"] == []
    assert data["faq"] == [["Q?", "A."]]
    assert data["areas"] == ["Richmond", "Hawthorn"]


def test_from_dict_round_trips_as_dict() -> None:
    for facts in (extract_facts(jsonld_page(CLINIC)), extract_facts(jsonld_page(PLUMBER, {"@type": "FAQPage", "mainEntity": {
            "@type": "Question", "name": "Q?", "acceptedAnswer": {"text": "A."}}}))):
        assert Facts.from_dict(json.loads(json.dumps(facts.as_dict()))) == facts


def test_from_dict_leaves_odd_values_out() -> None:
    data = {"name": 3, "telephone": "07 1234", "hours": [1], "faq": [["Q?"], ["Q?", "A."]], "areas": "Kew",
            "locations": [{"name": "No address"}, "text", {"address": "5 Lutwyche Rd", "hours": {"Monday": [["a"]]}}],
            "unknown": "ignored"}
    assert Facts.from_dict(data) == Facts(telephone="07 1234", faq=[("Q?", "A.")],
                                          locations=[Location(address="5 Lutwyche Rd", hours={"Monday": []})])
