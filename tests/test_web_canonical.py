"""helppuff_crawl.web.canonical: which page a page's canonical links name, and why the others are ignored
(the end-to-end side: tests/test_crawl_identity.py, tests/test_crawl_template_canonical.py)."""

from __future__ import annotations

import pytest
from parsel import Selector

from helppuff_crawl.web.canonical import CanonicalLink, canonical_hrefs, canonical_link
from helppuff_crawl.web.robots import RobotsRules

A = "https://acme.example"
PAGE = f"{A}/print-menu"
ROBOTS = {"acme.example": RobotsRules.parse("User-agent: *\nDisallow: /private/\n", "helppuff-crawler")}

LINKS = [
    # hrefs (resolved against the page): what they come to
    pytest.param([], CanonicalLink(), id="none"),
    pytest.param(["/menu"], CanonicalLink(f"{A}/menu"), id="another-page"),
    pytest.param(["menu/"], CanonicalLink(f"{A}/menu"), id="relative-and-normalised"),
    pytest.param(["https://www.acme.example/menu"], CanonicalLink("https://www.acme.example/menu"), id="www-is-the-site"),
    pytest.param(["/menu", "https://acme.example/menu/"], CanonicalLink(f"{A}/menu"), id="several-naming-one-url"),
    pytest.param(["/menu", "/prices"], CanonicalLink(ignored="several canonical links"), id="several-that-disagree"),
    pytest.param(["/menu", "http://[broken"], CanonicalLink(ignored="several canonical links"),
                 id="one-of-several-broken"),
    pytest.param(["http://[broken"], CanonicalLink(ignored="not a web address"), id="broken"),
    pytest.param(["mailto:hello@acme.example"], CanonicalLink(ignored="not a web address"), id="not-web"),
    pytest.param(["/print-menu"], CanonicalLink(), id="the-page-itself"),
    pytest.param(["/print-menu/"], CanonicalLink(), id="the-page-itself-spelled-otherwise"),
    pytest.param(["/print-menu.html"], CanonicalLink(), id="the-url-the-fetch-ended-at"),
    pytest.param(["https://shop.example/menu"], CanonicalLink(ignored="another site"), id="another-site"),
    pytest.param(["/menu.pdf"], CanonicalLink(ignored="not a page to learn"), id="a-file"),
    pytest.param(["/my-account"], CanonicalLink(ignored="not a page to learn"), id="an-account-screen"),
    pytest.param(["/privacy-policy"], CanonicalLink(ignored="unticked"), id="a-legal-page"),
    pytest.param(["/tag/cakes/"], CanonicalLink(ignored="unticked"), id="an-archive-page"),
    pytest.param(["/checkout-info"], CanonicalLink(ignored="unticked"), id="a-default-exclude"),
    pytest.param(["/private/menu"], CanonicalLink(ignored="robots.txt"), id="disallowed"),
]


@pytest.mark.parametrize(("hrefs", "expected"), LINKS)
def test_the_page_a_canonical_link_names_or_why_it_is_ignored(hrefs: list[str], expected: CanonicalLink) -> None:
    found = canonical_link(hrefs, PAGE, page=PAGE, final=f"{A}/print-menu.html", start=A, robots=ROBOTS)
    assert found == expected


def test_the_tick_globs_and_the_robots_rules_are_the_crawls() -> None:
    def link(href: str, **globs: tuple[str, ...]) -> CanonicalLink:
        return canonical_link([href], PAGE, page=PAGE, final=PAGE, start=A, robots={}, **globs)

    assert link("/private/menu") == CanonicalLink(f"{A}/private/menu")  # no robots.txt read for the host
    assert link("/old/menu", exclude=("**/old/**",)) == CanonicalLink(ignored="unticked")
    assert link("/checkout-info", exclude=()) == CanonicalLink(f"{A}/checkout-info")  # no excludes: not the defaults
    assert link("/privacy-policy", include=("**/privacy-policy",)) == CanonicalLink(f"{A}/privacy-policy")


def test_canonical_hrefs_are_the_links_whose_rel_names_canonical() -> None:
    page = Selector(text="""<html><head><base href="https://acme.example/en/">
        <link rel="stylesheet" href="/site.css"><link rel="Canonical" href=" /menu ">
        <link rel="alternate canonical" href="menu-2"><link rel="canonical"><link rel="noncanonical" href="/x">
        </head><body><link rel="canonical" href="/late"></body></html>""")
    assert canonical_hrefs(page) == [" /menu ", "menu-2", "/late"]
    assert canonical_link(canonical_hrefs(page)[:1], "https://acme.example/en/", page=PAGE, final=PAGE, start=A,
                          robots={}) == CanonicalLink(f"{A}/menu")
