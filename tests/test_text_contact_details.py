"""helppuff_crawl.text.contact_details: contact details in a page's words, read by the rule-based reader.
Real page text comes from tests/sites and, when present, ../shared/data/sites."""

from __future__ import annotations

import pytest

from helppuff_crawl.text.contact_details import (
    Candidate,
    PageText,
    contact_links,
    footer_text,
    read_address,
    read_emails,
    read_phones,
    read_rules,
)
from helppuff_crawl.text.fact_checks import check
from helppuff_crawl.text.hours import read_hours
from helppuff_crawl.text.html_text import parse_html
from helppuff_crawl.text.markdown import extract
from tests.conftest import SITES, shared_data
from tests.test_text_hours import week_table


def test_the_footer_is_read_and_the_first_place_wins() -> None:
    """tests/sites/northside-dental: the hours are in the footer, a clinic each; a later line never overwrites a day."""
    footer = footer_text((SITES / "northside-dental" / "contact.html").read_text())
    assert "Mon to Fri 8am to 6pm (Thu until 8pm), Sat 8am to 1pm" in footer.splitlines()
    hours, used = read_hours(footer)
    assert hours == week_table(Monday=[["08:00", "18:00"]], Tuesday=[["08:00", "18:00"]], Wednesday=[["08:00", "18:00"]],
                          Thursday=[["08:00", "20:00"]], Friday=[["08:00", "18:00"]], Saturday=[["08:00", "13:00"]])
    assert used[0].startswith("Mon to Fri 8am to 6pm")
    assert read_phones(footer) == ["(07) 3350 4120", "(07) 3263 8810", "0400 118 260"]  # the ABN is no number
    assert read_emails(footer) == ["hello@northsidedental.example"]


def _werland(name: str) -> str:
    return (shared_data("sites", "zahnarzt-werland") / name).read_text(encoding="utf-8")


def test_german_practice_hours_contact_and_footer() -> None:
    """../shared/data/sites/zahnarzt-werland: hours rows in the page and in German prose, the footer's number and address."""
    page = extract(_werland("sprechzeiten.html"), "https://www.zahnarztpraxis-werland.de/sprechzeiten.html")
    hours, _ = read_hours(page.markdown)
    assert hours == week_table(mon_thu=[["10:00", "13:00"], ["15:00", "17:30"]])  # Friday, Saturday: by appointment
    assert read_hours(page.description)[0] == hours  # "Montag bis Donnerstag 10–13 und 15–17:30 Uhr"
    footer = footer_text(_werland("index.html"))
    assert {"Hauptstraße 94", "35716 Ewersbach · Dietzhölztal"} <= set(footer.splitlines())
    assert read_phones(footer, ["DE"]) == ["02774 · 2666"]
    contact = extract(_werland("kontakt.html"), "https://www.zahnarztpraxis-werland.de/kontakt.html")
    assert read_phones(contact.markdown, ["DE"]) == ["02774 · 2666"]
    assert read_phones("Telefon 02774 · 2666, Fax: 02774 · 921 028", ["DE"]) == ["02774 · 2666"]  # no fax
    assert read_emails(footer) == ["praxis@zahnarztpraxis-werland.de"]
    found = read_rules([PageText("k", "contact", contact.markdown), PageText("h", "home", footer)], ["DE", "AU"])
    assert "praxis@zahnarztpraxis-werland.de" in contact.markdown  # its contact card, not pruned away
    assert [(c.key, c.value, c.source_url) for c in found] == [
        ("telephone", "02774 · 2666", "k"), ("email", "praxis@zahnarztpraxis-werland.de", "k"),
        ("address", "Hauptstraße 94, 35716 Ewersbach", "k")]  # "Anschrift", then the street and the town
    assert read_address(footer) == "Hauptstraße 94, 35716 Ewersbach · Dietzhölztal"


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("Flushing\n\n136-29 Roosevelt Ave, Flushing, NY, 11354\n\nTel: (718) 353-0832",
         "136-29 Roosevelt Ave, Flushing, NY, 11354"),
        ("The workshop is at 41 Beach Road,\nSandringham VIC 3191.", "41 Beach Road, Sandringham VIC 3191"),
        ("Unit 3, 15 Smith Street\nRichmond VIC 3121", "15 Smith Street, Richmond VIC 3121"),
        ("#### Anschrift\n\nHauptstraße 94\n35716 Ewersbach", "Hauptstraße 94, 35716 Ewersbach"),
        ("Hauptstraße *94*\n35716 Ewersbach", "Hauptstraße 94, 35716 Ewersbach"),  # Markdown's emphasis
        ("Lange Straße 5\n12345 Ort", "Lange Straße 5, 12345 Ort"),
        ("Adresse\nLindenweg 5\n12345 Musterstadt", "Lindenweg 5, 12345 Musterstadt"),
        ("Address: 12 rue de la Paix, 75002 Paris", "12 rue de la Paix, 75002 Paris"),
        ("Via Roma 12\n00100 Roma", "Via Roma 12, 00100 Roma"),
        # Not addresses: a number beside a street word in a sentence, opening hours, a business number.
        ("We have 3 vans on the road", ""),
        ("Over 25 years on the road, 24 hours a day", ""),
        ("Open 7 days\nCall 1300 555 000", ""),
        ("ABN 51 824 753 556", ""),
        ("Drive 20 minutes Way out", ""),
    ],
)
def test_read_address(text: str, address: str) -> None:
    assert read_address(text) == address
    if address:  # what is read passes the check it will meet
        assert check(Candidate("address", address, "u", "rules"), text) == ""


def test_phones_are_read_by_the_country_given_first() -> None:
    assert read_phones("Ring 03 9000 1234 today", ["DE", "AU"]) == ["03 9000 1234"]  # not German: Australian
    assert read_phones("Ring +61 3 9000 1234", ["US"]) == ["+61 3 9000 1234"]
    assert read_phones("ABN 51 824 753 556, call us") == []


def test_contact_links() -> None:
    """tel: numbers as digits with a leading "+", mailto: addresses alone and lower-cased; each once, in order."""
    doc = parse_html("<p><a href='tel:+61 3 9999-9999;ext=2'>Call</a><a href='tel:+61399999999'>Again</a>"
                     "<a href='tel:12'>Short</a><a href='mailto:Hello@Acme.example?subject=Quote'>Mail</a>"
                     "<a href='mailto:a@x.example, B@y.example'>Both</a><a href='mailto:'>Empty</a>"
                     "<a href='/contact'>Contact</a></p>")
    assert doc is not None
    assert contact_links(doc) == (["+61399999999"], ["hello@acme.example", "a@x.example", "b@y.example"])
