"""Tests for helppuff_crawl.middlewares.robotstxt: real crawls of fixture sites on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from functools import partial
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request, Spider, signals
from twisted.python.failure import Failure

from helppuff_crawl.middlewares.robotstxt import (
    HelppuffRobotParser,
    HelppuffRobotsTxtMiddleware,
    RobotsConfig,
    RobotsDisallowed,
)
from helppuff_crawl.web.robots import RobotsRules
from tests.conftest import SITES
from tests.crawlers import component_crawler
from tests.sitesserver import SiteServer

UA = "helppuff-crawler/0.1.0 (+https://helppuff.com/crawler)"
SETTINGS: dict[str, Any] = {
    "ROBOTSTXT_OBEY": True,
    "DOWNLOADER_MIDDLEWARES": {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "helppuff_crawl.middlewares.robotstxt.HelppuffRobotsTxtMiddleware": 100,
    },
    "USER_AGENT": UA,
    "LOG_LEVEL": "WARNING",
    "RETRY_TIMES": 0,
    "TELNETCONSOLE_ENABLED": False,
}


class ProbeSpider(Spider):
    """Requests the given URLs and records, per URL, "ok" or the failure's "Type: message"."""

    name = "robots_probe"

    def __init__(self, urls: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = urls
        self.outcomes: dict[str, str] = {}

    async def start(self) -> AsyncIterator[Request]:
        for url in self.urls:
            yield Request(url, callback=self.parse, errback=self.failed, dont_filter=True)

    def parse(self, response: Any) -> None:
        self.outcomes[response.url] = "ok"

    def failed(self, failure: Failure) -> None:
        url = failure.request.url  # type: ignore[attr-defined]
        self.outcomes[url] = f"{type(failure.value).__name__}: {failure.value}"


def _crawler(**settings: Any) -> Any:
    return component_crawler(ProbeSpider, **{**SETTINGS, **settings})


def _robots_signals(crawler: Any) -> list[tuple[Any, str]]:
    """Record (robotparser, request URL) of every robots_parsed signal."""
    sent: list[tuple[Any, str]] = []

    def receiver(robotparser: Any, request: Request) -> None:
        sent.append((robotparser, request.url))

    crawler.signals.connect(receiver, signal=signals.robots_parsed, weak=False)
    return sent


@pytest_twisted.ensureDeferred
async def test_rules_for_our_group(serve_site: Any) -> None:
    server = serve_site("robots_rules")
    crawler = _crawler()
    sent = _robots_signals(crawler)
    urls = [f"{server.url}/", f"{server.url}/about", f"{server.url}/private/secret", f"{server.url}/private/ok.html"]
    await crawler.crawl(urls=urls)

    assert crawler.spider.outcomes == {
        f"{server.url}/": "ok",
        f"{server.url}/about": "ok",
        f"{server.url}/private/secret": "RobotsDisallowed: robots.txt: disallowed",
        f"{server.url}/private/ok.html": "ok",
    }
    stats = crawler.stats.get_stats()
    assert stats["helppuff/robots/status/200"] == 1  # one fetch for four requests
    assert stats["helppuff/robots/disallowed"] == 1
    assert "helppuff/robots/allow_all" not in stats and "helppuff/robots/disallow_all" not in stats

    # The signal: once, with the RobotsRules (and the Sitemap lines, the relative one resolved).
    assert len(sent) == 1
    parser, request_url = sent[0]
    assert isinstance(parser, HelppuffRobotParser)
    assert request_url in urls
    assert parser.rules.group == "helppuff-crawler"
    assert parser.rules.sitemaps == [f"{server.url}/sitemap.xml", f"{server.url}/sitemap-pages.xml"]
    assert parser.sitemaps == parser.rules.sitemaps
    # Scrapy's RobotParser interface answers for other agents too: they get the * group.
    assert parser.allowed(f"{server.url}/about", UA)
    assert not parser.allowed(f"{server.url}/about", "otherbot/1.0")


@pytest_twisted.ensureDeferred
async def test_robots_404_allows_all(serve_site: Any) -> None:
    server = serve_site("robots_404")
    crawler = _crawler()
    sent = _robots_signals(crawler)
    await crawler.crawl(urls=[f"{server.url}/page", f"{server.url}/missing"])

    assert crawler.spider.outcomes[f"{server.url}/page"] == "ok"
    # Allowed by robots.txt, then a plain 404 (HttpErrorMiddleware's, not ours).
    assert crawler.spider.outcomes[f"{server.url}/missing"].startswith("HttpError")
    stats = crawler.stats.get_stats()
    assert stats["helppuff/robots/status/404"] == 1
    assert stats["helppuff/robots/allow_all"] == 1
    ((parser, _),) = sent
    assert parser.rules.reason == "robots.txt 404: allow all"
    assert parser.rules.sitemaps == []


@pytest_twisted.ensureDeferred
async def test_robots_503_disallows_all_for_the_run(serve_site: Any) -> None:
    server = serve_site("robots_503")
    crawler = _crawler()
    sent = _robots_signals(crawler)
    await crawler.crawl(urls=[f"{server.url}/page", f"{server.url}/"])

    message = "RobotsDisallowed: robots.txt unavailable (503): disallowed for this run"
    assert crawler.spider.outcomes == {f"{server.url}/page": message, f"{server.url}/": message}
    stats = crawler.stats.get_stats()
    assert stats["helppuff/robots/status/503"] == 1
    assert stats["helppuff/robots/disallow_all"] == 1
    assert stats["helppuff/robots/disallowed"] == 2
    assert "downloader/response_status_count/200" not in stats  # no page was fetched
    ((parser, _),) = sent
    assert parser.rules.reason == "robots.txt 503: disallow all"


@pytest.fixture
def refused_url() -> str:
    """A loopback URL where nothing listens: connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest_twisted.ensureDeferred
async def test_unreachable_robots_disallows_all(refused_url: str) -> None:
    crawler = _crawler()
    sent = _robots_signals(crawler)
    await crawler.crawl(urls=[f"{refused_url}/page"])

    cause = "DownloadConnectionRefusedError"
    assert crawler.spider.outcomes == {
        f"{refused_url}/page": f"RobotsDisallowed: robots.txt unavailable ({cause}): disallowed for this run"
    }
    stats = crawler.stats.get_stats()
    assert stats["helppuff/robots/unreachable"] == 1
    assert stats["helppuff/robots/disallow_all"] == 1
    ((parser, _),) = sent
    assert parser.rules.reason == "robots.txt unreachable: DownloadConnectionRefusedError"


@pytest_twisted.ensureDeferred
async def test_redirected_robots_is_followed(serve_site: Any) -> None:
    server = serve_site("robots_redirect")
    crawler = _crawler()
    await crawler.crawl(urls=[f"{server.url}/open", f"{server.url}/blocked"])

    assert crawler.spider.outcomes == {
        f"{server.url}/open": "ok",
        f"{server.url}/blocked": "RobotsDisallowed: robots.txt: disallowed",
    }
    assert crawler.stats.get_value("helppuff/robots/status/200") == 1


@pytest_twisted.ensureDeferred
async def test_robots_redirect_loop_allows_all(serve_site: Any) -> None:
    server = serve_site("robots_loop")
    crawler = _crawler()
    sent = _robots_signals(crawler)
    await crawler.crawl(urls=[f"{server.url}/page"])

    assert crawler.spider.outcomes == {f"{server.url}/page": "ok"}
    # Five redirects are followed (RFC 9309 §2.3.1.2), then robots.txt counts as unavailable.
    assert crawler.stats.get_value("downloader/response_status_count/302") == 6
    ((parser, _),) = sent
    assert parser.rules.reason == "robots.txt not fetched (max redirections reached): allow all"


# --- crawl delay -----------------------------------------------------------------------------------


class _RecordingServer(SiteServer):
    """A fixture-site server that also records (monotonic time, path) of each request's arrival."""

    def __init__(self, name: str) -> None:
        super().__init__(SITES / name)
        self.arrivals: list[tuple[float, str]] = []
        lock = threading.Lock()
        inner: partial[Any] = self.httpd.RequestHandlerClass  # type: ignore[assignment]
        arrivals = self.arrivals

        class Recorder(inner.func):  # type: ignore[name-defined,misc]
            def parse_request(self) -> bool:
                ok = bool(super().parse_request())
                with lock:
                    arrivals.append((time.monotonic(), self.path))
                return ok

        self.httpd.RequestHandlerClass = partial(Recorder, *inner.args, **inner.keywords)  # type: ignore[assignment]


@pytest.fixture
def delay_server() -> Iterator[_RecordingServer]:
    with _RecordingServer("robots_delay") as server:
        yield server


def _slot_delays(crawler: Any) -> list[float]:
    """Record the downloader slot's delay each time a request reaches the downloader."""
    seen: list[float] = []

    def receiver(request: Request, spider: Spider) -> None:
        downloader = crawler.engine.downloader
        slot = downloader.slots.get(downloader.get_slot_key(request))
        seen.append(slot.delay if slot is not None else -1.0)

    crawler.signals.connect(receiver, signal=signals.request_reached_downloader, weak=False)
    return seen


@pytest_twisted.ensureDeferred
async def test_crawl_delay_spaces_requests_with_autothrottle_on(delay_server: _RecordingServer) -> None:
    crawler = _crawler(
        AUTOTHROTTLE_ENABLED=True,
        AUTOTHROTTLE_START_DELAY=0.0,
        CONCURRENT_REQUESTS_PER_DOMAIN=8,
    )
    url = delay_server.url
    await crawler.crawl(urls=[f"{url}/a", f"{url}/b", f"{url}/c"])

    assert set(crawler.spider.outcomes.values()) == {"ok"}
    paths = [path for _, path in delay_server.arrivals]
    assert paths[0] == "/robots.txt" and sorted(paths[1:]) == ["/a", "/b", "/c"]
    times = [at for at, _ in delay_server.arrivals]
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    # Crawl-delay: 1 keeps the requests at least a second apart (timer slack allowed), even though
    # AutoThrottle, seeing fast answers, would have cut the delay after the first page.
    assert len(gaps) == 3
    assert min(gaps) >= 0.9, gaps


@pytest_twisted.ensureDeferred
async def test_crawl_delay_is_capped(delay_server: _RecordingServer) -> None:
    crawler = _crawler(HELPPUFF_ROBOTS_MAX_CRAWL_DELAY=0.25, AUTOTHROTTLE_ENABLED=True, AUTOTHROTTLE_START_DELAY=0.0)
    delays = _slot_delays(crawler)
    url = delay_server.url
    await crawler.crawl(urls=[f"{url}/a", f"{url}/b"])

    assert set(crawler.spider.outcomes.values()) == {"ok"}
    assert crawler.stats.get_value("helppuff/robots/crawl_delay_capped") == 1
    # robots.txt went through before the rules were known; the pages at the capped delay.
    assert delays[1:] == [0.25, 0.25]


@pytest_twisted.ensureDeferred
async def test_download_delay_above_the_crawl_delay_is_kept(delay_server: _RecordingServer) -> None:
    crawler = _crawler(DOWNLOAD_DELAY=1.5)
    delays = _slot_delays(crawler)
    url = delay_server.url
    await crawler.crawl(urls=[f"{url}/a"])

    assert crawler.spider.outcomes == {f"{url}/a": "ok"}
    assert delays == [1.5, 1.5]
    assert crawler.stats.get_value("helppuff/robots/crawl_delay_capped") is None


# --- configuration ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, RobotsConfig(UA, 30.0, 0.0)),
        ({"HELPPUFF_ROBOTS_MAX_CRAWL_DELAY": "5", "DOWNLOAD_DELAY": 0.5}, RobotsConfig(UA, 5.0, 0.5)),
        ({"ROBOTSTXT_USER_AGENT": "otherbot"}, RobotsConfig("otherbot", 30.0, 0.0)),
    ],
)
def test_config(settings: dict[str, Any], expected: RobotsConfig) -> None:
    assert RobotsConfig.from_settings(_crawler(**settings).settings) == expected


@pytest.mark.parametrize("value", [-1, "nan"])
def test_bad_max_crawl_delay_names_the_setting(value: Any) -> None:
    with pytest.raises(ValueError, match="HELPPUFF_ROBOTS_MAX_CRAWL_DELAY"):
        RobotsConfig.from_settings(_crawler(HELPPUFF_ROBOTS_MAX_CRAWL_DELAY=value).settings)


def test_parser_adapter_from_crawler() -> None:
    crawler = _crawler()
    body = b"User-agent: helppuff-crawler\nDisallow: /a\nCrawl-delay: 2\n"
    parser = HelppuffRobotParser.from_crawler(crawler, body)
    assert parser.rules.group == "helppuff-crawler"
    assert not parser.allowed("http://h/a", UA)
    assert parser.allowed(b"http://h/a", b"otherbot")
    assert (parser.crawl_delay(UA), parser.crawl_delay("otherbot")) == (2.0, None)
    denied = HelppuffRobotParser(RobotsRules.disallow_all("robots.txt 500: disallow all"), denial="x")
    assert not denied.allowed("http://h/", "otherbot")
    assert issubclass(RobotsDisallowed, Exception)


def test_middleware_needs_robotstxt_obey() -> None:
    from scrapy.exceptions import NotConfigured

    with pytest.raises(NotConfigured):
        HelppuffRobotsTxtMiddleware(_crawler(ROBOTSTXT_OBEY=False))
