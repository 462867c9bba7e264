"""Tests for helppuff_crawl.web.urls: normalisation, site identity (and a known page's spelling), filters,
start URLs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helppuff_crawl.web.urls import (
    known_spelling,
    normalize_url,
    same_site,
    site_host,
    site_name_from_url,
    url_filter_reason,
    validate_start_url,
)

NORMALIZE_CASES = [
    # scheme, host, ports
    ("HTTP://WWW.Example.COM/About", "http://www.example.com/About"),
    ("https://a.com:443/x", "https://a.com/x"),
    ("http://a.com:80/x", "http://a.com/x"),
    ("https://a.com:80/x", "https://a.com:80/x"),
    ("http://a.com:443/x", "http://a.com:443/x"),
    ("HTTPS://A.COM:8443/", "https://a.com:8443"),
    ("http://127.0.0.1:8000/services.html", "http://127.0.0.1:8000/services.html"),
    ("http://[::1]:8000/x", "http://[::1]:8000/x"),
    ("http://[0:0:0:0:0:0:0:1]/", "http://[::1]"),
    ("http://a.com./x/", "http://a.com/x"),
    ("http://a.com:/x", "http://a.com/x"),
    ("http://user:secret@a.com/x", "http://a.com/x"),
    # IDN hosts
    ("https://bücher.de/", "https://xn--bcher-kva.de"),
    ("https://BÜCHER.de/x", "https://xn--bcher-kva.de/x"),
    ("https://straße.de", "https://xn--strae-oqa.de"),
    ("http://xn--bcher-kva.de", "http://xn--bcher-kva.de"),
    # trailing slashes and the root
    ("https://a.com/", "https://a.com"),
    ("https://a.com", "https://a.com"),
    ("https://a.com/services/", "https://a.com/services"),
    ("https://a.com/a//b//", "https://a.com/a//b"),
    ("https://a.com/?x=1", "https://a.com?x=1"),
    # fragments and empty queries
    ("https://a.com/faq#billing", "https://a.com/faq"),
    ("https://a.com/#", "https://a.com"),
    ("https://a.com/x?", "https://a.com/x"),
    ("https://a.com/x?&&", "https://a.com/x"),
    ("https://a.com/x?#top", "https://a.com/x"),
    # tracking parameters
    ("https://a.com/x?utm_source=fb&utm_medium=cpc&utm_campaign=spring", "https://a.com/x"),
    ("https://a.com/x?UTM_Source=fb&id=3", "https://a.com/x?id=3"),
    ("https://a.com/x?gclid=1&fbclid=2&msclkid=3&dclid=4&gbraid=5&wbraid=6", "https://a.com/x"),
    ("https://a.com/x?mc_cid=1&mc_eid=2&_ga=3&_gl=4&igshid=5&ref_src=6&yclid=7", "https://a.com/x"),
    ("https://a.com/x?hsa_cam=1&hsa_grp=2&_hsenc=3&_hsmi=4&mkt_tok=5", "https://a.com/x"),
    ("https://a.com/x?vero_id=1&oly_enc_id=2&srsltid=3&p=7", "https://a.com/x?p=7"),
    ("https://a.com/x?ref=home&si=abc&source=nav", "https://a.com/x?ref=home&si=abc&source=nav"),
    # query order: sorted by name, values of one name keep their order
    ("https://a.com/x?b=2&a=1", "https://a.com/x?a=1&b=2"),
    ("https://a.com/x?z=1&color=red&color=blue", "https://a.com/x?color=red&color=blue&z=1"),
    ("https://a.com/x?a&b=&c=1", "https://a.com/x?a&b=&c=1"),
    ("https://a.com/x?q=a+b&r=a%20b", "https://a.com/x?q=a+b&r=a%20b"),
    ("https://a.com/x?q=%26%3d&x=%7e", "https://a.com/x?q=%26%3D&x=~"),
    ("https://a.com/x?k=a=b", "https://a.com/x?k=a=b"),
    # percent-encoding
    ("https://a.com/%7Euser/caf%c3%a9", "https://a.com/~user/caf%C3%A9"),
    ("https://a.com/café", "https://a.com/caf%C3%A9"),
    ("https://a.com/a%2fb", "https://a.com/a%2Fb"),
    ("https://a.com/a b", "https://a.com/a%20b"),
    ("https://a.com/100%", "https://a.com/100%25"),
    ("https://a.com/über?q=ä", "https://a.com/%C3%BCber?q=%C3%A4"),
    # dot segments
    ("https://a.com/a/b/../c/./d", "https://a.com/a/c/d"),
    ("https://a.com/../../x", "https://a.com/x"),
    ("https://a.com/a/%2e%2e/b", "https://a.com/b"),
    ("https://a.com/a/.", "https://a.com/a"),
    # whitespace and backslashes
    ("  https://a.com/x \n", "https://a.com/x"),
    ("https://a.com/ser\nvices\t", "https://a.com/services"),
    ("https:\\\\a.com\\about", "https://a.com/about"),
    ("https://a.com/x?path=a\\b", "https://a.com/x?path=a%5Cb"),
    # garbage
    ("", None),
    ("   ", None),
    ("http://", None),
    ("https://", None),
    ("http:///x", None),
    ("javascript:void(0)", None),
    ("JavaScript:alert(1)", None),
    ("mailto:hello@acme.com", None),
    ("tel:+61390000000", None),
    ("sms:+17065551234", None),
    ("ftp://a.com/file", None),
    ("data:text/html,hi", None),
    ("http://exa mple.com", None),
    ("http://a.com:99999/", None),
    ("http://a.com:-1/", None),
    ("http://a.com:abc/", None),
    ("http://a..com/", None),
    ("http://-a.com/", None),
    ("http://%61.com/", None),
    ("http://[::1/x", None),
    ("http://[zz::1]/", None),
    ("about-us", None),
    ("//a.com/x", None),
]


@pytest.mark.parametrize(("url", "expected"), NORMALIZE_CASES)
def test_normalize_url(url: str, expected: str | None) -> None:
    assert normalize_url(url) == expected


JOIN_CASES = [
    ("services.html", "http://127.0.0.1:8000", "http://127.0.0.1:8000/services.html"),
    ("services.html", "http://127.0.0.1:8000/", "http://127.0.0.1:8000/services.html"),
    ("/contact.html#book", "http://127.0.0.1:8000/about.html", "http://127.0.0.1:8000/contact.html"),
    ("../x?y=1#z", "https://a.com/a/b/c", "https://a.com/a/x?y=1"),
    ("./", "https://a.com/a/b/c", "https://a.com/a/b"),
    ("?page=2", "https://a.com/blog/", "https://a.com/blog?page=2"),
    ("#top", "https://a.com/faq", "https://a.com/faq"),
    ("//cdn.example.com/x", "https://a.com", "https://cdn.example.com/x"),
    ("https://other.com/", "https://a.com", "https://other.com"),
    (" /about ", " https://a.com/x ", "https://a.com/about"),
    ("mailto:x@a.com", "https://a.com", None),
    ("javascript:void(0)", "https://a.com", None),
    ("/about", "mailto:x@a.com", None),
    ("/about", "", None),
]


@pytest.mark.parametrize(("url", "base", "expected"), JOIN_CASES)
def test_normalize_url_joins_to_base(url: str, base: str, expected: str | None) -> None:
    assert normalize_url(url, base) == expected


INDEX_CASES = [
    # A folder's index document is the folder's URL (no trailing slash, as every URL here).
    ("https://a.com/index.html", "https://a.com"),
    ("https://a.com/index.htm", "https://a.com"),
    ("https://a.com/index.php", "https://a.com"),
    ("https://a.com/default.aspx", "https://a.com"),
    ("https://a.com/default.htm", "https://a.com"),
    ("https://a.com/Default.HTML", "https://a.com"),
    ("https://a.com/team/index.html", "https://a.com/team"),
    ("https://a.com/team/INDEX.HTML", "https://a.com/team"),
    ("https://a.com/team/index.html/", "https://a.com/team"),
    ("https://a.com/team/index%2Ehtml", "https://a.com/team"),
    ("https://a.com/a/b/../index.htm#top", "https://a.com/a"),
    ("https://a.com/index.html/index.htm", "https://a.com"),  # a fixed point: folded again
    # The query stays, sorted as everywhere.
    ("https://a.com/index.php?b=2&a=1", "https://a.com?a=1&b=2"),
    ("https://a.com/shop/index.php?utm_source=x&id=7", "https://a.com/shop?id=7"),
    # Only the last segment, only these names.
    ("https://a.com/index.html/about", "https://a.com/index.html/about"),
    ("https://a.com/index.php/contact", "https://a.com/index.php/contact"),
    ("https://a.com/index-of-prices.html", "https://a.com/index-of-prices.html"),
    ("https://a.com/index", "https://a.com/index"),
    ("https://a.com/home.html", "https://a.com/home.html"),
    ("https://a.com/myindex.html", "https://a.com/myindex.html"),
    ("https://a.com/index.html.bak", "https://a.com/index.html.bak"),
]


@pytest.mark.parametrize(("url", "expected"), INDEX_CASES)
def test_an_index_document_is_its_folder(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


def test_every_spelling_of_a_folder_is_one_page() -> None:
    # A link, a sitemap entry, a redirect's final URL and a start URL all meet in one form.
    spellings = ["https://a.com/team/", "https://a.com/team", "https://A.com/team/index.html",
                 "https://a.com:443/team/./index.htm"]
    assert {normalize_url(url) for url in spellings} == {"https://a.com/team"}
    assert normalize_url("index.html", "https://a.com/team/") == "https://a.com/team"
    assert validate_start_url("acme.com.au/index.html") == "https://acme.com.au"


@pytest.mark.parametrize("value", [None, 42, b"https://a.com", ["https://a.com"]])
def test_normalize_url_returns_none_for_non_strings(value: object) -> None:
    assert normalize_url(value) is None  # type: ignore[arg-type]


@given(st.text(max_size=40))
def test_normalize_url_never_raises_and_is_idempotent(tail: str) -> None:
    for url in (tail, "https://a.com/" + tail, "http://" + tail):
        once = normalize_url(url)
        if once is not None:
            assert normalize_url(once) == once


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://www.Acme.com.au/about", "acme.com.au"),
        ("https://acme.com.au", "acme.com.au"),
        ("https://shop.acme.com.au", "shop.acme.com.au"),
        ("https://www2.acme.com", "www2.acme.com"),
        ("http://127.0.0.1:8000/x", "127.0.0.1:8000"),
        ("https://acme.com:443/", "acme.com"),
        ("http://acme.com:443/", "acme.com:443"),
        ("http://localhost:8001", "localhost:8001"),
        ("https://www.bücher.de", "xn--bcher-kva.de"),
        ("mailto:x@acme.com", ""),
        ("acme.com", ""),
    ],
)
def test_site_host(url: str, expected: str) -> None:
    assert site_host(url) == expected


@pytest.mark.parametrize(
    ("url", "home", "expected"),
    [
        ("https://www.acme.com/x", "https://acme.com", True),
        ("https://acme.com/x", "https://www.acme.com/", True),
        ("http://acme.com/x", "https://acme.com", True),
        ("https://ACME.com/x", "https://acme.com", True),
        ("https://shop.acme.com/x", "https://acme.com", False),
        ("https://acme.com.evil.com/", "https://acme.com", False),
        ("http://127.0.0.1:8000/a", "http://127.0.0.1:8000", True),
        ("http://127.0.0.1:8001/a", "http://127.0.0.1:8000", False),
        ("http://localhost:8000/a", "http://127.0.0.1:8000", False),
        ("mailto:x@acme.com", "https://acme.com", False),
        ("javascript:void(0)", "javascript:void(0)", False),
    ],
)
def test_same_site(url: str, home: str, expected: bool) -> None:
    assert same_site(url, home) is expected


def test_a_page_named_with_the_other_spelling_of_the_site_is_the_page_known() -> None:
    known = {"https://www.acme.com.au/contact": {}, "http://acme.com.au/faq": {}, "https://acme.com.au/pricing": {}}
    assert known_spelling("https://acme.com.au/contact", known) == "https://www.acme.com.au/contact"
    assert known_spelling("https://www.acme.com.au/faq", known) == "http://acme.com.au/faq"
    assert known_spelling("https://acme.com.au/pricing", known) == "https://acme.com.au/pricing"
    assert known_spelling("https://www.acme.com.au/new-page", known) == "https://www.acme.com.au/new-page"
    # Another site is never taken for this one (the spider refuses it before: spiders/arguments.py).
    assert known_spelling("https://acme.com.au.evil.example/contact", known) == "https://acme.com.au.evil.example/contact"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://a.com/services", ""),
        ("https://a.com/services.html", ""),
        ("https://a.com/index.php?id=2", ""),
        ("https://a.com/files/Price-List.PDF", "file: .pdf"),
        ("https://a.com/brochure.docx", "file: .docx"),
        ("https://a.com/rates.xlsx", "file: .xlsx"),
        ("https://a.com/img/van.jpeg", "file: .jpeg"),
        ("https://a.com/assets/img/favicon.svg", "file: .svg"),
        ("https://a.com/favicon.ico", "file: .ico"),
        ("https://a.com/intro.mp4", "file: .mp4"),
        ("https://a.com/fonts/a.woff2", "file: .woff2"),
        ("https://a.com/assets/css/styles.css", "file: .css"),
        ("https://a.com/app.js?v=3", "file: .js"),
        ("https://a.com/sitemap.xml", "file: .xml"),
        ("https://a.com/blog.rss", "file: .rss"),
        ("https://a.com/LICENSE.txt", "file: .txt"),
        ("https://a.com/backup.tar.gz", "file: .gz"),
        ("https://a.com/report.pdf/", "file: .pdf"),
        ("https://a.com/login", "account screen: login"),
        ("https://a.com/Log-In", "account screen: log-in"),
        ("https://a.com/sign-in?next=/", "account screen: sign-in"),
        ("https://a.com/signup", "account screen: signup"),
        ("https://a.com/register", "account screen: register"),
        ("https://a.com/logout", "account screen: logout"),
        ("https://a.com/shop/cart", "account screen: cart"),
        ("https://a.com/basket", "account screen: basket"),
        ("https://a.com/checkout/step-2", "account screen: checkout"),
        ("https://a.com/my-account/orders", "account screen: my-account"),
        ("https://a.com/account", "account screen: account"),
        ("https://a.com/wp-admin/edit.php", "account screen: wp-admin"),
        ("https://a.com/wp-login.php", "account screen: wp-login.php"),
        ("https://a.com/admin", "account screen: admin"),
        ("https://a.com/wp-json/wp/v2/posts", "account screen: wp-json"),
        ("https://a.com/blog/feed", "account screen: feed"),
        ("https://a.com/shop/tap?add-to-cart=12", "account screen: ?add-to-cart"),
        ("https://a.com/blog/post?replytocom=55", "account screen: ?replytocom"),
        ("https://a.com/cartography", ""),
        ("https://a.com/accounting-services", ""),
        ("https://a.com/administration-fees", ""),
        ("https://a.com/feedback", ""),
        ("https://a.com/registered-plumbers", ""),
        ("https://a.com/v1.2/notes", ""),
        ("mailto:x@a.com", "not a web address"),
    ],
)
def test_url_filter_reason(url: str, expected: str) -> None:
    assert url_filter_reason(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://www.acme.com.au", "acme-com-au"),
        ("https://acme.com.au/about", "acme-com-au"),
        ("http://127.0.0.1:8000", "127-0-0-1-8000"),
        ("acme.com.au", "acme-com-au"),
        ("https://Joe-s_Plumbing.com", "joe-s-plumbing-com"),
        ("https://bücher.de", "xn--bcher-kva-de"),
        ("http://[::1]:8000", "1-8000"),
        ("https://" + "a" * 60 + ".com", "a" * 48),
        ("https://" + "a" * 47 + "-b.com", "a" * 47),
    ],
)
def test_site_name_from_url(url: str, expected: str) -> None:
    assert site_name_from_url(url) == expected


@pytest.mark.parametrize("url", ["", "mailto:x@a.com", "http://exa mple.com"])
def test_site_name_from_url_rejects_non_sites(url: str) -> None:
    with pytest.raises(ValueError, match="url: not a website address"):
        site_name_from_url(url)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("acme.com.au", "https://acme.com.au"),
        ("  acme.com.au/  ", "https://acme.com.au"),
        ("www.acme.com.au/services/", "https://www.acme.com.au/services"),
        ("https://Acme.com.au/?utm_source=x", "https://acme.com.au"),
        ("http://acme.com.au", "http://acme.com.au"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("http://localhost:8000/", "http://localhost:8000"),
        ("localhost:8000", "https://localhost:8000"),
        ("127.0.0.1:8000", "https://127.0.0.1:8000"),
        ("http://[::1]:8000", "http://[::1]:8000"),
        ("bücher.de", "https://xn--bcher-kva.de"),
    ],
)
def test_validate_start_url(url: str, expected: str) -> None:
    assert validate_start_url(url) == expected


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("", "it is empty"),
        ("   ", "it is empty"),
        ("ftp://acme.com", "only http and https"),
        ("mailto:x@acme.com", "only http and https"),
        ("javascript:alert(1)", "only http and https"),
        ("acme .com", "contains spaces"),
        ("https://", "no valid host"),
        ("http://a..com", "no valid host"),
        ("http://acme.com:70000", "no valid host"),
        ("intranet", "needs a dot"),
        ("https://intranet/x", "needs a dot"),
    ],
)
def test_validate_start_url_rejects(url: str, why: str) -> None:
    with pytest.raises(ValueError) as info:
        validate_start_url(url)
    message = str(info.value)
    assert message.startswith(f"url: not a website address: {url!r}")
    assert why in message
    assert "\n" not in message


def test_validate_start_url_rejects_non_strings() -> None:
    with pytest.raises(ValueError, match="url: not a website address: None"):
        validate_start_url(None)  # type: ignore[arg-type]


_SITE_NAME_CASES = json.loads((Path(__file__).parent.parent / "helppuff_crawl" / "schema" / "site_name_cases.json")
                              .read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", _SITE_NAME_CASES, ids=lambda case: repr(case["url"]))
def test_the_site_name_cases_the_dashboard_shares(case: dict[str, Any]) -> None:
    if case["name"] is None:
        with pytest.raises(ValueError):
            site_name_from_url(case["url"])
    else:
        assert site_name_from_url(case["url"]) == case["name"]
