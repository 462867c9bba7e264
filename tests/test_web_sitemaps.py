"""Tests for helppuff_crawl.web.sitemaps: parsing, gzip, hostile input and the bounded walk."""

from __future__ import annotations

import gzip
import json
import zlib
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helppuff_crawl.web.sitemaps import (
    DEFAULT_SITEMAP_PATHS,
    MAX_DECOMPRESSED,
    SitemapDocument,
    SitemapEntry,
    SitemapWalk,
    decode_body,
    is_post_sitemap,
    parse_sitemap,
)
from tests.conftest import shared_data

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str) -> bytes:
    items = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>{items}</urlset>'.encode()


def index(*locs: str) -> bytes:
    items = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex {NS}>{items}</sitemapindex>'.encode()


def walk_all(walk: SitemapWalk, site: dict[str, bytes]) -> None:
    """Fetch from an in-memory site until the walk stops; a missing URL answers 404."""
    while (url := walk.next_url()) is not None:
        if url in site:
            walk.add(url, site[url])
        else:
            walk.add(url, None, error="404")


# --- Scrapy's sitemap cases -----------------------------------------------------------------------

SCRAPY_PARSE_CASES = [
    "test_sitemap",
    "test_sitemap_str",
    "test_sitemap_index",
    "test_sitemap_strip",
    "test_sitemap_wrong_ns",
    "test_sitemap_wrong_ns2",
    "test_sitemap_blanklines",
    "test_comment",
    "test_alternate",
    "test_xml_entity_expansion",
    "test_sitemap_non_string_tag",
]
SCRAPY_SPIDER_CASES = [
    ("test_get_sitemap_urls_from_robotstxt", 105),
    ("test_get_sitemap_urls_from_robotstxt_skips_invalid_utf8_urls", 122),
    ("test_alternate_url_locs", 143),
    ("test_alternate_url_locs", 148),
    ("test_sitemap_filter", 178),
    ("test_sitemap_filter_with_alternate_links", 215),
    ("test_sitemapindex_filter", 249),
]


@cache
def _scrapy_cases_text() -> str:
    return shared_data("sitemaps", "scrapy", "cases.json").read_text(encoding="utf-8")


def scrapy_cases(kind: str) -> list[dict[str, Any]]:
    return [case for case in json.loads(_scrapy_cases_text())["cases"] if case["kind"] == kind]


def test_scrapy_case_list_is_pinned() -> None:
    # A case added to cases.json must be added to the tables above, not silently ignored.
    assert [c["name"] for c in scrapy_cases("sitemap_parse")] == SCRAPY_PARSE_CASES
    assert [(c["name"], c["line"]) for c in scrapy_cases("spider_parse_sitemap")] == SCRAPY_SPIDER_CASES


@pytest.mark.parametrize("name", SCRAPY_PARSE_CASES)
def test_scrapy_sitemap_parse(name: str) -> None:
    (case,) = [c for c in scrapy_cases("sitemap_parse") if c["name"] == name]
    doc = parse_sitemap(case["body"].encode("utf-8"))
    # Scrapy keeps an empty <lastmod /> as ""; SitemapEntry carries None for "not given".
    expected = [
        SitemapEntry(e["loc"], e.get("lastmod") or None, tuple(e.get("alternate", ())))
        for e in case["expected_entries"]
    ]
    assert doc.entries == expected
    if name == "test_sitemap_non_string_tag":
        # Scrapy reports the root tag as the type; here a <url> root is not a sitemap at all.
        assert (doc.kind, doc.error) == ("invalid", "not a sitemap: <url>")
    else:
        # Cases without expected_type have a urlset or sitemapindex root; the body says which.
        kind = case.get("expected_type") or ("sitemapindex" if "<sitemapindex" in case["body"] else "urlset")
        assert (doc.kind, doc.error) == (kind, "")


@pytest.mark.parametrize(("name", "line"), SCRAPY_SPIDER_CASES)
def test_scrapy_spider_parse_sitemap(name: str, line: int) -> None:
    (case,) = [c for c in scrapy_cases("spider_parse_sitemap") if (c["name"], c["line"]) == (name, line)]
    if case["url"].endswith("/robots.txt"):
        pytest.skip("robots.txt Sitemap: lines are read by the robots module, not by sitemaps.py")
    walk = SitemapWalk([case["url"]], alternates=case["spider_options"].get("sitemap_alternate_links", False))
    assert walk.next_url() == case["url"]
    doc = walk.add(case["url"], case["body"].encode("utf-8"))
    assert doc is not None
    # The spider requests the pages of a urlset, or the child sitemaps of an index.
    if doc.kind == "sitemapindex":
        requested = [url for url in iter(walk.next_url, None)]
    else:
        requested = walk.page_urls
    assert requested == case["expected_request_urls"]
    assert walk.problems == []


# --- trafilatura's sitemap resources ---------------------------------------------------------------


@cache
def trafilatura_expected() -> dict[str, Any]:
    path = shared_data("sitemaps", "trafilatura", "expected.json")
    return json.loads(path.read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize(
    ("filename", "fetched_as"),
    [
        ("sitemap.xml", "https://www.sitemaps.org/sitemap.xml"),
        ("sitemap.xml.gz", "https://www.sitemaps.org/sitemap.xml.gz"),
        ("sitemap.xml.gz", "https://www.sitemaps.org/sitemap.xml"),  # gzip known by its magic bytes
    ],
)
def test_trafilatura_sitemaps_org(filename: str, fetched_as: str) -> None:
    body = shared_data("sitemaps", "trafilatura", filename).read_bytes()
    expected = trafilatura_expected()[filename]
    walk = SitemapWalk([fetched_as])
    assert walk.next_url() == fetched_as
    doc = walk.add(fetched_as, body)
    assert doc is not None and (doc.kind, doc.error) == ("urlset", "")
    assert len(walk.page_urls) == expected["expected_page_url_count"] == 84
    assert walk.page_urls == expected["expected_page_urls"]
    assert walk.lastmod["https://www.sitemaps.org/faq.html"] == "2016-11-21"
    assert walk.next_url() is None and walk.problems == []


def test_trafilatura_index_with_cdata_loc() -> None:
    body = shared_data("sitemaps", "trafilatura", "sitemap2.xml").read_bytes()
    expected = trafilatura_expected()["sitemap2.xml"]
    walk = SitemapWalk(["http://www.example.com/sitemap2.xml"])
    walk.next_url()
    doc = walk.add("http://www.example.com/sitemap2.xml", body)
    assert doc == SitemapDocument(
        "sitemapindex",
        [
            SitemapEntry("http://www.example.com/sitemap1.xml.gz", "2004-10-01T18:23:17+00:00"),
            SitemapEntry("http://www.example.com/sitemap2.xml.gz", "2005-01-01"),
        ],
    )
    # sitemap2.xml.gz is a different URL from sitemap2.xml, so both children are queued.
    assert list(iter(walk.next_url, None)) == expected["expected_sub_sitemaps"]
    assert walk.page_urls == expected["expected_page_urls"] == []


def test_trafilatura_hreflang_alternates() -> None:
    body = shared_data("sitemaps", "trafilatura", "sitemap-hreflang.xml").read_bytes()
    doc = parse_sitemap(body, "http://www.example.com/sitemap-hreflang.xml")
    alternates = (
        "http://www.example.com/deutsch/page.html",
        "http://www.example.com/schweiz-deutsch/page.html",
        "http://www.example.com/english/page.html",
    )
    # The stray <sitemap> element inside this urlset is not a page and is not read.
    assert doc == SitemapDocument(
        "urlset",
        [
            SitemapEntry("http://www.example.com/english/page.html", None, alternates),
            SitemapEntry("http://www.example.com/deutsch/page.html", None, alternates),
            SitemapEntry("http://www.example.com/schweiz-deutsch/page.html", None, alternates),
        ],
    )
    walk = SitemapWalk(["http://www.example.com/sitemap-hreflang.xml"], alternates=True)
    walk.add(walk.next_url() or "", body)
    assert walk.page_urls == [
        "http://www.example.com/english/page.html",
        "http://www.example.com/deutsch/page.html",
        "http://www.example.com/schweiz-deutsch/page.html",
    ]


# --- parsing details ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "url", "expected"),
    [
        pytest.param(
            f"<urlset {NS}><url><loc>\n  /about/ \n</loc><lastmod> 2024-05-01 </lastmod></url></urlset>".encode(),
            "https://acme.test/sitemap.xml",
            SitemapDocument("urlset", [SitemapEntry("https://acme.test/about/", "2024-05-01")]),
            id="relative-loc-made-absolute",
        ),
        pytest.param(
            f"<urlset {NS}><url><lastmod>2024</lastmod></url><url><loc>  </loc></url>"
            f"<url><loc>https://acme.test/{'x' * 2100}</loc></url><url><loc>https://acme.test/ok</loc></url>"
            "</urlset>".encode(),
            "",
            SitemapDocument("urlset", [SitemapEntry("https://acme.test/ok")]),
            id="no-loc-empty-loc-and-overlong-loc-skipped",
        ),
        pytest.param(
            f"<sitemapindex {NS}><url><loc>https://acme.test/page</loc></url>"
            "<sitemap><loc>https://acme.test/s1.xml</loc></sitemap></sitemapindex>".encode(),
            "",
            SitemapDocument("sitemapindex", [SitemapEntry("https://acme.test/s1.xml")]),
            id="index-reads-only-sitemap-elements",
        ),
        pytest.param(
            b"\xef\xbb\xbf\n\nhttps://acme.test/a\r\nhttps://acme.test/b\n\n",
            "",
            SitemapDocument("urlset", [SitemapEntry("https://acme.test/a"), SitemapEntry("https://acme.test/b")]),
            id="text-sitemap",
        ),
        pytest.param(
            b"https://acme.test/a\nthis is not a sitemap\n",
            "",
            SitemapDocument("invalid", [], "not XML"),
            id="text-with-prose-is-not-a-sitemap",
        ),
        pytest.param(
            b"<!DOCTYPE html>\n<html lang=en><head><title>Acme</title><script>if (a<b && c) {}</script>"
            b"</head><body><p>Welcome<br><a href='/sitemap.xml'>sitemap</a></body></html>",
            "",
            SitemapDocument("invalid", [], "not a sitemap: <html>"),
            id="html-page",
        ),
        pytest.param(
            b"<?xml version='1.0'?><rss version='2.0'><channel><item><link>https://acme.test/</link></item>"
            b"</channel></rss>",
            "",
            SitemapDocument("invalid", [], "not a sitemap: <rss>"),
            id="rss-feed",
        ),
        pytest.param(b"", "", SitemapDocument("invalid", [], "empty"), id="empty"),
        pytest.param(b" \r\n\t\n", "", SitemapDocument("invalid", [], "empty"), id="blank"),
        pytest.param(b"\x00" * 64, "", SitemapDocument("invalid", [], "not XML"), id="nul-bytes"),
        pytest.param(b"<", "", SitemapDocument("invalid", [], "not XML"), id="lone-angle"),
        pytest.param(
            f"<urlset {NS}><url><loc>http://[::1/x</loc></url><url><loc>https://acme.test/</loc></url>".encode(),
            "",
            SitemapDocument("urlset", [SitemapEntry("https://acme.test/")]),
            id="unparsable-url-skipped-and-cut-document-recovered",
        ),
    ],
)
def test_parse_sitemap(body: bytes, url: str, expected: SitemapDocument) -> None:
    assert parse_sitemap(body, url) == expected


# --- hostile input --------------------------------------------------------------------------------

BILLION_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n<!ENTITY lol "lol">\n'
    + b"".join(
        b'<!ENTITY lol%d "%s">\n' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10) for i in range(1, 10)
    )
    + f"]>\n<urlset {NS}><url><loc>https://acme.test/&lol9;</loc></url>"
    "<url><loc>https://acme.test/after</loc></url></urlset>".encode()
)


def test_billion_laughs_is_not_expanded() -> None:
    doc = parse_sitemap(BILLION_LAUGHS)
    assert doc.kind == "urlset"
    # libxml2 stops at the amplification guard: nothing expanded, the stop is reported.
    assert all("lol" not in entry.loc for entry in doc.entries)
    assert len(doc.entries) <= 2
    assert doc.error.startswith("XML parse stopped:")


def test_an_undeclared_entity_is_recovered_from_not_a_stop() -> None:
    body = f"<urlset {NS}><url><loc>https://acme.test/&nbsp;a</loc></url><url><loc>https://acme.test/b</loc></url></urlset>"
    doc = parse_sitemap(body.encode())
    assert doc.error == "" and doc.entries[-1] == SitemapEntry("https://acme.test/b")


def test_external_entity_is_not_read() -> None:
    body = (
        b'<?xml version="1.0"?>\n<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
        + f"<urlset {NS}><url><loc>https://acme.test/&xxe;</loc><lastmod>&xxe;2024-01-01</lastmod></url>"
        "</urlset>".encode()
    )
    doc = parse_sitemap(body)
    assert doc == SitemapDocument("urlset", [SitemapEntry("https://acme.test/")])
    assert "root:" not in repr(doc)


def _gzip_stream(head: bytes, filler: bytes, filler_count: int) -> bytes:
    """Gzip of head + filler * filler_count, built in pieces so the plain text never sits in memory."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(head)]
    parts += [packer.compress(filler) for _ in range(filler_count)]
    parts.append(packer.flush())
    return b"".join(parts)


def test_gzip_bomb_stops_at_the_cap() -> None:
    bomb = _gzip_stream(b"", bytes(1024 * 1024), 50)  # 50 MiB of zeros
    assert len(bomb) < 100_000
    xml, error = decode_body(bomb, "https://acme.test/sitemap.xml.gz")
    assert (len(xml), error) == (MAX_DECOMPRESSED, "decompressed size over 10 MiB")
    assert parse_sitemap(bomb) == SitemapDocument("invalid", [], "decompressed size over 10 MiB")


def test_oversized_gzip_sitemap_keeps_the_part_before_the_cap() -> None:
    head = urlset("https://acme.test/a", "https://acme.test/b").replace(b"</urlset>", b"")
    body = _gzip_stream(head, b" " * 1024, 64)
    doc = parse_sitemap(body, max_size=32 * 1024)
    assert doc == SitemapDocument(
        "urlset",
        [SitemapEntry("https://acme.test/a"), SitemapEntry("https://acme.test/b")],
        "decompressed size over 0.03125 MiB",
    )


def test_oversized_plain_body_is_cut() -> None:
    body = urlset(*(f"https://acme.test/p{i}" for i in range(100)))
    xml, error = decode_body(body, max_size=500)
    assert (xml, error) == (body[:500], "size over 0.000476837 MiB")
    doc = parse_sitemap(body, max_size=500)
    assert 0 < len(doc.entries) < 100 and doc.error == "size over 0.000476837 MiB"


GZ_URLSET = urlset("https://acme.test/gz")
GZ_ENTRIES = [SitemapEntry("https://acme.test/gz")]


@pytest.mark.parametrize(
    ("body", "url", "headers", "expected"),
    [
        pytest.param(GZ_URLSET, "https://acme.test/sitemap.xml.gz", None, (GZ_ENTRIES, ""), id="plain-named-gz"),
        pytest.param(
            GZ_URLSET,
            "https://acme.test/sitemap.xml",
            {"Content-Type": "application/x-gzip", "Content-Encoding": "gzip"},
            (GZ_ENTRIES, ""),
            id="plain-with-gzip-headers",
        ),
        pytest.param(
            gzip.compress(GZ_URLSET), "https://acme.test/sitemap.xml", None, (GZ_ENTRIES, ""), id="gzip-by-magic"
        ),
        pytest.param(
            gzip.compress(GZ_URLSET),
            "https://acme.test/s",
            {b"Content-Type": [b"application/gzip"]},
            (GZ_ENTRIES, ""),
            id="gzip-scrapy-style-headers",
        ),
        pytest.param(
            gzip.compress(gzip.compress(GZ_URLSET)),
            "https://acme.test/s.xml.gz",
            None,
            (GZ_ENTRIES, ""),
            id="gzip-twice",
        ),
        pytest.param(
            gzip.compress(GZ_URLSET)[:-8], "", None, (GZ_ENTRIES, "gzip data cut short"), id="gzip-cut-short"
        ),
        pytest.param(b"\x1f\x8b" + b"garbage" * 10, "", None, ([], "bad gzip data: "), id="gzip-then-garbage"),
    ],
)
def test_gzip_detection(
    body: bytes, url: str, headers: dict[Any, Any] | None, expected: tuple[list[SitemapEntry], str]
) -> None:
    entries, error = expected
    doc = parse_sitemap(body, url, headers)
    assert doc.entries == entries
    assert doc.error.startswith(error) and bool(doc.error) == bool(error)


@settings(max_examples=200, deadline=None)
@given(
    st.binary(max_size=400)
    | st.text(alphabet="<>/&;!?[]=\"' \nurlsetloc:xmlnshttp", max_size=200).map(str.encode)
)
def test_garbage_never_raises(body: bytes) -> None:
    doc = parse_sitemap(body, "https://acme.test/sitemap.xml")
    assert doc.kind in {"urlset", "sitemapindex", "invalid"}
    assert "\n" not in doc.error
    walk = SitemapWalk(["https://acme.test/sitemap.xml"])
    walk.add(walk.next_url() or "", body)
    gzipped = SitemapWalk(["https://acme.test/sitemap.xml.gz"])
    gzipped.add(gzipped.next_url() or "", b"\x1f\x8b" + body)


# --- the walk -------------------------------------------------------------------------------------


def test_index_cycles_are_not_fetched_twice() -> None:
    a, b = "https://acme.test/a.xml", "https://acme.test/b.xml"
    site = {
        a: index(b),
        b: index(a, b, "https://acme.test/pages.xml#part"),
        "https://acme.test/pages.xml": urlset("https://acme.test/p1"),
    }
    walk = SitemapWalk([a])
    walk_all(walk, site)
    assert walk.fetched == [a, b, "https://acme.test/pages.xml"]
    assert walk.page_urls == ["https://acme.test/p1"]
    assert walk.problems == [
        (a, "listed again (cycle or duplicate); not fetched twice"),
        (b, "listed again (cycle or duplicate); not fetched twice"),
    ]


def test_sitemap_limit() -> None:
    children = [f"https://acme.test/sitemap-{i}.xml" for i in range(30)]
    site = {"https://acme.test/sitemap_index.xml": index(*children)}
    site |= {child: urlset(child.replace(".xml", "/page")) for child in children}
    walk = SitemapWalk(["https://acme.test/sitemap_index.xml"])
    walk_all(walk, site)
    assert len(walk.fetched) == 25
    assert walk.fetched[1:] == children[:24]
    assert len(walk.page_urls) == 24
    assert walk.problems == [(child, "sitemap limit (25) reached") for child in children[24:]]


def test_url_limit() -> None:
    pages = [f"https://acme.test/p/{i}" for i in range(1500)]
    site = {
        "https://acme.test/sitemap.xml": index("https://acme.test/s1.xml", "https://acme.test/s2.xml"),
        "https://acme.test/s1.xml": urlset(*pages),
        "https://acme.test/s2.xml": urlset("https://acme.test/never"),
    }
    walk = SitemapWalk(["https://acme.test/sitemap.xml"])
    walk_all(walk, site)
    assert walk.page_urls == pages[:1000]
    assert walk.fetched == ["https://acme.test/sitemap.xml", "https://acme.test/s1.xml"]
    assert walk.problems == [
        ("https://acme.test/s1.xml", "URL limit (1000) reached; 500 more URLs ignored"),
        ("https://acme.test/s2.xml", "URL limit (1000) reached"),
    ]


def test_post_sitemaps_are_fetched_last() -> None:
    children = [
        "https://acme.test/post-sitemap.xml",
        "https://acme.test/page-sitemap.xml",
        "https://acme.test/wp-sitemap-posts-post-1.xml",
        "https://acme.test/wp-sitemap-posts-page-1.xml",
        "https://acme.test/sitemap-posts.xml",
        "https://acme.test/product-sitemap.xml",
        "https://acme.test/blog/sitemap.xml",
        "https://acme.test/sitemap-services.xml",
    ]
    walk = SitemapWalk(["https://acme.test/sitemap_index.xml", "https://acme.test/news-sitemap.xml"])
    assert walk.next_url() == "https://acme.test/sitemap_index.xml"
    walk.add("https://acme.test/sitemap_index.xml", index(*children))
    assert list(iter(walk.next_url, None)) == [
        "https://acme.test/page-sitemap.xml",
        "https://acme.test/wp-sitemap-posts-page-1.xml",
        "https://acme.test/product-sitemap.xml",
        "https://acme.test/sitemap-services.xml",
        "https://acme.test/news-sitemap.xml",
        "https://acme.test/post-sitemap.xml",
        "https://acme.test/wp-sitemap-posts-post-1.xml",
        "https://acme.test/sitemap-posts.xml",
        "https://acme.test/blog/sitemap.xml",
    ]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://acme.test/post-sitemap2.xml", True),
        ("https://acme.test/wp-sitemap-posts-post-3.xml", True),
        ("https://acme.test/wp-sitemap-posts-page-1.xml", False),
        ("https://acme.test/wp-sitemap-posts-product-1.xml", False),
        ("https://acme.test/sitemap-posts.xml", True),
        ("https://acme.test/sitemap_blogs_1.xml", True),
        ("https://acme.test/index.php?sitemap=post", True),
        ("https://acme.test/postcode-sitemap.xml", False),
        ("https://news.acme.test/sitemap.xml", False),  # the host is not the sitemap's name
        ("https://acme.test/sitemap.xml", False),
        ("http://[::1/post-sitemap.xml", False),
    ],
)
def test_is_post_sitemap(url: str, expected: bool) -> None:
    assert is_post_sitemap(url) is expected


def test_default_paths_with_404s_failures_and_lastmod() -> None:
    origin = "https://www.acme.test"
    seeds = [f"{origin}{path}" for path in (*DEFAULT_SITEMAP_PATHS, "/sitemap.xml")]
    walk = SitemapWalk(seeds)
    # All seeds can be handed out at once for concurrent fetching.
    assert list(iter(walk.next_url, None)) == seeds[:3]
    assert walk.pending == set(seeds[:3])
    walk.add(f"{origin}/wp-sitemap.xml", None, error="timeout")
    walk.add(f"{origin}/sitemap.xml", None, error="404")
    walk.add(
        f"{origin}/sitemap_index.xml",
        index("/pages.xml", "https://cdn.other.test/acme/posts.xml", "https://acme.test/more.xml", "mailto:x@y"),
    )
    assert walk.pending == set()
    walk.add(
        walk.next_url() or "",
        f"<urlset {NS}><url><loc>/about</loc><lastmod>2024-02-03</lastmod></url>"
        "<url><loc>/about</loc></url><url><loc>ftp://acme.test/file</loc></url></urlset>".encode(),
    )
    assert walk.fetched[-1] == f"{origin}/pages.xml"
    assert walk.next_url() == "https://acme.test/more.xml"
    walk.add("https://acme.test/more.xml", b"<html><body>Not found</body></html>")
    assert walk.next_url() == "https://cdn.other.test/acme/posts.xml"
    walk.add("https://cdn.other.test/acme/posts.xml", urlset("https://www.acme.test/blog/hello", "/about"))
    assert walk.next_url() is None and not walk.pending
    assert walk.page_urls == [
        f"{origin}/about",
        "https://www.acme.test/blog/hello",
        "https://cdn.other.test/about",
    ]
    assert walk.lastmod == {f"{origin}/about": "2024-02-03"}
    # www. and the apex are one site; the CDN is another host, allowed but recorded.
    assert walk.offsite == ["https://cdn.other.test/acme/posts.xml"]
    assert walk.problems == [
        (f"{origin}/sitemap.xml", "listed again (cycle or duplicate); not fetched twice"),
        (f"{origin}/wp-sitemap.xml", "timeout"),
        (f"{origin}/sitemap.xml", "404"),
        ("mailto:x@y", "not an http(s) URL"),
        ("https://acme.test/more.xml", "not a sitemap: <html>"),
    ]


def test_redirected_sitemap_resolves_against_the_final_url() -> None:
    walk = SitemapWalk(["http://acme.test/sitemap.xml", "https://acme.test/sitemaps/index.xml"])
    url = walk.next_url() or ""
    walk.add(url, index("child.xml", "index.xml"), base_url="https://acme.test/sitemaps/index.xml#top")
    # The redirect target was read through the first seed: it is neither queued nor fetched again.
    assert list(iter(walk.next_url, None)) == ["https://acme.test/sitemaps/child.xml"]
    assert walk.fetched == ["http://acme.test/sitemap.xml"]
    assert walk.problems == [
        ("https://acme.test/sitemaps/index.xml", "listed again (cycle or duplicate); not fetched twice")
    ]
