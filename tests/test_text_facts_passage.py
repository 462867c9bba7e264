"""helppuff_crawl.text.facts_passage: the business details as one Markdown passage."""

from __future__ import annotations

import pytest

from helppuff_crawl.text.business_facts import Facts
from helppuff_crawl.text.facts_passage import facts_passage, week_text
from helppuff_crawl.text.hours import DAYS
from helppuff_crawl.text.structured_data import extract_facts
from tests.test_text_structured_data import CLINIC, WORKDAYS, jsonld_page, week_of


@pytest.mark.parametrize(
    ("hours", "line"),
    [
        (week_of(**{day: [("08:00", "17:30")] for day in DAYS[:3]}, Thursday=[("08:00", "19:00")]),
         "Monday-Wednesday 08:00-17:30, Thursday 08:00-19:00, Friday-Sunday closed"),
        (week_of(Saturday=[("09:00", "12:00"), ("13:00", "15:00")]),
         "Monday-Friday closed, Saturday 09:00-12:00 and 13:00-15:00, Sunday closed"),
        ({day: [("00:00", "24:00")] for day in DAYS}, "Monday-Sunday 00:00-24:00"),
    ],
)
def test_week_text(hours: dict[str, list[tuple[str, str]]], line: str) -> None:
    assert week_text(hours) == line


def test_facts_passage() -> None:
    facts = Facts(name="Acme Plumbing", telephone="03 9999 9999", phones=["+61399999999", "+61400000000"],
                  email="Hello@Acme.example", emails=["hello@acme.example", "jobs@acme.example"],
                  address="1 Smith St, Richmond",
                  hours=week_of(**WORKDAYS, Saturday=[("09:00", "12:00"), ("13:00", "15:00")]),
                  areas=["Richmond", "Kew"], price_range="$$")
    assert facts_passage(facts) == (
        "# Business details\n\n"
        "- Name: Acme Plumbing\n"
        "- Phone: 03 9999 9999, +61400000000\n"
        "- Email: hello@acme.example, jobs@acme.example\n"
        "- Address: 1 Smith St, Richmond\n"
        "- Areas served: Richmond, Kew\n"
        "- Price range: $$\n\n"
        "Opening hours:\n\n"
        "| Day | Hours |\n| --- | --- |\n"
        "| Monday | 08:00-17:00 |\n| Tuesday | 08:00-17:00 |\n| Wednesday | 08:00-17:00 |\n"
        "| Thursday | 08:00-17:00 |\n| Friday | 08:00-17:00 |\n| Saturday | 09:00-12:00, 13:00-15:00 |\n"
        "| Sunday | Closed |"
    )


def test_facts_passage_names_where_the_hours_are_and_the_other_locations() -> None:
    facts = extract_facts(jsonld_page(CLINIC))
    assert facts_passage(facts) == (
        "# Business details\n\n"
        "- Name: Northside Dental\n"
        "- Phone: 07 3350 4120\n"
        "- Address: 812 Gympie Rd, Chermside\n\n"
        "Opening hours at 812 Gympie Rd, Chermside:\n\n"
        "| Day | Hours |\n| --- | --- |\n"
        "| Monday | 08:00-18:00 |\n| Tuesday | 08:00-18:00 |\n| Wednesday | 08:00-18:00 |\n"
        "| Thursday | 08:00-18:00 |\n| Friday | 08:00-18:00 |\n| Saturday | Closed |\n| Sunday | Closed |\n\n"
        "Other locations:\n\n"
        "- Northside Dental Aspley: 1401 Albany Creek Rd, Aspley; phone 07 3263 8810; "
        "hours Monday-Wednesday 08:00-17:30, Thursday 08:00-19:00, Friday-Sunday closed"
    )


@pytest.mark.parametrize(
    ("facts", "site_name", "passage"),
    [
        (Facts(), "", ""),
        (Facts(), "Acme", "# Business details\n\n- Name: Acme"),
        (Facts(phones=["+61399999999"]), "", "# Business details\n\n- Phone: +61399999999"),
        (Facts(name="Real name"), "Acme", "# Business details\n\n- Name: Real name"),
    ],
)
def test_facts_passage_has_only_lines_with_values(facts: Facts, site_name: str, passage: str) -> None:
    assert facts_passage(facts, site_name) == passage
