"""Tests for helppuff_crawl.web.categories: categories, default ticks and globs."""

from __future__ import annotations

import pytest
from lxml import etree, html

from helppuff_crawl.schema.contract import CATEGORIES
from helppuff_crawl.web.categories import (
    CATEGORY_KEYS,
    DEFAULT_EXCLUDE,
    TickDecision,
    categorize,
    decide_tick,
    glob_match,
)
from tests.conftest import shared_data

A = "https://acme.com.au"

CATEGORIZE_CASES = [
    # home
    (f"{A}/", "", "home"),
    (A, "Anything at all", "home"),
    (f"{A}/?utm_source=x", "", "home"),
    (f"{A}/index.html", "", "home"),
    (f"{A}/home", "", "home"),
    (f"{A}/x", "Home | Acme", "home"),
    # service
    (f"{A}/services/hot-water", "", "service"),
    (f"{A}/services", "", "service"),
    (f"{A}/our-services/", "", "service"),
    (f"{A}/what-we-do", "", "service"),
    (f"{A}/blocked-drain-repairs", "", "service"),
    (f"{A}/hot-water", "Hot Water Repairs | Acme", "service"),
    # product
    (f"{A}/shop/copper-fittings", "", "product"),
    (f"{A}/products/tap-washer", "", "product"),
    (f"{A}/product/2001", "", "product"),
    (f"{A}/shop", "", "product"),
    (f"{A}/collections/taps", "", "product"),
    # location
    (f"{A}/plumber-melbourne", "", "location"),
    (f"{A}/plumber-in-richmond", "", "location"),
    (f"{A}/electricians-st-kilda", "", "location"),
    (f"{A}/plumbing-in-south-yarra", "", "location"),
    (f"{A}/emergency-plumber-near-me", "", "location"),
    (f"{A}/areas/richmond", "", "location"),
    (f"{A}/areas-we-service/richmond", "", "location"),
    (f"{A}/locations/brunswick", "", "location"),
    (f"{A}/service-areas", "", "location"),
    (f"{A}/services/plumber-richmond", "", "location"),
    (f"{A}/x", "Areas We Service | Acme", "location"),
    # about, contact, faq
    (f"{A}/about-us", "", "about"),
    (f"{A}/about", "", "about"),
    (f"{A}/who-we-are", "", "about"),
    (f"{A}/why-choose-us", "", "about"),
    (f"{A}/contact", "", "contact"),
    (f"{A}/contact-us.html", "", "contact"),
    (f"{A}/get-a-quote", "", "contact"),
    (f"{A}/x", "Contact Us", "contact"),
    (f"{A}/faq", "", "faq"),
    (f"{A}/faqs", "", "faq"),
    (f"{A}/questions", "", "faq"),
    (f"{A}/x", "Frequently Asked Questions — Acme", "faq"),
    # pricing
    (f"{A}/pricing", "", "pricing"),
    (f"{A}/prices", "", "pricing"),
    (f"{A}/rates", "", "pricing"),
    (f"{A}/fees", "", "pricing"),
    (f"{A}/cost", "", "pricing"),
    (f"{A}/how-much-does-a-plumber-cost", "", "pricing"),
    (f"{A}/fee-schedule", "", "pricing"),
    (f"{A}/x", "Our Prices | Acme", "pricing"),
    # blog
    (f"{A}/blog", "", "blog"),
    (f"{A}/blog/pricing-guide", "", "blog"),
    (f"{A}/news/our-new-van", "", "blog"),
    (f"{A}/articles/x", "", "blog"),
    (f"{A}/posts/x", "", "blog"),
    (f"{A}/2019/05/some-post", "", "blog"),
    (f"{A}/2019/some-post", "", "blog"),
    (f"{A}/tag/hot-water", "", "blog"),
    (f"{A}/category/tips", "", "blog"),
    # team, testimonials, booking
    (f"{A}/team", "", "team"),
    (f"{A}/our-team", "", "team"),
    (f"{A}/about/team", "", "team"),
    (f"{A}/staff", "", "team"),
    (f"{A}/people", "", "team"),
    (f"{A}/x", "Meet the Team", "team"),
    (f"{A}/testimonials", "", "testimonials"),
    (f"{A}/reviews", "", "testimonials"),
    (f"{A}/book", "", "booking"),
    (f"{A}/booking", "", "booking"),
    (f"{A}/book-a-service", "", "booking"),
    (f"{A}/schedule", "", "booking"),
    (f"{A}/appointments", "", "booking"),
    (f"{A}/x", "Book Online | Acme", "booking"),
    # legal: what a visitor does not ask the chat about
    (f"{A}/privacy", "", "legal"),
    (f"{A}/privacy-policy", "", "legal"),
    (f"{A}/policies/privacy-policy", "", "legal"),
    (f"{A}/terms-of-use", "", "legal"),
    (f"{A}/legal", "", "legal"),
    (f"{A}/legal-notice", "", "legal"),
    (f"{A}/cookies", "", "legal"),
    (f"{A}/cookie-policy", "", "legal"),
    (f"{A}/disclaimer", "", "legal"),
    (f"{A}/gdpr", "", "legal"),
    (f"{A}/imprint", "", "legal"),
    (f"{A}/impressum.html", "", "legal"),
    (f"{A}/datenschutz.html", "", "legal"),
    (f"{A}/copyright", "", "legal"),
    (f"{A}/x", "Privacy Policy | Acme", "legal"),
    (f"{A}/x", "Cookie Policy", "legal"),
    # policy: the rules of trade a visitor asks about
    (f"{A}/cancellation-policy.html", "", "policy"),
    (f"{A}/cancellations", "", "policy"),
    (f"{A}/refund-policy", "", "policy"),
    (f"{A}/refunds", "", "policy"),
    (f"{A}/returns", "", "policy"),
    (f"{A}/returns-and-exchanges", "", "policy"),
    (f"{A}/deposits", "", "policy"),
    (f"{A}/no-show-policy", "", "policy"),
    (f"{A}/our-guarantee", "", "policy"),
    (f"{A}/warranty", "", "policy"),
    (f"{A}/shipping", "", "policy"),
    (f"{A}/shipping-and-delivery", "", "policy"),
    (f"{A}/booking-policy", "", "policy"),
    (f"{A}/payment-policy", "", "policy"),
    (f"{A}/policies", "", "policy"),
    (f"{A}/salon-policy", "", "policy"),
    (f"{A}/legal/cancellation-policy", "", "policy"),
    (f"{A}/terms", "", "policy"),
    (f"{A}/terms-of-service", "", "policy"),
    (f"{A}/terms-and-conditions", "", "policy"),
    (f"{A}/terms-of-trade", "", "policy"),
    (f"{A}/tos", "", "policy"),
    (f"{A}/agb.html", "", "policy"),
    (f"{A}/x", "Terms and Conditions", "policy"),
    (f"{A}/x", "Cancellation Policy | Acme", "policy"),
    # words that must not match
    (f"{A}/cartography", "", "other"),
    (f"{A}/bookkeeping", "", "other"),
    (f"{A}/facebook", "", "other"),
    (f"{A}/accounting-services", "", "service"),
    (f"{A}/plumbing-terms-explained", "", "other"),
    (f"{A}/tax-returns", "", "other"),
    (f"{A}/payment", "", "pricing"),
    (f"{A}/teamwork", "", "other"),
    (f"{A}/plumber-jobs", "", "other"),
    (f"{A}/emergency-plumber", "", "other"),
    (f"{A}/gallery", "Gallery | Acme", "other"),
    (f"{A}/hot-water", "", "other"),
    (f"{A}/hot-water", "Hot Water Systems | Acme", "other"),
    (f"{A}/x", "Plumbers you can trust", "other"),
    (f"{A}/x", "Acme Plumbing Services", "service"),
    (f"{A}/x", "Gallery | Acme Plumbing Services", "other"),
    (f"{A}/x", "Welcome", "other"),
    # the path wins over the title
    (f"{A}/contact", "Our Services | Acme", "contact"),
    (f"{A}/services/hot-water", "Hot Water FAQ", "service"),
    # opening hours are contact details
    (f"{A}/opening-hours", "", "contact"),
    (f"{A}/hours", "", "contact"),
    # a page named in the site's own language (../shared/data/sites/zahnarzt-werland's among them)
    ("https://www.zahnarztpraxis-werland.de/kontakt.html", "", "contact"),
    ("https://www.zahnarztpraxis-werland.de/sprechzeiten.html", "", "contact"),
    ("https://www.zahnarztpraxis-werland.de/anfahrt.html", "", "location"),
    ("https://www.zahnarztpraxis-werland.de/leistungen.html", "", "service"),
    ("https://www.zahnarztpraxis-werland.de/leistungen/implantologie.html", "", "service"),
    ("https://www.zahnarztpraxis-werland.de/zahnarzt.html", "", "other"),
    ("https://praxis.de/%C3%BCber-uns", "", "about"),
    ("https://praxis.de/ueber-uns", "", "about"),
    ("https://praxis.de/%C3%B6ffnungszeiten", "", "contact"),
    ("https://praxis.de/termin-online-buchen", "", "booking"),
    ("https://praxis.de/preise", "", "pricing"),
    ("https://praxis.de/kontakt-und-anfahrt", "", "contact"),
    ("https://praxis.de/x", "Kontakt — Zahnarztpraxis Werland", "contact"),
    ("https://salon.fr/horaires", "", "contact"),
    ("https://salon.fr/qui-sommes-nous", "", "about"),
    ("https://salon.fr/prestations", "", "service"),
    ("https://clinica.es/contacto", "", "contact"),
    ("https://clinica.es/como-llegar", "", "location"),
    ("https://clinica.es/pedir-cita", "", "booking"),
    ("https://studio.it/chi-siamo", "", "about"),
    ("https://studio.it/dove-siamo", "", "location"),
    ("https://bakkerij.nl/openingstijden", "", "contact"),
    ("https://bakkerij.nl/over-ons", "", "about"),
    # words are whole words of any alphabet: "überall" is not "über"
    ("https://praxis.de/%C3%BCberall-kontaktlos", "", "other"),
]


@pytest.mark.parametrize(("url", "title", "expected"), CATEGORIZE_CASES)
def test_categorize(url: str, title: str, expected: str) -> None:
    assert categorize(url, title) == expected


def test_categorize_returns_only_known_categories() -> None:
    found = {categorize(url, title) for url, title, _ in CATEGORIZE_CASES}
    assert found == set(CATEGORIES)


# The real site ga-plumbing, as reached on loopback. 404.html is reachable too (a link target of
# broken pages); its title is just "404", so it is other.
GA_PLUMBING = {
    "index.html": "home",
    "about.html": "about",
    "contact.html": "contact",
    "faq.html": "faq",
    "financing.html": "pricing",
    "gallery.html": "other",
    "reviews.html": "testimonials",
    "schedule.html": "booking",
    "services.html": "service",
    "videos.html": "other",
    "404.html": "other",
}


# The policy pages of the real sites: what a visitor may ask about is learned, the rest is legal.
REAL_SITE_POLICIES = {
    ("affairs-of-beauty", "cancellation-policy.html"): ("policy", True),  # deposits, no-shows, late arrivals
    ("affairs-of-beauty", "terms-of-service.html"): ("policy", True),  # payment methods, rescheduling, guarantee
    ("affairs-of-beauty", "privacy-policy.html"): ("legal", False),
    ("eagle-eye-backflow", "privacy-policy.html"): ("legal", False),
    ("zahnarzt-werland", "datenschutz.html"): ("legal", False),  # German: data protection
    ("zahnarzt-werland", "impressum.html"): ("legal", False),
}


@pytest.mark.parametrize(("site", "name"), sorted(REAL_SITE_POLICIES))
def test_real_sites_policy_pages_are_learned_and_legal_ones_are_not(site: str, name: str) -> None:
    page = shared_data("sites", site, name)
    title = html.parse(str(page)).findtext(".//title") or ""
    url = f"http://127.0.0.1:8000/{name}"
    category = categorize(url, title)
    assert (category, decide_tick(url, category).ticked) == REAL_SITE_POLICIES[(site, name)]
    assert categorize(f"http://127.0.0.1:8000/x/{name}", "") == category  # by the path alone too


def test_categorize_ga_plumbing_pages() -> None:
    site = shared_data("sites", "ga-plumbing")
    sitemap = etree.parse(str(site / "sitemap.xml"))
    locs = sitemap.xpath("//s:loc/text()", namespaces={"s": "http://www.sitemaps.org/schemas/sitemap/0.9"})
    listed = {loc.rsplit("/", 1)[1] or "index.html" for loc in locs}
    assert listed <= set(GA_PLUMBING)
    found = {}
    for name in GA_PLUMBING:
        title = html.parse(str(site / name)).findtext(".//title") or ""
        assert title, name
        found[name] = categorize(f"http://127.0.0.1:8000/{name}", title)
    assert found == GA_PLUMBING
    assert categorize("http://127.0.0.1:8000/", "GA Plumbing — Emergency, Repairs, Installs") == "home"


TICK_CASES = [
    # ticked by default
    (f"{A}/services/hot-water", "service", TickDecision(True, "")),
    (f"{A}", "home", TickDecision(True, "")),
    (f"{A}/blog", "blog", TickDecision(True, "")),
    (f"{A}/blog/my-post", "blog", TickDecision(True, "")),
    (f"{A}/news/our-new-van", "blog", TickDecision(True, "")),
    (f"{A}/cartography", "other", TickDecision(True, "")),
    (f"{A}/product/2001", "product", TickDecision(True, "")),
    (f"{A}/blog?sort=new", "blog", TickDecision(True, "")),
    (f"{A}/landing-page/x", "other", TickDecision(True, "")),
    # legal pages
    (f"{A}/privacy-policy", "legal", TickDecision(False, "legal page")),
    (f"{A}/disclaimer", "legal", TickDecision(False, "legal page")),
    # policy pages are learned, terms among them
    (f"{A}/cancellation-policy", "policy", TickDecision(True, "")),
    (f"{A}/terms-of-service", "policy", TickDecision(True, "")),
    (f"{A}/terms", "policy", TickDecision(True, "")),
    # archives
    (f"{A}/tag/hot-water", "blog", TickDecision(False, "archive page")),
    (f"{A}/blog/tag/hot-water", "blog", TickDecision(False, "archive page")),
    (f"{A}/category/tips", "blog", TickDecision(False, "archive page")),
    (f"{A}/author/gary", "blog", TickDecision(False, "archive page")),
    (f"{A}/blog/page/2", "blog", TickDecision(False, "archive page")),
    (f"{A}/blog?page=2", "blog", TickDecision(False, "archive page")),
    (f"{A}/?paged=3", "home", TickDecision(False, "archive page")),
    (f"{A}/product-category/taps", "product", TickDecision(False, "archive page")),
    (f"{A}/2019/05", "blog", TickDecision(False, "archive page")),
    (f"{A}/blog/2019", "blog", TickDecision(False, "archive page")),
    # deep blog posts
    (f"{A}/blog/2019/05/some-post", "blog", TickDecision(False, "deep blog post")),
    (f"{A}/2019/05/some-post", "blog", TickDecision(False, "deep blog post")),
    (f"{A}/news/tips/some-post", "blog", TickDecision(False, "deep blog post")),
    (f"{A}/2019/some-post", "blog", TickDecision(False, "deep blog post")),
    # default exclude globs
    (f"{A}/privacy-tips", "other", TickDecision(False, "exclude glob '**/privacy**'")),
    (f"{A}/page/about", "other", TickDecision(False, "exclude glob '**/page/**'")),
    (f"{A}/cart", "other", TickDecision(False, "exclude glob '**/cart'")),
    (f"{A}/shop/cart/items", "product", TickDecision(False, "exclude glob '**/cart/**'")),
    (f"{A}/checkout", "other", TickDecision(False, "exclude glob '**/checkout**'")),
    (f"{A}/my-account/orders", "other", TickDecision(False, "exclude glob '**/my-account**'")),
]


@pytest.mark.parametrize(("url", "category", "expected"), TICK_CASES)
def test_decide_tick_defaults(url: str, category: str, expected: TickDecision) -> None:
    assert decide_tick(url, category) == expected


@pytest.mark.parametrize(
    ("url", "category", "include", "exclude", "expected"),
    [
        # include wins over everything
        (f"{A}/privacy", "legal", ["/privacy"], DEFAULT_EXCLUDE, TickDecision(True, "include glob '/privacy'")),
        (f"{A}/tag/x", "blog", ["**/tag/**"], DEFAULT_EXCLUDE, TickDecision(True, "include glob '**/tag/**'")),
        (f"{A}/blog/2019/05/x", "blog", ["/blog/**"], (), TickDecision(True, "include glob '/blog/**'")),
        (f"{A}/cart", "other", ["**/cart"], ["**/cart"], TickDecision(True, "include glob '**/cart'")),
        (f"{A}/services", "service", ["/services"], (), TickDecision(True, "include glob '/services'")),
        # configured excludes
        (f"{A}/services/old", "service", (), ["/services/old"], TickDecision(False, "exclude glob '/services/old'")),
        (f"{A}/Specials/2020", "other", (), ["/specials/*"], TickDecision(False, "exclude glob '/specials/*'")),
        (f"{A}/a/b", "other", (), ["/a/c", "/a/*"], TickDecision(False, "exclude glob '/a/*'")),
        # built-in rules come before excludes, so their reason is shown
        (f"{A}/privacy", "legal", (), DEFAULT_EXCLUDE, TickDecision(False, "legal page")),
        # no excludes at all: only the built-in rules remain
        (f"{A}/cart", "other", (), (), TickDecision(True, "")),
        (f"{A}/blog/x", "blog", ["/other"], (), TickDecision(True, "")),
    ],
)
def test_decide_tick_globs(
    url: str, category: str, include: list[str], exclude: list[str], expected: TickDecision
) -> None:
    assert decide_tick(url, category, include, exclude) == expected


@pytest.mark.parametrize(
    ("include", "exclude", "message"),
    [
        ([""], (), "include: not a glob: ''"),
        (["  "], (), "include: not a glob: '  '"),
        ((), [None], "exclude: not a glob: None"),
        ((), [3], "exclude: not a glob: 3"),
        ("**/blog/**", (), "include: give a list of globs"),
    ],
)
def test_decide_tick_rejects_bad_globs(include: object, exclude: object, message: str) -> None:
    with pytest.raises(ValueError) as info:
        decide_tick(f"{A}/x", "other", include, exclude)  # type: ignore[arg-type]
    assert str(info.value).startswith(message)


GLOB_CASES = [
    ("**/privacy**", "/privacy", True),
    ("**/privacy**", "/privacy-policy", True),
    ("**/privacy**", "/legal/privacy/cookies", True),
    ("**/privacy**", "/our-privacy", False),
    ("**/tag/**", "/tag/x", True),
    ("**/tag/**", "/blog/tag/x/y", True),
    ("**/tag/**", "/tag", False),
    ("**/tag/**", "/vintage/x", False),
    ("**/page/**", "/page/2", True),
    ("**/page/**", "/landing-page/2", False),
    ("**/cart", "/cart", True),
    ("**/cart", "/shop/cart", True),
    ("**/cart", "/cartography", False),
    ("**/cart/**", "/cart/items", True),
    ("/blog/*", "/blog/post", True),
    ("/blog/*", "/blog/2019/post", False),
    ("/blog/*", "/blog", False),
    ("/blog/**", "/blog/2019/post", True),
    ("/blog*", "/blog", True),
    ("/blog*", "/blogroll", True),
    ("/blog*", "/blog/x", False),
    ("blog/**", "/blog/x", True),
    ("/Services/**", "/services/hot-water", True),
    ("/services/**", "/SERVICES/Hot-Water", True),
    ("/a.html", "/a.html", True),
    ("/a.html", "/aXhtml", False),
    ("/a?b", "/a?b", True),
    ("/a?b", "/ab", False),
    ("/a/[x]", "/a/[x]", True),
    ("/a/[x]", "/a/x", False),
    ("/", "/", True),
    ("/", "", True),
    ("/**", "/anything/at/all", True),
    ("**", "/", True),
    ("https://acme.com.au/blog/**", "/blog/x", True),
    ("https://acme.com.au/blog/**", "/news/x", False),
    ("/café/*", "/café/menu", True),
]


@pytest.mark.parametrize(("pattern", "path", "expected"), GLOB_CASES)
def test_glob_match(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


def test_glob_matches_the_decoded_path_of_a_url() -> None:
    assert decide_tick(f"{A}/caf%C3%A9/menu", "other", (), ["/café/*"]) == TickDecision(
        False, "exclude glob '/café/*'"
    )


@pytest.mark.parametrize("pattern", ["", "   ", None, 7, b"/x"])
def test_glob_match_rejects_bad_patterns(pattern: object) -> None:
    with pytest.raises(ValueError, match=f"glob: not a pattern: {pattern!r}"):
        glob_match(pattern, "/x")  # type: ignore[arg-type]


def test_every_category_of_the_contract_has_rules_and_every_rule_a_contract_category() -> None:
    # helppuff_crawl/schema/knowledge.json lists the categories; the rules here must cover exactly those
    # (home and other are decided by the path's shape and by elimination, not by keys).
    assert set(CATEGORY_KEYS) | {"home", "other"} == set(CATEGORIES)
    found = {categorize(url, title) for url, title, _ in CATEGORIZE_CASES}
    assert found <= set(CATEGORIES) and found == set(CATEGORIES)
