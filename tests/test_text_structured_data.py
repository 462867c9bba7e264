"""helppuff_crawl.text.structured_data: business facts from JSON-LD, microdata, RDFa and links, on inline HTML."""

from __future__ import annotations

import json
from typing import Any

import pytest

from helppuff_crawl.text.business_facts import Facts, Location
from helppuff_crawl.text.hours import DAYS
from helppuff_crawl.text.structured_data import extract_facts


def jsonld_page(*blocks: Any) -> str:
    scripts = "".join(
        f"<script type='application/ld+json'>{b if isinstance(b, str) else json.dumps(b)}</script>" for b in blocks
    )
    return f"<html><head>{scripts}</head><body><p>Page</p></body></html>"


def week_of(**days: list[tuple[str, str]]) -> dict[str, list[tuple[str, str]]]:
    return {day: days.get(day, []) for day in DAYS}


PLUMBER = {
    "@context": "https://schema.org", "@type": "Plumber", "name": "Acme Plumbing", "telephone": "03 9999 9999",
    "email": "mailto:Hello@Acme.example", "priceRange": "$$",
    "address": {"@type": "PostalAddress", "streetAddress": "1 Smith St", "addressLocality": "Richmond",
                "addressRegion": "VIC", "postalCode": "3121", "addressCountry": {"@type": "Country", "name": "AU"}},
    "openingHours": ["Mo-Fr 08:00-17:00", "Sa 09:00-12:00"],
    "areaServed": ["Richmond", {"@type": "City", "name": "Hawthorn"}],
}
WORKDAYS = {day: [("08:00", "17:00")] for day in DAYS[:5]}


def test_local_business() -> None:
    facts = extract_facts(jsonld_page(PLUMBER))
    assert facts == Facts(
        name="Acme Plumbing", telephone="03 9999 9999", email="hello@acme.example",
        address="1 Smith St, Richmond, VIC, 3121, AU", hours=week_of(**WORKDAYS, Saturday=[("09:00", "12:00")]),
        areas=["Richmond", "Hawthorn"], price_range="$$",
    )


BUSINESS_SHAPES = [
    pytest.param({"@type": "Dentist", "name": "Smile"}, "Smile", id="subtype"),
    pytest.param({"@type": "HomeAndConstructionBusiness", "name": "Builders"}, "Builders", id="business-in-name"),
    pytest.param({"@type": ["LocalBusiness", "Restaurant"], "name": "Cafe"}, "Cafe", id="type-list"),
    pytest.param({"@type": "http://schema.org/Restaurant", "name": "Diner"}, "Diner", id="type-url"),
    pytest.param({"@context": "https://schema.org", "@graph": [{"@type": "WebSite", "name": "Site"},
                                                                {"@type": "MedicalBusiness", "name": "Clinic"}]},
                 "Clinic", id="graph"),
    pytest.param({"@type": "Service", "name": "Drain cleaning", "provider": {"@type": "Plumber", "name": "Acme"}},
                 "Acme", id="nested"),
    pytest.param([{"@type": "Organization", "name": "Acme Group"}, {"@type": "Electrician", "name": "Acme Sparks"}],
                 "Acme Sparks", id="local-business-before-organization"),
    pytest.param({"@type": "Corporation", "name": "Acme Corp"}, "Acme Corp", id="organization"),
    pytest.param({"@type": "organization", "name": "Lower Case"}, "Lower Case", id="any-case"),
    pytest.param({"@type": "WebPage", "name": "Home"}, "", id="not-a-business"),
]


@pytest.mark.parametrize(("data", "name"), BUSINESS_SHAPES)
def test_business_shapes(data: Any, name: str) -> None:
    facts = extract_facts(jsonld_page(data))
    assert (facts.name, facts.problems) == (name, [])


def test_gaps_are_filled_from_the_other_business_entities() -> None:
    facts = extract_facts(jsonld_page({"@type": "Plumber", "name": "Acme"},
                                  {"@type": "Organization", "name": "Acme Group", "telephone": "1300 000 000"}))
    assert (facts.name, facts.telephone) == ("Acme", "1300 000 000")


CLINIC = {
    "@context": "https://schema.org", "@type": "Dentist", "name": "Northside Dental", "telephone": "07 3350 4120",
    "address": {"@type": "PostalAddress", "streetAddress": "812 Gympie Rd", "addressLocality": "Chermside"},
    "openingHours": "Mo-Fr 08:00-18:00",
    "department": [
        {"@type": "Dentist", "name": "Northside Dental Aspley", "telephone": "07 3263 8810",
         "address": {"@type": "PostalAddress", "streetAddress": "1401 Albany Creek Rd", "addressLocality": "Aspley"},
         "openingHours": ["Mo-We 08:00-17:30", "Th 08:00-19:00"]},
        {"@type": "MedicalClinic", "name": "Same place", "address": "812 Gympie Rd, CHERMSIDE", "telephone": "1300"},
    ],
}


def test_a_second_location_is_kept_apart() -> None:
    facts = extract_facts(jsonld_page(CLINIC))
    assert (facts.name, facts.telephone, facts.address) == ("Northside Dental", "07 3350 4120", "812 Gympie Rd, Chermside")
    assert facts.hours == week_of(**{day: [("08:00", "18:00")] for day in DAYS[:5]})  # not Aspley's
    assert facts.locations == [Location(
        name="Northside Dental Aspley", address="1401 Albany Creek Rd, Aspley", telephone="07 3263 8810",
        hours=week_of(**{day: [("08:00", "17:30")] for day in DAYS[:3]}, Thursday=[("08:00", "19:00")]),
    )]
    assert json.loads(json.dumps(facts.as_dict()))["locations"][0]["hours"]["Thursday"] == [["08:00", "19:00"]]


@pytest.mark.parametrize(
    ("address", "line"),
    [
        ("  12 High St,\n Kew ", "12 High St, Kew"),
        ({"@type": "PostalAddress", "addressLocality": "Kew", "postalCode": "3101"}, "Kew, 3101"),
        ([{"@type": "PostalAddress", "streetAddress": "1 A St"}, {"streetAddress": "2 B St"}], "1 A St"),
    ],
)
def test_address(address: Any, line: str) -> None:
    assert extract_facts(jsonld_page({"@type": "Plumber", "address": address})).address == line


OPENING_HOURS = [
    pytest.param("Mo-Fr 08:00-17:00", week_of(**WORKDAYS), id="range"),
    pytest.param("Mo,Tu,We 09:00-17:00", week_of(Monday=[("09:00", "17:00")], Tuesday=[("09:00", "17:00")],
                                                Wednesday=[("09:00", "17:00")]), id="day-list"),
    pytest.param(["Sa 09:00-12:00"], week_of(Saturday=[("09:00", "12:00")]), id="one-day"),
    pytest.param("Mo 08:00-12:00,13:00-17:00", week_of(Monday=[("08:00", "12:00"), ("13:00", "17:00")]), id="split-day"),
    pytest.param("Sa-Mo 10:00-14:00", week_of(Saturday=[("10:00", "14:00")], Sunday=[("10:00", "14:00")],
                                            Monday=[("10:00", "14:00")]), id="wraps-the-week"),
    pytest.param("Mo-Fr 08:00-17:00 Sa 9:00-12:00", week_of(**WORKDAYS, Saturday=[("09:00", "12:00")]),
                 id="two-specs-in-one-string"),
    pytest.param("Monday-Friday 8am-5:30pm", week_of(**{d: [("08:00", "17:30")] for d in DAYS[:5]}),
                 id="words-and-am-pm"),
    pytest.param("24/7", {day: [("00:00", "24:00")] for day in DAYS}, id="always"),
]


@pytest.mark.parametrize(("value", "week"), OPENING_HOURS)
def test_opening_hours_strings(value: Any, week: dict[str, list[tuple[str, str]]]) -> None:
    facts = extract_facts(jsonld_page({"@type": "Plumber", "openingHours": value}))
    assert (facts.hours, facts.problems) == (week, [])


SPECIFICATIONS = [
    pytest.param({"@type": "OpeningHoursSpecification", "dayOfWeek": "Monday", "opens": "08:00", "closes": "17:00"},
                 week_of(Monday=[("08:00", "17:00")]), id="one-object"),
    pytest.param([{"dayOfWeek": "https://schema.org/Tuesday", "opens": "08:00:00", "closes": "16:30:00"},
                  {"dayOfWeek": "http://schema.org/Saturday", "opens": "9:00", "closes": "12:00"}],
                 week_of(Tuesday=[("08:00", "16:30")], Saturday=[("09:00", "12:00")]), id="list-and-urls"),
    pytest.param({"dayOfWeek": ["Monday", "Friday"], "opens": "07:00", "closes": "15:00"},
                 week_of(Monday=[("07:00", "15:00")], Friday=[("07:00", "15:00")]), id="day-list"),
    pytest.param([{"dayOfWeek": "Monday", "opens": "08:00", "closes": "17:00"},
                  {"dayOfWeek": "Sunday", "opens": "00:00", "closes": "00:00"}],
                 week_of(Monday=[("08:00", "17:00")]), id="closed-all-day"),
    pytest.param([{"dayOfWeek": "Monday", "opens": "08:00", "closes": "17:00"},
                  {"dayOfWeek": "Monday", "opens": "10:00", "closes": "14:00", "validFrom": "2024-12-25",
                   "validThrough": "2024-12-25"}],
                 week_of(Monday=[("08:00", "17:00")]), id="holiday-special-skipped"),
]


@pytest.mark.parametrize(("spec", "week"), SPECIFICATIONS)
def test_opening_hours_specification(spec: Any, week: dict[str, list[tuple[str, str]]]) -> None:
    facts = extract_facts(jsonld_page({"@type": "Dentist", "openingHoursSpecification": spec}))
    assert (facts.hours, facts.problems) == (week, [])


@pytest.mark.parametrize(
    ("area", "areas", "problems"),
    [
        ("Melbourne", ["Melbourne"], []),
        (["Kew", "Kew", "Hawthorn"], ["Kew", "Hawthorn"], []),
        ([{"@type": "Place", "name": "Geelong"}, {"@type": "GeoCircle", "geoRadius": 5}], ["Geelong"], []),
        ([["Kew"], "Carlton"], ["Carlton"], ["areaServed: nested list skipped"]),
    ],
)
def test_areas_served(area: Any, areas: list[str], problems: list[str]) -> None:
    facts = extract_facts(jsonld_page({"@type": "Plumber", "areaServed": area}))
    assert (facts.areas, facts.problems) == (areas, problems)


def test_odd_values_are_skipped_and_listed() -> None:
    facts = extract_facts(jsonld_page({"@type": "Plumber", "name": "Acme", "telephone": 399999999, "priceRange": 3,
                                   "openingHours": "whenever", "openingHoursSpecification": [
                                       {"dayOfWeek": "Funday", "opens": "08:00", "closes": "17:00"}, "Mo"]}))
    assert (facts.name, facts.telephone, facts.price_range, facts.hours) == ("Acme", "", "", {})
    assert facts.problems == [
        "telephone: int 399999999 where text was expected",
        "openingHours: cannot read 'whenever'",
        "dayOfWeek: unknown day 'Funday'",
        "openingHoursSpecification: str where an object was expected",
        "priceRange: int 3 where text was expected",
    ]


def test_broken_json_in_one_block_keeps_the_others() -> None:
    facts = extract_facts(jsonld_page(
        {"@type": "WebSite", "name": "Site"},
        '{"@type": "Plumber", "name": "Broken",',
        {"@type": "Plumber", "name": "Acme", "telephone": "03 9999 9999"},
    ))
    assert (facts.name, facts.telephone) == ("Acme", "03 9999 9999")
    assert facts.problems == ["jsonld: invalid JSON at block 2 (Expecting property name enclosed in double quotes)"]


@pytest.mark.parametrize(
    "raw",
    [
        '<!-- {"@type": "Plumber", "name": "Acme"} -->',
        '//<![CDATA[\n{"@type": "Plumber", "name": "Acme"}\n//]]>',
        '{"@type": "Plumber", "name": "Acme",}',
        '// structured data\n{"@type": "Plumber", "name": "Acme"}',
    ],
)
def test_common_json_ld_slips_are_read(raw: str) -> None:
    facts = extract_facts(jsonld_page(raw))
    assert (facts.name, facts.problems) == ("Acme", [])


def test_unknown_types_are_listed_and_skipped() -> None:
    facts = extract_facts(jsonld_page({"@type": "Foo", "name": "x", "telephone": "1"},
                                  [1, {"@type": "Dentist", "name": "D"}]))
    assert (facts.name, facts.telephone) == ("D", "")
    assert facts.problems == ["unknown type Foo", "structured data: int where an object was expected"]


def test_faq_page() -> None:
    faq = {"@context": "https://schema.org", "@type": "FAQPage", "mainEntity": [
        {"@type": "Question", "name": "Do you charge a call-out fee?",
         "acceptedAnswer": {"@type": "Answer", "text": "<p>Yes, $99.</p><p>Waived if you <b>go ahead</b>.</p>"}},
        {"@type": "Question", "name": "Weekends?", "acceptedAnswer": [{"@type": "Answer", "text": "Saturdays."}]},
        {"@type": "Question", "name": "No answer?"},
    ]}
    single = {"@type": "FAQPage", "mainEntity": {"@type": "Question", "name": "Parking?",
                                                 "acceptedAnswer": {"text": "Out the back."}}}
    assert extract_facts(jsonld_page(faq, single)).faq == [
        ("Do you charge a call-out fee?", "Yes, $99. Waived if you go ahead."),
        ("Weekends?", "Saturdays."),
        ("Parking?", "Out the back."),
    ]


def test_links_and_description() -> None:
    html = (
        "<html><head><meta property='og:description' content='OG'>"
        "<meta name='description' content=' Plumbers  in Kew '>"
        "</head><body><a href='tel:+61 3 9999-9999'>Call</a><a href='TEL:(03)%209999%209999'>Call</a>"
        "<a href='tel:+61399999999'>Again</a><a href='mailto:Hello@Acme.example?subject=Quote'>Mail</a>"
        "<a href='mailto:a@x.example,B@y.example'>Both</a><a href='mailto:'>Empty</a><a href='tel:1'>Short</a>"
        "</body></html>"
    )
    facts = extract_facts(html)
    assert facts.phones == ["+61399999999", "0399999999"]
    assert facts.emails == ["hello@acme.example", "a@x.example", "b@y.example"]
    assert facts.description == "Plumbers in Kew"


def test_microdata() -> None:
    html = (
        "<html><body><div itemscope itemtype='https://schema.org/Plumber'><span itemprop='name'>Acme</span>"
        "<span itemprop='telephone'>03 9999 9999</span><div itemprop='address' itemscope "
        "itemtype='https://schema.org/PostalAddress'><span itemprop='streetAddress'>1 Smith St</span>"
        "<span itemprop='addressLocality'>Richmond</span></div>"
        "<meta itemprop='openingHours' content='Sa 09:00-12:00'></div></body></html>"
    )
    facts = extract_facts(html, "https://acme.example/")
    assert (facts.name, facts.telephone, facts.address, facts.hours) == (
        "Acme", "03 9999 9999", "1 Smith St, Richmond", week_of(Saturday=[("09:00", "12:00")]))


def test_rdfa() -> None:
    html = (
        "<html><body><div vocab='https://schema.org/' typeof='Dentist'><span property='name'>Smile Dental</span>"
        "<span property='telephone'>03 8888 8888</span><div property='address' typeof='PostalAddress'>"
        "<span property='streetAddress'>2 Jones Rd</span><span property='addressLocality'>Kew</span></div>"
        "</div></body></html>"
    )
    facts = extract_facts(html, "https://smile.example/")
    assert (facts.name, facts.telephone, facts.address) == ("Smile Dental", "03 8888 8888", "2 Jones Rd, Kew")


@pytest.mark.parametrize("html", ["", b"", "<html></html>", "not html at all"])
def test_nothing_to_read(html: str | bytes) -> None:
    assert extract_facts(html) == Facts()


