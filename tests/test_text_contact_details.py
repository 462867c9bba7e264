"""helppuff_crawl.text.contact_details: the rule-based reader of a page's own words, and the checks every reader's
answer must pass. Real page text comes from tests/sites and, when present, ../shared/data/sites."""

from __future__ import annotations

import pytest

from helppuff_crawl.text.structured_data import DAYS
from helppuff_crawl.text.markdown import extract
from helppuff_crawl.text.contact_details import (
    Candidate,
    PageText,
    check,
    check_all,
    footer_text,
    page_clocks,
    read_address,
    read_emails,
    read_hours,
    read_phones,
    read_rules,
)
from tests.conftest import SITES, shared_data


def _week(**days: list[list[str]]) -> dict[str, list[list[str]]]:
    """A full week: the days named with their spans (Monday=..., or mon_fri=... for Monday to Friday), others closed."""
    table = {day: [] for day in DAYS}
    for name, spans in days.items():
        if name == "mon_fri":
            for day in DAYS[:5]:
                table[day] = spans
        elif name == "mon_thu":
            for day in DAYS[:4]:
                table[day] = spans
        else:
            table[name] = spans
    return table


@pytest.mark.parametrize(("line", "expected"), [
    ("Mon–Fri 8am–5pm", _week(mon_fri=[["08:00", "17:00"]])),
    ("Monday to Friday: 8:00 - 17:00", _week(mon_fri=[["08:00", "17:00"]])),
    ("Sat 9-12", _week(Saturday=[["09:00", "12:00"]])),
    ("Mo–Fr 8–18 Uhr", _week(mon_fri=[["08:00", "18:00"]])),
    ("Montag bis Donnerstag 10–13 und 15–17:30 Uhr", _week(mon_thu=[["10:00", "13:00"], ["15:00", "17:30"]])),
    ("Hours: Mon-Fri 8-5, Sat 9-noon", _week(mon_fri=[["08:00", "17:00"]], Saturday=[["09:00", "12:00"]])),
    ("Open 24/7", {day: [["00:00", "24:00"]] for day in DAYS}),
    ("Fri 22:00-02:00", _week(Friday=[["22:00", "02:00"]])),  # past midnight, as hours.ts reads it
])
def test_hours_lines(line: str, expected: dict[str, list[list[str]]]) -> None:
    hours, used = read_hours(line)
    assert hours == expected
    assert used == [line]


@pytest.mark.parametrize("text", [
    "Do you want 8-12 of them? So 10-12 people came.",  # English words, not German days
    "Call from 6pm to 10pm on weekdays.",  # times before the day: not an hours line
    "Our prices start at $90 - $120 for a call-out.",
    "24/7 Emergency • Same-day service",  # ../shared/data/sites/ga-plumbing: a service, not opening hours
    "",
])
def test_text_without_hours_gives_none(text: str) -> None:
    assert read_hours(text) == ({}, [])


def test_a_table_of_opening_hours_in_markdown() -> None:
    """tests/sites/acme-plumbing/contact.html: open and close in cells of their own."""
    markdown = extract((SITES / "acme-plumbing" / "contact.html").read_text(), "https://acme.example/contact").markdown
    hours, used = read_hours(markdown)
    assert hours == _week(mon_fri=[["07:00", "17:00"]], Saturday=[["08:00", "12:00"]])
    assert len(used) == 3  # Monday to Friday, Saturday, Sunday closed


def test_a_table_with_two_places_is_not_mixed_into_one() -> None:
    """tests/sites/northside-dental/contact.html: a column per clinic says nothing of one business's hours."""
    markdown = extract((SITES / "northside-dental" / "contact.html").read_text(), "https://n.example/contact").markdown
    assert "| Monday |" in markdown
    assert read_hours(markdown) == ({}, [])


def test_the_footer_is_read_and_the_first_place_wins() -> None:
    """tests/sites/northside-dental: the hours are in the footer, a clinic each; a later line never overwrites a day."""
    footer = footer_text((SITES / "northside-dental" / "contact.html").read_text())
    assert "Mon to Fri 8am to 6pm (Thu until 8pm), Sat 8am to 1pm" in footer.splitlines()
    hours, used = read_hours(footer)
    assert hours == _week(Monday=[["08:00", "18:00"]], Tuesday=[["08:00", "18:00"]], Wednesday=[["08:00", "18:00"]],
                          Thursday=[["08:00", "20:00"]], Friday=[["08:00", "18:00"]], Saturday=[["08:00", "13:00"]])
    assert used[0].startswith("Mon to Fri 8am to 6pm")
    assert read_phones(footer) == ["(07) 3350 4120", "(07) 3263 8810", "0400 118 260"]  # the ABN is no number
    assert read_emails(footer) == ["hello@northsidedental.example"]


def test_the_fixture_footer_hours() -> None:
    """tests/sites/bayside-bikes: the hours are only in the footer's text."""
    html = (SITES / "bayside-bikes" / "index.html").read_text()
    assert "Mon" not in extract(html, "https://bayside.example/").markdown
    hours, _ = read_hours(footer_text(html))
    assert hours == _week(mon_fri=[["08:00", "17:30"]], Saturday=[["09:00", "12:00"]])


def _werland(name: str) -> str:
    return (shared_data("sites", "zahnarzt-werland") / name).read_text(encoding="utf-8")


def test_german_practice_hours_contact_and_footer() -> None:
    """../shared/data/sites/zahnarzt-werland: hours rows in the page and in German prose, the footer's number and address."""
    page = extract(_werland("sprechzeiten.html"), "https://www.zahnarztpraxis-werland.de/sprechzeiten.html")
    hours, _ = read_hours(page.markdown)
    assert hours == _week(mon_thu=[["10:00", "13:00"], ["15:00", "17:30"]])  # Friday, Saturday: by appointment
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


PAGE = "Call 03 9000 1234 or email hello@acme.example.\nMon–Fri 8am–5pm\nVisit: 12 Example Street,\nRichmond VIC 3121"


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("telephone", "03 9000 1234", ""),
    ("telephone", "(03) 9000-1234", ""),  # the same digits, other separators
    ("telephone", "03 9000 5678", "not written in the page"),  # invented
    ("telephone", "123", "3 digits"),
    ("telephone", "Call 03 9000 1234", "holds more than a number"),
    ("email", "hello@acme.example", ""),
    ("email", "HELLO@acme.example", ""),
    ("email", "sales@acme.example", "not written in the page"),
    ("email", "hello@acme", "not one address"),
    ("email", "a@b@acme.example", "not one address"),
    ("hours", {"Monday": [["08:00", "17:00"]]}, ""),
    ("hours", {"Saturday": [["09:00", "13:00"]]}, "09:00, 13:00 not written"),  # invented
    ("hours", {"Monday": [["8am", "5pm"]]}, "not an hours table"),
    ("hours", {"Funday": [["08:00", "17:00"]]}, "not an hours table"),
    ("hours", {"Monday": []}, "not an hours table"),
    ("hours", "Mon–Fri 8am–5pm", "not an hours table"),
    ("address", "12 Example Street, Richmond VIC 3121", ""),  # lines joined with a comma
    ("address", "14 Example Street, Richmond VIC 3121", "not written in the page"),
    ("address", "Richmond", "no number and street"),
])
def test_checks(key: str, value: object, reason: str) -> None:
    got = check(Candidate(key, value), PAGE)
    assert (got == "") if not reason else (reason in got), got


def test_page_clocks() -> None:
    assert page_clocks("Mo–Fr 8–18 Uhr, Sa 9:30 bis 12; phone 9000 1234; 5pm") == {
        "08:00", "18:00", "09:30", "12:00", "17:00"}


def test_check_all_finds_the_page_and_keeps_one_of_each() -> None:
    pages = [PageText("https://a.example/contact", "contact", "Phone 03 9000 1234"),
             PageText("https://a.example/", "home", "Email hi@a.example or call 03 9000 1234")]
    checked = check_all([Candidate("email", " Hi@A.example "), Candidate("telephone", "03 9000 1234"),
                         Candidate("telephone", "03 9000 1234"), Candidate("telephone", "1300 999 888")], pages)
    assert [(c.key, c.value, c.source_url) for c in checked.kept] == [
        ("email", "hi@a.example", "https://a.example/"), ("telephone", "03 9000 1234", "https://a.example/contact")]
    assert [c.reason for c in checked.dropped] == ["telephone: given twice",
                                                   "telephone: '1300 999 888' is not written in the page"]
