"""robots.txt for every host we fetch from, per RFC 9309, with its crawl delay.

Enable (replacing Scrapy's own middleware)::

    ROBOTSTXT_OBEY = True
    DOWNLOADER_MIDDLEWARES = {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "helppuff_crawl.middlewares.robotstxt.HelppuffRobotsTxtMiddleware": 100,
    }

The first request to a host (``host:port``) fetches its ``/robots.txt`` once; requests to the same
host wait for it. The rules are those of the group for our product token, read from
``ROBOTSTXT_USER_AGENT`` or else ``USER_AGENT`` (``helppuff-crawler/0.1.0 (+...)`` gives
``helppuff-crawler``), else of the ``*`` group (see :mod:`helppuff_crawl.web.robots`). What the fetch
gives (RFC 9309 §2.3.1):

- 2xx: the body is parsed, at most 500 KiB of it (a longer one is cut at its last whole line and
  counted). The request may read up to :data:`ROBOTS_DOWNLOAD_MAXSIZE` (5 MiB, above the project's
  3 MB ``DOWNLOAD_MAXSIZE``) so that a big file is cut by us rather than cancelled by the downloader;
  past 5 MiB the download is cancelled and counts as unreachable.
- 4xx, a 3xx that was not followed, more than 5 redirects, or any other status: allow all.
- 5xx (after RetryMiddleware's retries), or unreachable (DNS, refused, timeout, any download
  error): disallow all, for this run.

A disallowed request raises :class:`RobotsDisallowed` (an ``IgnoreRequest``) whose message is the
page's reason: ``robots.txt: disallowed``, or ``robots.txt unavailable (503): disallowed for this
run`` when the disallow-all comes from a failed fetch.

Crawl delay: a ``Crawl-delay`` (or ``Request-rate``, as seconds per request; the larger) in our group
becomes the downloader slot's delay for that host: max(``DOWNLOAD_DELAY``, the delay), the delay
capped at ``HELPPUFF_ROBOTS_MAX_CRAWL_DELAY``. The slot's jitter is set to 0 (Scrapy's default
±50% jitter would go below the delay), new slots for the host start from it (the downloader
drops idle slots), and requests to the host carry meta ``autothrottle_dont_adjust_delay`` so that
AutoThrottle, which only keeps delays above ``DOWNLOAD_DELAY``, does not lower it.

Sharing: every outcome, parsed or not, is sent once per host with Scrapy's ``robots_parsed`` signal
(``robotparser=``, ``request=`` the request that caused the fetch), before waiting requests go on.
``robotparser`` is a :class:`HelppuffRobotParser`, Scrapy's ``RobotParser`` interface, whose
``.rules`` is the :class:`~helppuff_crawl.web.robots.RobotsRules` (``.sitemaps``, ``.crawl_delay``,
``.reason``): the spider reads the ``Sitemap:`` lines from there, so robots.txt is fetched once per
host. ``ROBOTSTXT_PARSER`` is not used by this middleware (it may point to
:class:`HelppuffRobotParser` for Scrapy's own middleware).

Settings: ``ROBOTSTXT_OBEY`` (must be True), ``USER_AGENT``/``ROBOTSTXT_USER_AGENT``,
``HELPPUFF_ROBOTS_MAX_CRAWL_DELAY`` (30.0 seconds), ``DOWNLOAD_DELAY``.
Stats: ``helppuff/robots/status/<code>``, ``helppuff/robots/unreachable``,
``helppuff/robots/allow_all``, ``helppuff/robots/disallow_all``, ``helppuff/robots/truncated``,
``helppuff/robots/disallowed``, ``helppuff/robots/crawl_delay_capped``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Self

from scrapy import signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request
from scrapy.http.request import NO_CALLBACK
from scrapy.robotstxt import RobotParser
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.python import to_unicode
from twisted.internet.defer import Deferred

from helppuff_crawl.web.robots import MAX_ROBOTS_BYTES, RobotsRules, product_token

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

#: The most a robots.txt download may read; RobotsRules reads the first 500 KiB of it.
ROBOTS_DOWNLOAD_MAXSIZE = 5 * 1024 * 1024
#: Redirects followed for robots.txt (RFC 9309 §2.3.1.2: at least five).
ROBOTS_MAX_REDIRECTS = 5

DISALLOWED = "robots.txt: disallowed"


class RobotsDisallowed(IgnoreRequest):
    """robots.txt does not let us fetch this URL; the message is the page's reason."""


@dataclass(frozen=True)
class RobotsConfig:
    user_agent: str  # the User-Agent whose product token picks the robots.txt group
    max_crawl_delay: float  # seconds; a longer Crawl-delay is capped to this
    download_delay: float  # DOWNLOAD_DELAY: the slot delay never goes below it

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RobotsConfig:
        cap = settings.getfloat("HELPPUFF_ROBOTS_MAX_CRAWL_DELAY")
        if not math.isfinite(cap) or cap < 0:
            raise ValueError(f"HELPPUFF_ROBOTS_MAX_CRAWL_DELAY must be >= 0 seconds, got {cap}")
        user_agent = settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT") or ""
        return cls(str(user_agent), cap, settings.getfloat("DOWNLOAD_DELAY"))


class HelppuffRobotParser(RobotParser):
    """Scrapy's RobotParser interface over :class:`RobotsRules`; ``rules`` are for our user agent."""

    def __init__(
        self,
        rules: RobotsRules,
        *,
        user_agent: str = "",
        body: bytes = b"",
        base_url: str | None = None,
        denial: str = DISALLOWED,
    ) -> None:
        self.rules = rules
        self.denial = denial  # the RobotsDisallowed message for a URL these rules disallow
        self._body = body
        self._base_url = base_url
        self._by_token = {product_token(user_agent): rules}

    @classmethod
    def from_crawler(cls, crawler: Crawler, robotstxt_body: bytes) -> Self:
        user_agent = RobotsConfig.from_settings(crawler.settings).user_agent
        rules = RobotsRules.parse(robotstxt_body, user_agent)
        return cls(rules, user_agent=user_agent, body=robotstxt_body)

    @property
    def sitemaps(self) -> list[str]:
        return self.rules.sitemaps

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        return self._rules_for(user_agent).allowed(to_unicode(url))

    def crawl_delay(self, user_agent: str | bytes) -> float | None:
        return self._rules_for(user_agent).crawl_delay

    def _rules_for(self, user_agent: str | bytes) -> RobotsRules:
        if self.rules.verdict is not None:
            return self.rules
        token = product_token(to_unicode(user_agent))
        if token not in self._by_token:
            self._by_token[token] = RobotsRules.parse(self._body, token, base_url=self._base_url)
        return self._by_token[token]


class HelppuffRobotsTxtMiddleware(RobotsTxtMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)  # raises NotConfigured unless ROBOTSTXT_OBEY
        self.config = RobotsConfig.from_settings(crawler.settings)
        self.stats = crawler.stats
        self._delays: dict[str, float] = {}  # netloc -> crawl delay held on its downloader slot

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        netloc = urlparse_cached(request).netloc
        if not request.meta.get("dont_obey_robotstxt") and not request.url.startswith(("data:", "file:")):
            parser = await self.robot_parser(request)
            self.process_request_2(parser, request)
        self._hold_crawl_delay(request, netloc)

    def process_request_2(self, rp: RobotParser | None, request: Request) -> None:
        if not isinstance(rp, HelppuffRobotParser) or rp.rules.allowed(request.url):
            return
        self.stats.inc_value("helppuff/robots/disallowed")
        logger.debug("%s: %s", rp.denial, request.url, extra={"spider": self.crawler.spider})
        raise RobotsDisallowed(rp.denial)

    async def robot_parser(self, request: Request) -> RobotParser | None:
        url = urlparse_cached(request)
        netloc = url.netloc
        if netloc not in self._parsers:
            waiting: Deferred[RobotParser | None] = Deferred()
            self._parsers[netloc] = waiting
            parser = await self._fetch(f"{url.scheme}://{netloc}/robots.txt")
            self._set_crawl_delay(netloc, parser.rules)
            self._parsers[netloc] = parser
            await self.crawler.signals.send_catch_log_async(
                signal=signals.robots_parsed, robotparser=parser, request=request
            )
            waiting.callback(parser)
        found = self._parsers[netloc]
        if isinstance(found, Deferred):
            # Each waiter gets its own Deferred: awaiting a Deferred as an asyncio Future consumes
            # its result, so a second waiter on the shared one would get None, i.e. no rules at all
            # (as in Scrapy 2.19's own middleware).
            mine: Deferred[RobotParser | None] = Deferred()
            found.addCallback(_relay, mine)
            return await maybe_deferred_to_future(mine)
        return found

    async def _fetch(self, robots_url: str) -> HelppuffRobotParser:
        robots_request = Request(
            robots_url,
            priority=self.DOWNLOAD_PRIORITY,
            meta={
                "dont_obey_robotstxt": True,
                "download_maxsize": ROBOTS_DOWNLOAD_MAXSIZE,
                "redirect_ttl": ROBOTS_MAX_REDIRECTS,
                "allow_offsite": True,  # robots.txt may redirect to another host (RFC 9309 §2.3.1.2)
            },
            callback=NO_CALLBACK,
        )
        try:
            response = await self.crawler.engine.download_async(robots_request)
        except IgnoreRequest as exc:
            # e.g. more than ROBOTS_MAX_REDIRECTS redirects: unavailable (RFC 9309 §2.3.1.2, §2.3.1.3)
            return self._allow_all(robots_url, f"robots.txt not fetched ({exc}): allow all")
        except Exception as exc:  # noqa: BLE001 - any download failure is "unreachable" (RFC 9309 §2.3.1.4)
            name = type(exc).__name__
            self.stats.inc_value("helppuff/robots/unreachable")
            return self._disallow_all(robots_url, f"robots.txt unreachable: {name}", name, exc)

        status = response.status
        self.stats.inc_value(f"helppuff/robots/status/{status}")
        if 500 <= status < 600:
            return self._disallow_all(robots_url, f"robots.txt {status}: disallow all", str(status))
        if not 200 <= status < 300:
            return self._allow_all(robots_url, f"robots.txt {status}: allow all")
        rules = RobotsRules.parse(response.body, self.config.user_agent, base_url=response.url)
        if rules.truncated:
            self.stats.inc_value("helppuff/robots/truncated")
            logger.warning(
                "%s is %d bytes: only its first 500 KiB are read",
                robots_url,
                len(response.body),
                extra={"spider": self.crawler.spider},
            )
        logger.info(
            "%s: group %r, %d rules, crawl delay %s, %d sitemaps",
            robots_url,
            rules.group or "(none)",
            len(rules.rules),
            rules.crawl_delay,
            len(rules.sitemaps),
            extra={"spider": self.crawler.spider},
        )
        # Kept for other user agents' rules (Scrapy's RobotParser interface): what parse() reads.
        body = response.body[: MAX_ROBOTS_BYTES + 1]
        return HelppuffRobotParser(rules, user_agent=self.config.user_agent, body=body, base_url=response.url)

    def _allow_all(self, robots_url: str, reason: str) -> HelppuffRobotParser:
        self.stats.inc_value("helppuff/robots/allow_all")
        logger.info("%s: %s", robots_url, reason, extra={"spider": self.crawler.spider})
        return HelppuffRobotParser(RobotsRules.allow_all(reason), user_agent=self.config.user_agent)

    def _disallow_all(
        self, robots_url: str, reason: str, cause: str, exc: Exception | None = None
    ) -> HelppuffRobotParser:
        self.stats.inc_value("helppuff/robots/disallow_all")
        logger.warning(
            "%s: %s%s: no page of this host is fetched in this run",
            robots_url,
            reason,
            f" ({exc})" if exc is not None and str(exc) else "",
            extra={"spider": self.crawler.spider},
        )
        return HelppuffRobotParser(
            RobotsRules.disallow_all(reason),
            user_agent=self.config.user_agent,
            denial=f"robots.txt unavailable ({cause}): disallowed for this run",
        )

    def _set_crawl_delay(self, netloc: str, rules: RobotsRules) -> None:
        delay = rules.crawl_delay
        if not delay:
            return
        cap = self.config.max_crawl_delay
        if delay > cap:
            self.stats.inc_value("helppuff/robots/crawl_delay_capped")
            logger.warning(
                "robots.txt of %s asks for %g s between requests: capped at %g s "
                "(HELPPUFF_ROBOTS_MAX_CRAWL_DELAY)",
                netloc,
                delay,
                cap,
                extra={"spider": self.crawler.spider},
            )
            delay = cap
        delay = max(self.config.download_delay, delay)
        if delay > 0:
            self._delays[netloc] = delay

    def _hold_crawl_delay(self, request: Request, netloc: str) -> None:
        """Keep the host's crawl delay on the downloader slot this request goes through."""
        delay = self._delays.get(netloc)
        if delay is None:
            return
        downloader = self.crawler.engine.downloader
        key = downloader.get_slot_key(request)
        # Slots are made from DOWNLOAD_SLOTS entries, when first used and again after the
        # downloader drops an idle one: the delay goes there too.
        slot_settings = downloader.per_slot_settings.get(key, {})
        if slot_settings.get("delay", 0) < delay or slot_settings.get("jitter") != 0:
            downloader.per_slot_settings[key] = {
                **slot_settings,
                "delay": max(delay, slot_settings.get("delay", 0)),
                "jitter": 0.0,
            }
        slot = downloader.slots.get(key)
        if slot is not None and (slot.delay < delay or slot.jitter):
            slot.delay = max(slot.delay, delay)
            slot.jitter = 0.0
        # AutoThrottle would move the slot's delay towards the latency, down to DOWNLOAD_DELAY.
        request.meta.setdefault("autothrottle_dont_adjust_delay", True)


def _relay(result: RobotParser | None, waiter: Deferred[RobotParser | None]) -> RobotParser | None:
    waiter.callback(result)
    return result
