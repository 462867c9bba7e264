"""The site spider's arguments and config (spiders/arguments.py): each bad argument or setting is refused
with its name, and the pages a targeted crawl names (`only`) are normalised, those not of the site
refused with the reason."""

from __future__ import annotations

import json
from typing import Any

import pytest

from helppuff_crawl.spiders.arguments import MAX_NAMED_PAGES, CrawlConfig, SiteArgs
from tests.crawlers import component_crawler

HOME = "https://acme.com.au"


@pytest.mark.parametrize(("arguments", "message"), [
    ({}, "url: required"),
    ({"url": "https://acme.com.au", "max_pages": "lots"}, "max_pages: expected a whole number"),
    ({"url": "https://acme.com.au", "max_pages": "5000"}, "max_pages: must be between 1 and 1000"),
    ({"url": "https://acme.com.au", "render_js": "sometimes"}, "render_js: must be one of"),
    ({"url": "https://acme.com.au", "site": "Acme Plumbing!"}, "site: use letters"),
    ({"url": "https://acme.com.au", "colour": "blue"}, "unknown argument colour"),
])
def test_bad_arguments_name_the_argument(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SiteArgs.parse(**arguments)


@pytest.mark.parametrize(("settings", "message"), [
    ({"HELPPUFF_MAX_PAGES": 0}, "HELPPUFF_MAX_PAGES must be between 1 and 1000"),
    ({"HELPPUFF_RENDER_JS": "maybe"}, "HELPPUFF_RENDER_JS must be one of"),
    ({"HELPPUFF_DISCOVERY_MAX_FETCHES": 1}, "HELPPUFF_DISCOVERY_MAX_FETCHES must be >= 2"),
    ({"HELPPUFF_SCRIPT_LINKS_MAX_FETCHES": -1}, "HELPPUFF_SCRIPT_LINKS_MAX_FETCHES must be >= 0"),
])
def test_bad_settings_name_the_setting(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CrawlConfig.from_settings(component_crawler(**settings).settings)


# --- only: a targeted crawl -------------------------------------------------------------------

@pytest.mark.parametrize(("only", "message"), [
    ("not json", "only: expected a JSON list of page URLs"),
    ('{"url": "https://acme.com.au/a"}', "only: expected a JSON list of page URLs (strings)"),
    ("[1, 2]", "only: expected a JSON list of page URLs (strings)"),
    (json.dumps([f"{HOME}/p{i}" for i in range(MAX_NAMED_PAGES + 1)]), "only: at most 100 pages, got 101"),
    ('["ftp://acme.com.au/a"]', "only: not an http(s) URL: 'ftp://acme.com.au/a'"),
    ('["acme.com.au/a"]', "only: not an http(s) URL"),
    ('["mailto:hello@acme.com.au"]', "only: not an http(s) URL"),
    ('["https://elsewhere.example/a"]', "only: not one page named is on the site acme.com.au"),
])
def test_a_bad_only_argument_is_refused_with_its_name(only: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        SiteArgs.parse(url=HOME, only=only)
    assert message in str(raised.value)


def test_the_pages_named_are_normalised_and_those_of_another_site_refused() -> None:
    args = SiteArgs.parse(url=HOME, only=json.dumps([
        "https://acme.com.au/contact/", "HTTPS://ACME.com.au/contact#form", f"{HOME}/faq?utm_source=mail",
        "https://elsewhere.example/contact", f"{HOME}/brochure.pdf", f"{HOME}/my-account"]))
    assert args.only == (f"{HOME}/contact", f"{HOME}/faq")
    assert dict(args.refused) == {
        "https://elsewhere.example/contact": "another site: elsewhere.example is not acme.com.au",
        f"{HOME}/brochure.pdf": "not a page to learn (file: .pdf)",
        f"{HOME}/my-account": "not a page to learn (account screen: my-account)",
    }
    # The same list given as a list (a test or a caller in Python), and exactly 100 pages: still a targeted crawl.
    assert SiteArgs.parse(url=HOME, only=[f"{HOME}/contact"]).only == (f"{HOME}/contact",)
    assert len(SiteArgs.parse(url=HOME, only=[f"{HOME}/p{i}" for i in range(MAX_NAMED_PAGES)]).only) == 100


@pytest.mark.parametrize("only", [None, "", "[]"])
def test_no_page_named_is_a_full_crawl(only: str | None) -> None:
    args = SiteArgs.parse(url=HOME, only=only)
    assert args.only == () and args.refused == ()
