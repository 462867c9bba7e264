"""helppuff_crawl.text.facts_merge: site facts merged from the facts of several pages."""

from __future__ import annotations

from helppuff_crawl.text.business_facts import Facts, Location
from helppuff_crawl.text.facts_merge import merge_facts
from tests.test_text_structured_data import week_of


def test_locations_merge_by_address() -> None:
    aspley = Location(name="Aspley", address="1401 Albany Creek Rd, Aspley")
    home = Facts(address="812 Gympie Rd", locations=[aspley])
    page = Facts(locations=[Location(address="1401 ALBANY CREEK RD ASPLEY", telephone="07 3263 8810"),
                            Location(name="Main", address="812 Gympie Rd.")])
    merged = merge_facts([home, page])
    assert merged.locations == [Location(name="Aspley", address="1401 Albany Creek Rd, Aspley", telephone="07 3263 8810")]
    assert home.locations == [aspley] and aspley.telephone == ""  # the pages' facts are left as they were


def test_merge_facts() -> None:
    home = Facts(name="Acme", phones=["+61399999999"], areas=["Kew"], problems=["unknown type Foo"])
    contact = Facts(name="Acme Contact", telephone="03 9999 9999", email="hello@acme.example",
                    hours=week_of(Monday=[("08:00", "17:00")]), areas=["Kew", "Carlton"], phones=["+61399999999"])
    other = Facts(address="1 Smith St", hours=week_of(Sunday=[("10:00", "12:00")]), faq=[("Q?", "A.")])
    merged = merge_facts([home, contact, other])
    assert merged == Facts(
        name="Acme", telephone="03 9999 9999", email="hello@acme.example", address="1 Smith St",
        hours=week_of(Monday=[("08:00", "17:00")]), areas=["Kew", "Carlton"], phones=["+61399999999"],
        faq=[("Q?", "A.")], problems=["unknown type Foo"],
    )
    assert merge_facts([]) == Facts()
