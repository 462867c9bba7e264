"""helppuff_crawl.kb.crawl_facts: the facts a crawl finds, merged and kept for storing."""

from __future__ import annotations

import json

from helppuff_crawl.kb.crawl_facts import CrawlFacts, fact_values
from helppuff_crawl.text.business_facts import Facts
from helppuff_crawl.text.hours import DAYS
from tests.test_kb_facts_table import ASPLEY


def test_fact_values_keep_what_is_known_json_ready() -> None:
    facts = Facts(name="Northside", address="812 Gympie Rd", locations=[ASPLEY], faq=[("Q?", "A.")],
                  problems=["unknown type Foo"])
    values = fact_values(facts)
    assert set(values) == {"name", "address", "locations"}  # no empty keys, no FAQ, no problems
    assert json.loads(json.dumps(values))["locations"] == [{
        "name": "Aspley", "address": "1401 Albany Creek Rd, Aspley", "telephone": "07 3263 8810",
        "hours": {day: [["08:00", "17:30"]] if day != "Sunday" else [] for day in DAYS},
    }]


def test_the_home_contact_and_about_pages_win_then_the_others_by_url() -> None:
    crawl = CrawlFacts()
    crawl.add("other", "https://a.example/b", Facts(name="B", email="b@a.example", faq=[("Q?", "A.")]).as_dict())
    crawl.add("other", "https://a.example/a", Facts(name="A", areas=["Kew"]).as_dict())
    crawl.add("contact", "https://a.example/contact", Facts(telephone="03 9000 1234").as_dict(), ["Call 03 9000 1234"])
    crawl.add("home", "https://a.example/", Facts(name="Acme", hours={"Monday": [("08:00", "17:00")]}).as_dict())
    assert crawl.values() == {"name": "Acme", "telephone": "03 9000 1234", "email": "b@a.example",
                              "hours": {"Monday": [["08:00", "17:00"]]}, "areas": ["Kew"]}
    assert crawl.faq() == [("https://a.example/b", "Q?", "A.")]
    assert crawl.site_blocks == ["Call 03 9000 1234"]
    assert CrawlFacts().values() == {}
