"""helppuff_crawl.text.hours: opening hours read from schema.org's notation and from a page's own words.
Real page text comes from tests/sites."""

from __future__ import annotations

import pytest

from helppuff_crawl.text.contact_details import footer_text
from helppuff_crawl.text.hours import DAYS, opening_clock, page_clocks, read_hours, read_opening_hours
from helppuff_crawl.text.markdown import extract
from tests.conftest import SITES


def week_table(**days: list[list[str]]) -> dict[str, list[list[str]]]:
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
    ("Mon–Fri 8am–5pm", week_table(mon_fri=[["08:00", "17:00"]])),
    ("Monday to Friday: 8:00 - 17:00", week_table(mon_fri=[["08:00", "17:00"]])),
    ("Sat 9-12", week_table(Saturday=[["09:00", "12:00"]])),
    ("Mo–Fr 8–18 Uhr", week_table(mon_fri=[["08:00", "18:00"]])),
    ("Montag bis Donnerstag 10–13 und 15–17:30 Uhr", week_table(mon_thu=[["10:00", "13:00"], ["15:00", "17:30"]])),
    ("Hours: Mon-Fri 8-5, Sat 9-noon", week_table(mon_fri=[["08:00", "17:00"]], Saturday=[["09:00", "12:00"]])),
    ("Open 24/7", {day: [["00:00", "24:00"]] for day in DAYS}),
    ("Fri 22:00-02:00", week_table(Friday=[["22:00", "02:00"]])),  # past midnight, as hours.ts reads it
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
    assert hours == week_table(mon_fri=[["07:00", "17:00"]], Saturday=[["08:00", "12:00"]])
    assert len(used) == 3  # Monday to Friday, Saturday, Sunday closed


def test_a_table_with_two_places_is_not_mixed_into_one() -> None:
    """tests/sites/northside-dental/contact.html: a column per clinic says nothing of one business's hours."""
    markdown = extract((SITES / "northside-dental" / "contact.html").read_text(), "https://n.example/contact").markdown
    assert "| Monday |" in markdown
    assert read_hours(markdown) == ({}, [])


def test_the_fixture_footer_hours() -> None:
    """tests/sites/bayside-bikes: the hours are only in the footer's text."""
    html = (SITES / "bayside-bikes" / "index.html").read_text()
    assert "Mon" not in extract(html, "https://bayside.example/").markdown
    hours, _ = read_hours(footer_text(html))
    assert hours == week_table(mon_fri=[["08:00", "17:30"]], Saturday=[["09:00", "12:00"]])


def test_page_clocks() -> None:
    assert page_clocks("Mo–Fr 8–18 Uhr, Sa 9:30 bis 12; phone 9000 1234; 5pm") == {
        "08:00", "18:00", "09:30", "12:00", "17:00"}


@pytest.mark.parametrize(("text", "spans"), [
    ("Mo-Fr 08:00-17:00", {day: [("08:00", "17:00")] for day in DAYS[:5]}),
    ("Mo,We 09:00-12:00, 13:00-17:00", {"Monday": [("09:00", "12:00"), ("13:00", "17:00")],
                                        "Wednesday": [("09:00", "12:00"), ("13:00", "17:00")]}),
    ("Sa-Mo 10:00-14:00", {"Saturday": [("10:00", "14:00")], "Sunday": [("10:00", "14:00")],
                           "Monday": [("10:00", "14:00")]}),
    ("Monday-Friday 8am-5:30pm", {day: [("08:00", "17:30")] for day in DAYS[:5]}),
    ("  24/7 ", {day: [("00:00", "24:00")] for day in DAYS}),
    ("Su closed", {}),  # nothing to read, and nothing wrong
    ("whenever", None),
])
def test_read_opening_hours(text: str, spans: dict[str, list[tuple[str, str]]] | None) -> None:
    assert read_opening_hours(text) == spans


def test_opening_clock_reads_the_notations_clocks_only() -> None:
    """An openingHoursSpecification's opens and closes: the clocks schema.org's notation writes, and no others."""
    assert [opening_clock(text) for text in ("8:00", " 08:00:00 ", "8am", "5.30 pm", "12am", "24:00")] == [
        "08:00", "08:00", "08:00", "17:30", "00:00", "24:00"]
    assert [opening_clock(text) for text in ("noon", "5 p. m.", "8:60", "25:00", "")] == ["", "", "", "", ""]


@pytest.mark.parametrize(("text", "notation", "words"), [
    # A span that closes before it opens: schema.org's notation is a 24-hour clock, so it runs past
    # midnight (a bar's "11:00-01:00", as hours.ts reads it); a page's words are read as a shop sign
    # is, so "8-5" is 8am to 5pm.
    ("Fri 11:00-01:00", {"Friday": [("11:00", "01:00")]}, {"Friday": [["11:00", "13:00"]]}),
    ("Mon 8-5", {"Monday": [("08:00", "05:00")]}, {"Monday": [["08:00", "17:00"]]}),
    # A day written twice: the notation lists every span given for it; in a page's words the first
    # hours written for a day win (a second place's hours further down do not mix in).
    ("Mon 08:00-12:00 Mon 13:00-17:00", {"Monday": [("08:00", "12:00"), ("13:00", "17:00")]},
     {"Monday": [["08:00", "12:00"]]}),
    # The notation's two-letter days; in a page's words "Tu" is no day, and "Mo" is German, read with "Uhr" only.
    ("Tu-Th 09:00-17:00", {day: [("09:00", "17:00")] for day in DAYS[1:4]}, {}),
    ("Mo 09:00-17:00", {"Monday": [("09:00", "17:00")]}, {}),
])
def test_where_the_notations_differ_each_reads_as_it_did(
        text: str, notation: dict[str, list[tuple[str, str]]], words: dict[str, list[list[str]]]) -> None:
    """structured_data.py and contact_details.py read hours as they did before the two readers shared this module."""
    assert read_opening_hours(text) == notation
    table, _ = read_hours(text)
    assert {day: spans for day, spans in table.items() if spans} == words
