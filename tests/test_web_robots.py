"""Tests for helppuff_crawl.web.robots: RFC 9309 conformance, crawl delay, sitemaps, hostile bodies."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helppuff_crawl.web.robots import (
    MAX_ROBOTS_BYTES,
    RobotsRule,
    RobotsRules,
    match_path,
    normalise_pattern,
    product_token,
)
from tests.conftest import SHARED_DATA, shared_data

UA = "helppuff-crawler/0.1.0 (+https://helppuff.com/crawler)"
OURS = "helppuff-crawler"


@cache
def _shared_json(*parts: str) -> Any:
    path = SHARED_DATA.joinpath(*parts)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _params(cases: list[dict[str, Any]] | None, keep: Any = lambda case: True, id_key: str = "name") -> list[Any]:
    """pytest params named after the cases, or one that skips (through shared_data) when absent."""
    if cases is None:
        return [pytest.param(None, id="absent")]
    return [pytest.param(case, id=case[id_key] or "empty") for case in cases if keep(case)]


def _xfail_params(cases: list[dict[str, Any]] | None, reasons: dict[str, str]) -> list[Any]:
    """The cases named in ``reasons``, each an expected failure (strict) with its reason."""
    if cases is None:
        return [pytest.param(None, id="absent")]
    xfail = pytest.mark.xfail
    return [
        pytest.param(case, id=case["name"], marks=xfail(strict=True, reason=reasons[case["name"]]))
        for case in cases
        if case["name"] in reasons
    ]


def _google_cases() -> list[dict[str, Any]] | None:
    return _shared_json("robots", "cases.json")


def _protego_cases() -> list[dict[str, Any]] | None:
    data = _shared_json("robots", "protego_cases.json")
    return None if data is None else data["allowed_cases"]


def _full_google() -> dict[str, Any] | None:
    return _shared_json("robots", "google_robotstxt_full.json")


def _check(case: dict[str, Any]) -> None:
    rules = RobotsRules.parse(case["robots"], case["agent"])
    assert rules.allowed(case["url"]) is case["allowed"], case["name"]


# --- google/robotstxt cases ------------------------------------------------------------------------

#: GoogleOnly_* cases (Google's extensions beyond RFC 9309) where we differ, and why.
GOOGLE_DISAGREEMENTS = {
    "GoogleOnly_AcceptUserAgentUpToFirstSpace#2": (
        "we read the product token of a User-Agent string, so 'Foo Bar' is the token 'foo' and the "
        "'Foo Bar' group (token 'foo') applies; Google compares the whole string 'Foo Bar'"
    ),
    "GoogleOnly_LineTooLong#2": (
        "Google cuts lines at 16,664 bytes, so its cut pattern matches; RFC 9309 sets no line limit and "
        "the whole pattern ('.../qux') is read, which does not match '.../fux'"
    ),
    "GoogleOnly_LineTooLong#5": (
        "Google cuts lines at 16,664 bytes, so its cut Allow pattern matches; RFC 9309 sets no line limit "
        "and the whole pattern ('.../qux') is read, which does not match '.../fux'"
    ),
}


def test_google_case_counts_are_pinned() -> None:
    cases = json.loads(shared_data("robots", "cases.json").read_text(encoding="utf-8"))
    assert len(cases) == 145
    assert sum(not case["google_only"] for case in cases) == 72
    names = {case["name"] for case in cases}
    assert set(GOOGLE_DISAGREEMENTS) <= names


@pytest.mark.parametrize("case", _params(_google_cases(), lambda case: not case["google_only"]))
def test_rfc9309_case(case: dict[str, Any]) -> None:
    shared_data("robots", "cases.json")
    _check(case)


def _google_only(case: dict[str, Any]) -> bool:
    return bool(case["google_only"]) and case["name"] not in GOOGLE_DISAGREEMENTS


@pytest.mark.parametrize("case", _params(_google_cases(), _google_only))
def test_google_only_case(case: dict[str, Any]) -> None:
    shared_data("robots", "cases.json")
    _check(case)


@pytest.mark.parametrize("case", _xfail_params(_google_cases(), GOOGLE_DISAGREEMENTS))
def test_google_only_disagreement(case: dict[str, Any]) -> None:
    shared_data("robots", "cases.json")
    _check(case)


def _full_google_cases(kind: str) -> list[dict[str, Any]] | None:
    data = _full_google()
    return None if data is None else data[kind]


@pytest.mark.parametrize("case", _params(_full_google_cases("path_params_query_cases"), id_key="url"))
def test_match_path_google_cases(case: dict[str, str]) -> None:
    shared_data("robots", "google_robotstxt_full.json")
    assert match_path(case["url"]) == case["expected_path"]


@pytest.mark.parametrize("case", _params(_full_google_cases("escape_pattern_cases"), id_key="pattern"))
def test_normalise_pattern_google_cases(case: dict[str, str]) -> None:
    shared_data("robots", "google_robotstxt_full.json")
    assert normalise_pattern(case["pattern"]) == case["expected"]


# --- Protego's own test cases ----------------------------------------------------------------------

_TOKEN = (
    "RFC 9309 §2.2.1: a group applies when its product token equals the crawler's; Protego also takes "
    "a group whose name starts a word of the agent string"
)
_AS_GIVEN = (
    "RFC 9309 conformance cases (ID_Encoding): the URL is matched as given and pattern escapes are never "
    "decoded; Protego decodes and re-encodes both sides"
)
_UNKNOWN = (
    "RFC 9309 §2.2.4 (ID_LineSyntax_Groups_OtherRules#3): an unknown record does not end a group; "
    "Protego starts a new group after it"
)
_DOLLAR = "RFC 9309 §2.2.3: a final '$' only anchors the end; Protego also reads it as a literal '$'"
_ABSOLUTE = "RFC 9309 §2.2.2: a rule's path starts with '/'; Protego reads 'http://x/' as the path '/http://x/'"

#: Protego test-suite cases where RFC 9309 (as the google/robotstxt ID_* cases pin it) says otherwise.
PROTEGO_DISAGREEMENTS = {
    "test_user_agent_precedence[/group1-hedwig-news2]#1": _TOKEN,
    "test_user_agent_precedence[/group3-hedwig-new]#2": _TOKEN,
    "test_user_agent_precedence[/group3-hedwig-new]#3": _TOKEN,
    "test_user_agent_precedence[/group3-hedwig-images]#2": _TOKEN,
    "test_user_agent_precedence[/group3-hedwig-images]#3": _TOKEN,
    "test_unicode_url_and_useragent#15": _TOKEN,
    "test_escaped_url#1": _AS_GIVEN,
    "test_escaped_url#3": _AS_GIVEN,
    "test_unescaped_url#1": _AS_GIVEN,
    "test_unescaped_url#3": _AS_GIVEN,
    "test_unicode_url_and_useragent#6": _AS_GIVEN,
    "test_unicode_url_and_useragent#8": _AS_GIVEN,
    "test_1996rfc_examples#15": _AS_GIVEN,
    "test_1996rfc_examples#16": _AS_GIVEN,
    "test_1996rfc_examples#56": _AS_GIVEN,
    "test_percentage_encoding#3": _AS_GIVEN,
    "test_percentage_encoding#5": _AS_GIVEN,
    "test_percentage_encoding#6": _AS_GIVEN,
    "test_grouping_unknown_keys#1": _UNKNOWN,
    "test_grouping_unknown_keys#2": _UNKNOWN,
    "test_grouping_unknown_keys#3": _UNKNOWN,
    "test_special_symbols_dual_behaviour#2": _DOLLAR,
    "test_special_symbols_dual_behaviour#3": _DOLLAR,
    "test_with_absolute_urls#2": _ABSOLUTE,
}


def test_protego_agreement_is_pinned() -> None:
    data = json.loads(shared_data("robots", "protego_cases.json").read_text(encoding="utf-8"))
    names = [case["name"] for case in data["allowed_cases"]]
    assert len(names) == 376
    assert set(PROTEGO_DISAGREEMENTS) <= set(names)
    # 352 of Protego's 376 pinned verdicts agree; the other 24 are the RFC 9309 differences above.
    assert len(names) - len(PROTEGO_DISAGREEMENTS) == 352


@pytest.mark.parametrize("case", _params(_protego_cases(), lambda case: case["name"] not in PROTEGO_DISAGREEMENTS))
def test_protego_case(case: dict[str, Any]) -> None:
    shared_data("robots", "protego_cases.json")
    _check(case)


@pytest.mark.parametrize("case", _xfail_params(_protego_cases(), PROTEGO_DISAGREEMENTS))
def test_protego_disagreement(case: dict[str, Any]) -> None:
    shared_data("robots", "protego_cases.json")
    _check(case)


def test_protego_other_records() -> None:
    data = json.loads(shared_data("robots", "protego_cases.json").read_text(encoding="utf-8"))
    records = data["other_records"]
    assert len(records) == 9
    for record in records:
        rules = RobotsRules.parse(record["robots"], record.get("agent", UA))
        got = rules.sitemaps if record["kind"] == "sitemaps" else rules.crawl_delay
        assert got == record["result"], record["test"]


# --- groups and matching ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "token"),
    [
        (UA, "helppuff-crawler"),
        ("HelpPuff-Crawler", "helppuff-crawler"),
        ("Foo Bar", "foo"),
        ("  foobot/2.1 extra", "foobot"),
        ("foobot*", "foobot"),
        ("*", "*"),
        ("", ""),
    ],
)
def test_product_token(agent: str, token: str) -> None:
    assert product_token(agent) == token


@pytest.mark.parametrize(
    ("robots", "url", "allowed", "group"),
    [
        # our group wins over *
        ("User-agent: *\nDisallow: /\nUser-agent: helppuff-crawler\nDisallow: /x\n", "http://h/a", True, OURS),
        # a version or a wildcard in the group's value: still our product token
        ("User-agent: HelpPuff-Crawler/2.0\nDisallow: /a\n", "http://h/a", False, OURS),
        ("User-agent: helppuff-crawler*\nDisallow: /a\n", "http://h/a", False, OURS),
        # a prefix of our token is another crawler: its group is not ours (equality, RFC 9309 §2.2.1)
        ("User-agent: helppuff\nDisallow: /\n", "http://h/a", True, ""),
        ("User-agent: helppuff\nDisallow: /\nUser-agent: *\nDisallow: /b\n", "http://h/a", True, "*"),
        # every group naming us is merged
        ("User-agent: helppuff-crawler\nDisallow: /a\n\nUser-agent: x\nDisallow: /\n\n"
         "User-agent: helppuff-crawler\nDisallow: /b\n", "http://h/b", False, OURS),
        # a Crawl-delay or unknown line between User-agent lines does not end the group
        ("User-agent: x\nCrawl-delay: 3\nUser-agent: helppuff-crawler\nDisallow: /\n", "http://h/a", False, OURS),
        ("User-agent: helppuff-crawler\nFoo: bar\nUser-agent: x\nDisallow: /\n", "http://h/a", False, OURS),
        # rules before any User-agent belong to no group
        ("Disallow: /\nUser-agent: *\nAllow: /x\n", "http://h/a", True, "*"),
        # an empty User-agent value starts a group that names nobody
        ("User-agent: *\nDisallow: /a\nUser-agent:\nDisallow: /\n", "http://h/b", True, "*"),
        # lenient spellings Protego accepts
        ("User agent: helppuff-crawler\nDisalow: /a\n", "http://h/a", False, OURS),
        ("useragent helppuff-crawler\ndisallow /a:b\n", "http://h/a:b", False, OURS),
    ],
)
def test_groups(robots: str, url: str, allowed: bool, group: str) -> None:
    rules = RobotsRules.parse(robots, UA)
    assert rules.allowed(url) is allowed
    assert rules.group == group


@pytest.mark.parametrize(
    ("pattern", "url", "allowed"),
    [
        ("/a*c", "http://h/abbbc", False),
        ("/a*c$", "http://h/abcx", True),
        ("/a*c$", "http://h/abcxc", False),
        ("/*.php$", "http://h/x.php?q=1", True),
        ("/*.php", "http://h/x.php?q=1", False),
        ("/p?q=1", "http://h/p?q=1&r=2", False),
        ("/x;y", "http://h/x;y#frag", False),
        # escapes compared as given, hex digits in any case
        ("/caf%c3%a9", "http://h/caf%C3%A9", False),
        ("/caf%C3%A9", "http://h/caf%c3%a9", False),
        ("/café", "http://h/caf%C3%A9", False),
        ("/%7Ejoe", "http://h/~joe", True),
        # space and other characters a URL never holds raw are percent-encoded in patterns
        ("/a b", "http://h/a%20b", False),
        ("/a|b", "http://h/a%7Cb", False),
        # * and $ named verbatim by their escapes (RFC 9309 §2.2.3); a $ before the end is a plain $
        ("/file-%2A.html", "http://h/file-*.html", False),
        ("/foo-%24", "http://h/foo-$", False),
        ("/x$/y", "http://h/x$/yz", False),
        ("/x$/y", "http://h/x%24/yz", False),
        ("/x$", "http://h/x$", True),
        # /robots.txt is always allowed
        ("/", "http://h/robots.txt", True),
        ("/", "http://h/robots.txt?x=1", True),
    ],
)
def test_disallow_patterns(pattern: str, url: str, allowed: bool) -> None:
    assert RobotsRules.parse(f"User-agent: *\nDisallow: {pattern}\n", UA).allowed(url) is allowed


def test_longest_match_wins_and_allow_wins_a_tie() -> None:
    rules = RobotsRules.parse("User-agent: *\nDisallow: /a\nAllow: /a/b\nDisallow: /a/b/c\nAllow: /a/b/c\n", UA)
    assert [(r.allow, r.pattern) for r in rules.rules] == [
        (True, "/a/b/c"),
        (False, "/a/b/c"),
        (True, "/a/b"),
        (False, "/a"),
    ]
    assert [rules.allowed(f"http://h{p}") for p in ("/a", "/a/b", "/a/b/c", "/x")] == [False, True, True, True]


def test_index_html_allows_the_directory() -> None:
    rules = RobotsRules.parse("User-agent: *\nDisallow: /\nAllow: /docs/index.html\n", UA)
    assert RobotsRule(True, "/docs/$") in rules.rules
    assert rules.allowed("http://h/docs/")
    assert not rules.allowed("http://h/docs/other")


# --- crawl delay and sitemaps ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("robots", "delay"),
    [
        ("User-agent: *\nCrawl-delay: 5\n", 5.0),
        ("User-agent: *\nCrawl-delay: 0.5\nDisallow: /x\n", 0.5),
        ("User-agent: *\nCrawl-delay: soon\n", None),
        ("User-agent: *\nCrawl-delay: -3\n", None),
        ("User-agent: otherbot\nCrawl-delay: 9\n", None),
        ("User-agent: *\nCrawl-delay: 9\n\nUser-agent: helppuff-crawler\nCrawl-delay: 2\nDisallow:\n", 2.0),
        ("User-agent: x\nCrawl-delay: 4\nUser-agent: helppuff-crawler\nDisallow: /x\n", 4.0),
        ("User-agent: *\nRequest-rate: 1/10s\n", 10.0),
        ("User-agent: *\nRequest-rate: 3/1m\n", 20.0),
        ("User-agent: *\nRequest-rate: 2/5\n", 2.5),
        ("User-agent: *\nRequest-rate: 1/10s\nCrawl-delay: 3\n", 10.0),
        ("User-agent: *\nCrawl-delay: 15\nRequest-rate: 1/5s\n", 15.0),
        ("User-agent: *\nRequest-rate: 0/5s\n", None),
        ("Crawl-delay: 7\n", None),
    ],
)
def test_crawl_delay(robots: str, delay: float | None) -> None:
    assert RobotsRules.parse(robots, UA).crawl_delay == delay


@pytest.mark.parametrize(
    ("robots", "base_url", "sitemaps"),
    [
        ("Sitemap: https://h.test/sitemap.xml\n", None, ["https://h.test/sitemap.xml"]),
        # anywhere, any case, with a comment, without a colon; duplicates once
        (
            "User-agent: *\nSITEMAP: https://h.test/a.xml # main\nDisallow: /x\n"
            "sitemap https://h.test/b.xml\nSitemap: https://h.test/a.xml\n",
            None,
            ["https://h.test/a.xml", "https://h.test/b.xml"],
        ),
        # relative: joined to the robots.txt URL when given, else kept as written
        ("Sitemap: /s.xml\n", "https://h.test/robots.txt", ["https://h.test/s.xml"]),
        ("Sitemap: /s.xml\n", None, ["/s.xml"]),
        ("Sitemap:\nUser-agent: *\n", None, []),
    ],
)
def test_sitemaps(robots: str, base_url: str | None, sitemaps: list[str]) -> None:
    assert RobotsRules.parse(robots, UA, base_url=base_url).sitemaps == sitemaps


def test_sitemap_between_user_agent_lines_keeps_the_group() -> None:
    robots = "User-agent: helppuff-crawler\nSitemap: https://h.test/s.xml\nUser-agent: x\nDisallow: /\n"
    rules = RobotsRules.parse(robots, UA)
    assert rules.sitemaps == ["https://h.test/s.xml"]
    assert not rules.allowed("http://h.test/a")


# --- size, encodings, line endings -----------------------------------------------------------------


def test_body_over_500_kib_is_cut_and_later_rules_ignored() -> None:
    head = b"User-agent: *\nDisallow: /early\n"
    padding = b"# padding line to push the next rule past the limit\n" * (600 * 1024 // 52)
    rules = RobotsRules.parse(head + padding + b"Disallow: /\n", UA)
    assert rules.truncated
    assert not rules.allowed("http://h/early")
    assert rules.allowed("http://h/late")


def test_line_cut_by_the_limit_is_dropped_whole() -> None:
    head = b"User-agent: *\n"
    filler = b"#" * (MAX_ROBOTS_BYTES - len(head) - len(b"Disallow: /") - 1) + b"\n"
    # "Disallow: /abc" straddles the limit: cut mid-line it would read "Disallow: /" (everything).
    body = head + filler + b"Disallow: /abc\n"
    assert len(head + filler) + len(b"Disallow: /") == MAX_ROBOTS_BYTES
    rules = RobotsRules.parse(body, UA)
    assert rules.truncated
    assert rules.allowed("http://h/other")


def test_body_at_the_limit_is_whole() -> None:
    head = b"User-agent: *\nDisallow: /x\n"
    body = head + b"#" * (MAX_ROBOTS_BYTES - len(head))
    rules = RobotsRules.parse(body, UA)
    assert not rules.truncated
    assert not rules.allowed("http://h/x")


@pytest.mark.parametrize(
    ("body", "disallowed"),
    [
        (b"\xef\xbb\xbfUser-agent: *\nDisallow: /\n", True),  # a byte order mark
        (b"\xef\xbbUser-agent: *\nDisallow: /\n", True),  # the start of one
        (b"\xefUser-agent: *\nDisallow: /\n", True),
        (b"\xef\x11\xbfUser-agent: *\nDisallow: /\n", False),  # a broken one spoils the first line
        (b"User-agent: *\n\xef\xbb\xbfDisallow: /\n", False),  # one inside the file spoils its line
        ("\ufeffUser-agent: *\nDisallow: /\n", True),  # str input with a BOM
    ],
)
def test_byte_order_mark(body: bytes | str, disallowed: bool) -> None:
    assert RobotsRules.parse(body, UA).allowed("http://h/a") is not disallowed


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r", "mixed"])
def test_line_endings(newline: str) -> None:
    lines = ["User-Agent: foo", "Allow: /some/path", "User-Agent: helppuff-crawler", "", "", "Disallow: /x"]
    if newline == "mixed":
        body = "\n".join(lines[:2]) + "\r\n" + "\r".join(lines[2:])
    else:
        body = newline.join(lines)  # no final newline
    rules = RobotsRules.parse(body.encode(), UA)
    assert not rules.allowed("http://h/x")
    assert rules.allowed("http://h/some/path")
    # foo's group ended at its Allow line: the Disallow after the blank lines is ours only
    assert RobotsRules.parse(body, "foo").allowed("http://h/x")


def test_invalid_utf8_is_replaced() -> None:
    rules = RobotsRules.parse(b"User-agent: *\nDisallow: /caf\xe9\n", UA)
    assert rules.rules == (RobotsRule(False, "/caf%EF%BF%BD"),)
    assert rules.allowed("http://h/cafe")


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x00\x01\x02\xff\xfe\xfd" * 1000,
        bytes(range(256)) * 50,
        b"<html><body><h1>Not Found</h1></body></html>",
        b"User-agent: *\nDisallow: \x00\n\x85\x0b\x0cUser-agent\x1c: *\n",
        b"Crawl-delay: nan\nUser-agent: *\nCrawl-delay: inf\nRequest-rate: 1/0s\nSitemap: http://[::1\n",
    ],
)
def test_garbage_does_not_raise(body: bytes) -> None:
    rules = RobotsRules.parse(body, UA, base_url="http://h/robots.txt")
    assert rules.allowed("http://h/a") is True
    assert rules.crawl_delay is None


@settings(deadline=None, max_examples=200)
@given(body=st.binary(max_size=2000) | st.text(max_size=500), agent=st.text(max_size=30), url=st.text(max_size=60))
def test_any_input_parses(body: bytes | str, agent: str, url: str) -> None:
    rules = RobotsRules.parse(body, agent, base_url="http://h/robots.txt")
    assert isinstance(rules.allowed(url), bool)
    assert rules.crawl_delay is None or rules.crawl_delay >= 0


# --- allow all / disallow all ----------------------------------------------------------------------


def test_allow_all_and_disallow_all() -> None:
    allow = RobotsRules.allow_all("robots.txt 404: allow all")
    deny = RobotsRules.disallow_all("robots.txt 503: disallow all")
    assert (allow.reason, deny.reason) == ("robots.txt 404: allow all", "robots.txt 503: disallow all")
    for url in ("http://h/", "http://h/a?b", "http://h/robots.txt"):
        assert allow.allowed(url) is True
        assert deny.allowed(url) is False
    assert (allow.sitemaps, allow.crawl_delay, deny.sitemaps, deny.crawl_delay) == ([], None, [], None)
    parsed = RobotsRules.parse("", UA)
    assert (parsed.reason, parsed.verdict, parsed.group) == ("", None, "")
