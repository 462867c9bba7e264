"""helppuff_crawl.web.page_status: what becomes of a page the spider asked for, rung by rung, from its
response (status, headers, body) or from its failed download; and a response that ended on another site."""

from __future__ import annotations

import pytest

from helppuff_crawl.web.page_status import (
    FailureKind,
    PageStatus,
    failure_status,
    offsite_status,
    page_status,
)

HTML = "text/html; charset=utf-8"
PAGE = b"<!DOCTYPE html><html><head><title>Menu</title></head><body><p>Buns and tarts.</p></body></html>"
CLOUDFLARE = b"<!DOCTYPE html><html><head><title>Just a moment...</title></head><body></body></html>"

RESPONSES = [
    # status, headers, body: (status, reason)
    pytest.param(200, {"Content-Type": HTML}, PAGE, ("fetched", ""), id="a-page"),
    pytest.param(401, {"Content-Type": HTML}, PAGE, ("blocked", "HTTP 401"), id="401"),
    pytest.param(403, {"Content-Type": HTML}, CLOUDFLARE, ("blocked", "HTTP 403"), id="403-before-the-challenge"),
    pytest.param(429, {}, b"", ("blocked", "HTTP 429"), id="429"),
    pytest.param(404, {"Content-Type": HTML}, PAGE, ("gone", "HTTP 404"), id="404"),
    pytest.param(410, {}, b"", ("gone", "HTTP 410"), id="410"),
    pytest.param(500, {"Content-Type": HTML}, PAGE, ("failed", "HTTP 500 after retries"), id="500"),
    pytest.param(503, {}, b"", ("failed", "HTTP 503 after retries"), id="503"),
    pytest.param(304, {}, b"", ("failed", "HTTP 304"), id="a-redirect-not-followed"),
    pytest.param(400, {"Content-Type": HTML}, PAGE, ("failed", "HTTP 400"), id="400"),
    pytest.param(405, {}, b"", ("failed", "HTTP 405"), id="405"),
    pytest.param(200, {"Content-Type": "application/pdf"}, b"%PDF-1.7", ("skipped", "not HTML: application/pdf"),
                 id="a-pdf"),
    pytest.param(200, {"Content-Type": "application/json; charset=utf-8"}, b"{}",
                 ("skipped", "not HTML: application/json"), id="json"),
    pytest.param(200, {}, b"%PDF-1.7", ("skipped", "not HTML: no content type"), id="no-type-not-html"),
    pytest.param(200, {}, PAGE, ("fetched", ""), id="no-type-sniffed"),
    pytest.param(200, {"Content-Type": "text/plain"}, b"  <html><body>Hi</body></html>", ("fetched", ""),
                 id="text-plain-sniffed"),
    pytest.param(200, {"Content-Type": "application/octet-stream"}, b"PK\x03\x04",
                 ("skipped", "not HTML: application/octet-stream"), id="octet-stream-not-html"),
    pytest.param(200, {"content-type": "application/xhtml+xml"}, PAGE, ("fetched", ""), id="header-name-in-any-case"),
    pytest.param(200, {"Content-Type": HTML}, CLOUDFLARE, ("blocked", "challenge page (cloudflare)"),
                 id="a-challenge-page"),
    pytest.param(200, {"Content-Type": HTML, "CF-Mitigated": "challenge"}, PAGE,
                 ("blocked", "challenge page (cf-mitigated: challenge)"), id="a-challenge-header"),
    pytest.param(200, {"Content-Type": HTML}, b"<html><title>Security check</title>are you a robot?</html>",
                 ("fetched", ""), id="captcha-words-outside-the-title"),
]


@pytest.mark.parametrize(("status", "headers", "body", "expected"), RESPONSES)
def test_a_response_is_judged_by_the_first_rung_that_holds(status: int, headers: dict[str, str], body: bytes,
                                                          expected: tuple[str, str]) -> None:
    verdict = page_status(status, headers, body, lambda: body.decode("utf-8", "replace"))
    assert (verdict.status, verdict.reason) == expected
    assert verdict.fetched is (expected[0] == "fetched")


def test_the_text_is_read_only_for_an_html_page_with_a_status_to_learn_from() -> None:
    def unread() -> str:
        raise AssertionError("the body was read as text")

    assert page_status(404, {"Content-Type": HTML}, PAGE, unread) == PageStatus("gone", "HTTP 404")
    assert page_status(200, {"Content-Type": "image/png"}, b"\x89PNG", unread).status == "skipped"
    assert page_status(200, {}, PAGE, lambda: "<html><body>as decoded</body></html>") == PageStatus("fetched")


@pytest.mark.parametrize(("url", "expected"), [
    ("https://acme.example/menu", None),
    ("https://www.acme.example/menu/", None),  # www. and the apex are one site
    ("http://acme.example", None),
    ("https://shop.example/menu", PageStatus("skipped", "redirected to another site: https://shop.example/menu")),
    ("https://acme.example:8443/menu",
     PageStatus("skipped", "redirected to another site: https://acme.example:8443/menu")),  # another port
    ("mailto:hello@acme.example", PageStatus("skipped", "redirected to another site: mailto:hello@acme.example")),
])
def test_a_response_that_ended_on_another_site_is_skipped(url: str, expected: PageStatus | None) -> None:
    assert offsite_status(url, "https://acme.example") == expected


FAILURES = [
    # kind, class name, message: (status, reason)
    pytest.param("robots", "RobotsDisallowed", "robots.txt: disallowed by Disallow: /private/",
                 ("skipped", "robots.txt: disallowed by Disallow: /private/"), id="robots"),
    pytest.param("robots", "RobotsDisallowed", "", ("skipped", "robots.txt: disallowed"), id="robots-no-message"),
    pytest.param("refused", "OffsiteRedirect", "redirected to another site: https://shop.example",
                 ("skipped", "redirected to another site: https://shop.example"), id="offsite-redirect"),
    pytest.param("refused", "AddressRefused", "refused: 127.0.0.2 is a loopback address",
                 ("skipped", "refused: 127.0.0.2 is a loopback address"), id="a-private-address"),
    pytest.param("ignored", "IgnoreRequest", "Max redirections reached",
                 ("failed", "redirect loop (too many redirects)"), id="redirect-loop"),
    pytest.param("ignored", "IgnoreRequest", "unsupported content type 'image/png'",
                 ("skipped", "unsupported content type 'image/png'"), id="ignored"),
    pytest.param("ignored", "IgnoreRequest", "", ("skipped", "IgnoreRequest"), id="ignored-no-message"),
    pytest.param("timeout", "TimeoutError", "User timeout caused connection failure.",
                 ("failed", "timed out after retries"), id="timeout"),
    pytest.param("unreachable", "DNSLookupError", "DNS lookup failed: no results for hostname lookup: acme.example.",
                 ("failed", "unreachable: DNSLookupError"), id="dns"),
    pytest.param("unreachable", "ConnectionRefusedError", "Connection was refused by other side: 111",
                 ("failed", "unreachable: ConnectionRefusedError"), id="refused-connection"),
    pytest.param("", "CancelledError", "Cancelling download of https://acme.example/big.html: received response "
                 "size (3500000) larger than download max size (3145728).",
                 ("skipped", "response over the 3 MB download limit"), id="over-the-size-limit"),
    pytest.param("", "ResponseNeverReceived", "  [<twisted.python.failure.Failure ConnectionLost>]\nmore",
                 ("failed", "ResponseNeverReceived: [<twisted.python.failure.Failure ConnectionLost>]"),
                 id="the-first-line"),
    pytest.param("", "ValueError", "", ("failed", "ValueError: "), id="no-message"),
    pytest.param("", "ValueError", "x" * 400, ("failed", ("ValueError: " + "x" * 400)[:300]), id="at-most-300"),
]


@pytest.mark.parametrize(("kind", "error", "message", "expected"), FAILURES)
def test_a_failed_download_is_judged_by_its_kind_then_its_message(kind: FailureKind, error: str, message: str,
                                                                  expected: tuple[str, str]) -> None:
    verdict = failure_status(kind, error, message)
    assert (verdict.status, verdict.reason) == expected
