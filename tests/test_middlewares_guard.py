"""SiteGuardMiddleware: a redirect to another site is not followed, and no request goes to a
non-public address unless HELPPUFF_ALLOW_PRIVATE_ADDRESSES allows it.

The crawls are real: the site on 127.0.0.1, another host on 127.0.0.2 that must never be asked
for anything (tests/guard_sites.py), and made-up public-looking names answered on the reactor
(tests/names.py) for "a public site whose page leads to a private address"."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy.http import HtmlResponse, Request
from scrapy.utils.misc import build_from_crawler

from helppuff_crawl.middlewares.guard import (
    AddressRefused,
    OffsiteRedirect,
    SiteGuardMiddleware,
    offsite_redirect,
)
from tests.conftest import kb_rows, make_crawler, project_settings
from tests.crawlers import component_crawler
from tests.guard_sites import SECRET, page, start_pair
from tests.names import mapped_names

BOTH_LOOPBACKS = pytest.mark.allow_hosts(["127.0.0.1", "127.0.0.2"])


def _guard(allow: Any = False) -> Any:
    return build_from_crawler(SiteGuardMiddleware, component_crawler(HELPPUFF_ALLOW_PRIVATE_ADDRESSES=allow))


def _redirected(url: str, first: str, **meta: Any) -> Request:
    return Request(url, meta={"redirect_urls": [first], **meta})


# --- the rules, one request at a time ------------------------------------------------------


@pytest.mark.parametrize(("url", "first"), [
    ("https://acme.com.au/services", "http://acme.com.au/services"),  # http -> https
    ("https://www.acme.com.au/", "https://acme.com.au"),  # apex -> www.
    ("https://acme.com.au/about", "https://www.acme.com.au/about-us"),  # www. -> apex
    ("http://127.0.0.1:8000/new", "http://127.0.0.1:8000/old"),
])
def test_redirects_on_the_site_are_followed(url: str, first: str) -> None:
    assert offsite_redirect(_redirected(url, first)) == ""


@pytest.mark.parametrize(("url", "first"), [
    ("http://127.0.0.2/admin", "http://127.0.0.1/moved"),
    ("http://127.0.0.1:9000/", "http://127.0.0.1:8000/"),  # another port is another site
    ("https://shop.acme.com.au/", "https://acme.com.au/shop"),  # a subdomain too
    ("https://acme.com/", "https://acme.com.au/"),
])
def test_a_redirect_to_another_site_is_not_followed(url: str, first: str) -> None:
    assert offsite_redirect(_redirected(url, first)) == f"redirected to another site: {url}"


@pytest_twisted.ensureDeferred
async def test_the_middleware_raises_the_reason_and_counts_it() -> None:
    guard = _guard(True)
    with pytest.raises(OffsiteRedirect, match=r"^redirected to another site: http://127\.0\.0\.2/admin$"):
        await guard.process_request(_redirected("http://127.0.0.2/admin", "http://127.0.0.1:8000/moved"))
    assert guard.stats.get_value("helppuff/guard/offsite_redirects") == 1
    # robots.txt may redirect anywhere (RFC 9309), and a request not redirected is not held to it.
    assert await guard.process_request(_redirected("http://127.0.0.2/robots.txt", "http://127.0.0.1:8000/robots.txt",
                                                   allow_offsite=True)) is None
    assert await guard.process_request(Request("http://127.0.0.2/admin")) is None


@pytest.mark.parametrize(("url", "reason", "kind"), [
    ("http://127.0.0.2/admin", "refused: 127.0.0.2 is a loopback address", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "refused: 169.254.169.254 is a link-local address", "link-local"),
    ("http://10.0.0.5:8080/", "refused: 10.0.0.5 is a private address", "private"),
    ("http://[::1]:8000/", "refused: ::1 is a loopback address", "loopback"),
    ("http://[fd00::5]/", "refused: fd00::5 is a private address", "private"),
    ("http://0.0.0.0:8000/", "refused: 0.0.0.0 is an unspecified address", "unspecified"),
])
@pytest_twisted.ensureDeferred
async def test_a_non_public_address_is_refused(url: str, reason: str, kind: str) -> None:
    guard = _guard(False)
    with pytest.raises(AddressRefused, match=f"^{reason.replace('.', '[.]')}$"):
        await guard.process_request(Request(url))
    assert guard.stats.get_value(f"helppuff/guard/refused/{kind}") == 1
    assert await _guard(True).process_request(Request(url)) is None  # the setting allows it


@pytest_twisted.ensureDeferred
async def test_every_address_a_name_resolves_to_is_checked() -> None:
    guard = _guard(False)
    with mapped_names({"acme.test": "93.184.215.14", "intranet.acme.test": "10.0.0.5"}):
        assert await guard.process_request(Request("https://acme.test/services")) is None
        with pytest.raises(AddressRefused, match=r"^refused: intranet\.acme\.test resolves to 10\.0\.0\.5, a private"):
            await guard.process_request(Request("https://intranet.acme.test/"))
        assert await guard.process_request(Request("https://nowhere.acme.test/")) is None  # left to the download


@pytest_twisted.ensureDeferred
async def test_a_list_allows_only_what_it_names() -> None:
    guard = _guard("127.0.0.1")
    assert await guard.process_request(Request("http://127.0.0.1:8000/")) is None
    with pytest.raises(AddressRefused, match="127.0.0.2 is a loopback address"):
        await guard.process_request(Request("http://127.0.0.2:8000/"))


@pytest_twisted.ensureDeferred
async def test_only_http_and_https_are_fetched() -> None:
    with pytest.raises(AddressRefused, match=r"^refused: file: is not fetched"):
        await _guard(True).process_request(Request("file:///etc/passwd"))


def test_the_address_a_response_came_from_is_checked() -> None:
    # A name that resolved to a public address before the request and to another at connection time.
    guard = _guard(False)
    request = Request("https://acme.test/services")
    response = HtmlResponse(request.url, body=b"<html></html>", request=request, ip_address=ipaddress.ip_address("10.0.0.5"))
    with pytest.raises(AddressRefused, match=r"^refused: acme\.test resolves to 10\.0\.0\.5, a private address$"):
        guard.process_response(request, response)
    public = HtmlResponse(request.url, body=b"", request=request, ip_address=ipaddress.ip_address("93.184.215.14"))
    assert guard.process_response(request, public) is public
    # Rendered pages are checked by the browser's guard; through an HTTP proxy the peer is the proxy.
    rendered = HtmlResponse(request.url, body=b"", request=request, flags=["playwright"],
                            ip_address=ipaddress.ip_address("127.0.0.1"))
    assert guard.process_response(request, rendered) is rendered
    proxied = Request(request.url, meta={"proxy": "http://10.0.0.1:3128"})
    through_proxy = response.replace(request=proxied)
    assert guard.process_response(proxied, through_proxy) is through_proxy


def test_a_bad_setting_names_it() -> None:
    with pytest.raises(ValueError, match="HELPPUFF_ALLOW_PRIVATE_ADDRESSES"):
        _guard("intranet")


# --- crawls ---------------------------------------------------------------------------------


def _pages(port: int) -> dict[str, str]:
    links = "".join(f'<a href="{path}">{path}</a> ' for path in ("/moved", "/refresh", "/old", "/services"))
    return {"/": page("Home", f"<p>{links}</p>"), "/services": page("Services"), "/new-home": page("Our new home")}


def _routes(port: int) -> dict[str, dict[str, Any]]:
    other = f"http://127.0.0.2:{port}/admin"
    refresh = f'<meta http-equiv="refresh" content="0; url={other}">'
    return {
        "/moved": {"status": 302, "headers": {"Location": other}},
        "/refresh": {"body": f"<html><head>{refresh}</head><body>Moved</body></html>"},
        "/old": {"status": 301, "headers": {"Location": "/new-home"}},
    }


def _pages_of(tmp_path: Path, origin: str) -> dict[str, dict[str, Any]]:
    return {r["url"].removeprefix(origin): r for r in kb_rows(tmp_path / "kb", "SELECT * FROM pages")}


def _learned_text(tmp_path: Path) -> str:
    return " ".join(r["text"] for r in kb_rows(tmp_path / "kb", "SELECT text FROM chunks"))


@BOTH_LOOPBACKS
@pytest_twisted.ensureDeferred
async def test_a_page_redirecting_to_another_host_is_skipped_and_the_host_never_asked(tmp_path: Path) -> None:
    with start_pair(tmp_path, _pages, _routes) as (site, other):
        crawler = make_crawler(project_settings(tmp_path))  # non-public addresses allowed: the site rule alone
        await crawler.crawl(url=site.url, site="guard", render_js="never")
        pages = _pages_of(tmp_path, site.url)
        assert other.requests == []  # not the page, not even its robots.txt
    target = f"http://127.0.0.2:{site.port}/admin"
    assert (pages["/moved"]["status"], pages["/moved"]["reason"]) == ("skipped", f"redirected to another site: {target}")
    assert pages["/moved"]["redirects"] == f'["{site.url}/moved"]'
    assert (pages["/refresh"]["status"], pages["/refresh"]["reason"]) == ("skipped", f"redirected to another site: {target}")
    assert crawler.stats.get_value("helppuff/guard/offsite_redirects") == 2
    # A redirect on the site is still followed, and learned.
    assert pages["/old"]["status"] == "ok" and pages["/old"]["final_url"] == f"{site.url}/new-home"
    assert pages[""]["status"] == "ok" and pages["/services"]["status"] == "ok"
    assert SECRET not in _learned_text(tmp_path) and "Services is what" in _learned_text(tmp_path)


@BOTH_LOOPBACKS
@pytest_twisted.ensureDeferred
async def test_what_still_ends_on_another_site_is_not_the_site_s_page(tmp_path: Path) -> None:
    # Without the middleware the redirect is followed (the other host is asked), and the spider
    # still does not take what came back as the site's page.
    with start_pair(tmp_path, _pages, _routes) as (site, other):
        settings = project_settings(tmp_path, DOWNLOADER_MIDDLEWARES={"helppuff_crawl.middlewares.guard.SiteGuardMiddleware": None})
        crawler = make_crawler(settings)
        await crawler.crawl(url=site.url, site="guard", render_js="never")
        pages = _pages_of(tmp_path, site.url)
        assert "/admin" in other.requests
    assert pages["/moved"]["status"] == "skipped"
    assert pages["/moved"]["reason"] == f"redirected to another site: http://127.0.0.2:{site.port}/admin"
    assert SECRET not in _learned_text(tmp_path)


@pytest_twisted.ensureDeferred
async def test_a_site_on_loopback_is_refused_whole_when_non_public_addresses_are(tmp_path: Path) -> None:
    with start_pair(tmp_path, _pages, _routes) as (site, other):
        crawler = make_crawler(project_settings(tmp_path, HELPPUFF_ALLOW_PRIVATE_ADDRESSES=False))
        await crawler.crawl(url=site.url, site="guard", render_js="never")
        assert site.requests == [] and other.requests == []  # nothing at all was sent
    (run,) = kb_rows(tmp_path / "kb", "SELECT status, reason FROM crawl_runs")
    assert (run["status"], run["reason"]) == ("failed", "home page skipped: refused: 127.0.0.1 is a loopback address")
    (home,) = kb_rows(tmp_path / "kb", "SELECT status, reason FROM pages")
    assert (home["status"], home["reason"]) == ("skipped", "refused: 127.0.0.1 is a loopback address")


def _named_pages(port: int) -> dict[str, str]:
    links = "".join(f'<a href="{href}">{href}</a> ' for href in (
        "/moved", "/elsewhere", "/services", f"http://www.site.test:{port}/intranet"))
    return {"/": page("Home", f"<p>{links}</p>"), "/services": page("Services")}


def _named_routes(port: int) -> dict[str, dict[str, Any]]:
    return {
        "/moved": {"status": 302, "headers": {"Location": f"http://www.site.test:{port}/admin"}},
        "/elsewhere": {"status": 302, "headers": {"Location": f"http://127.0.0.2:{port}/admin"}},
    }


@BOTH_LOOPBACKS
@pytest_twisted.ensureDeferred
async def test_a_public_site_leading_to_a_private_address(tmp_path: Path) -> None:
    # site.test stands for a public site (its address allowed, as a public one would be); its
    # www. name, the same site by the project's rule, resolves to 127.0.0.2, which is not allowed.
    with start_pair(tmp_path, _named_pages, _named_routes) as (site, other), \
            mapped_names({"site.test": "127.0.0.1", "www.site.test": "127.0.0.2"}) as names:
        origin = f"http://site.test:{site.port}"
        crawler = make_crawler(project_settings(tmp_path, HELPPUFF_ALLOW_PRIVATE_ADDRESSES="127.0.0.1"))
        await crawler.crawl(url=origin, site="guard", render_js="never")
        pages = _pages_of(tmp_path, origin)
        assert other.requests == [] and site.requests
    assert "www.site.test" in names.asked  # the check resolved it: through the reactor, as connections do
    refused = "refused: www.site.test resolves to 127.0.0.2, a loopback address"
    assert (pages["/moved"]["status"], pages["/moved"]["reason"]) == ("skipped", refused)
    assert pages["/moved"]["redirects"] == f'["{origin}/moved"]'
    www = _pages_of(tmp_path, f"http://www.site.test:{site.port}")
    assert (www["/intranet"]["status"], www["/intranet"]["reason"]) == ("skipped", refused)
    assert pages["/elsewhere"]["reason"] == f"redirected to another site: http://127.0.0.2:{site.port}/admin"
    assert pages[""]["status"] == "ok" and pages["/services"]["status"] == "ok"
    assert crawler.stats.get_value("helppuff/guard/refused/loopback") == 2
    assert SECRET not in _learned_text(tmp_path)


def _robots_routes(port: int) -> dict[str, dict[str, Any]]:
    return {"/robots.txt": {"status": 301, "headers": {"Location": f"http://127.0.0.2:{port}/robots.txt"}}}


_OTHER_ROBOTS = {"/robots.txt": {"body": "User-agent: *\nDisallow: /services\n",
                                 "headers": {"Content-Type": "text/plain"}}}


@BOTH_LOOPBACKS
@pytest_twisted.ensureDeferred
async def test_robots_txt_may_redirect_to_another_host_but_not_to_a_refused_address(tmp_path: Path) -> None:
    # RFC 9309 lets robots.txt redirect anywhere: the other host's rules are the site's.
    with start_pair(tmp_path, _pages, _robots_routes, _OTHER_ROBOTS) as (site, other):
        crawler = make_crawler(project_settings(tmp_path))
        await crawler.crawl(url=site.url, site="guard", render_js="never")
        assert other.requests == ["/robots.txt"]
    pages = _pages_of(tmp_path, site.url)
    assert (pages["/services"]["status"], pages["/services"]["reason"]) == ("skipped", "robots.txt: disallowed")
    # ... but the address rule holds for it too: not fetched, so robots.txt is unavailable (allow all).
    with start_pair(tmp_path / "refused", _pages, _robots_routes, _OTHER_ROBOTS) as (site, other):
        crawler = make_crawler(project_settings(tmp_path / "refused", HELPPUFF_ALLOW_PRIVATE_ADDRESSES="127.0.0.1"))
        await crawler.crawl(url=site.url, site="guard", render_js="never")
        assert other.requests == []
    pages = _pages_of(tmp_path / "refused", site.url)
    assert pages["/services"]["status"] == "ok"
    assert crawler.stats.get_value("helppuff/robots/allow_all") == 1
