"""SiteSpider: discover a small business's site, then fetch the pages worth learning from.

    scrapy crawl site -a url=https://acme.com.au [-a site=acme] [-a max_pages=300]
        [-a render_js=auto|always|never] [-a include=GLOB,GLOB] [-a exclude=GLOB,GLOB]
        [-a discover_only=1] [-a only='["https://acme.com.au/contact"]']

Discovery is one pass of at most HELPPUFF_DISCOVERY_MAX_FETCHES downloads: the home page (which
makes the robots middleware read robots.txt; its Sitemap: lines arrive through the
`robots_parsed` signal), then the sitemaps (robots.txt's, else the usual paths). Candidates come
from the home page's links and the sitemaps, normalised, deduplicated and filtered; each gets a
category and a tick decision. Ticked pages are fetched (up to max_pages, the home page among
them), and links found on fetched pages join the candidates. So do the pages a page's own navigation
code plainly opens (`location.href = '...'`, web/scriptlinks.py; source "script"): from its inline
scripts and handlers always, and from the site's own script files it loads (each read once, robots.txt
honoured, at most HELPPUFF_SCRIPT_LINKS_MAX_FETCHES a crawl) for the home page, during discovery and
within its fetch budget, and for pages with fewer than HELPPUFF_SCRIPT_LINKS_FEW_LINKS links to the site. Exactly one `Page` item is yielded
per candidate, fetched or not, so the store records every page with its status and reason.

A targeted crawl (`only`: a JSON list of at most 100 page URLs, normalised) fetches exactly those
pages: no sitemaps, no home-page links, no script links, no link following; robots.txt, the tick
rules and globs and max_pages apply as in a full crawl. A URL of another site, or one that is no page
to learn (a file, an account screen), is refused with the reason: logged, counted, listed in the
stats, and never a page. When none is stored, the pages named are the boilerplate sample, with the
home page (fetched for the sample only: pipelines/boilerplate.py). A canonical link to a page not
named is checked against what the knowledge base holds of that page (the page is left as it is).
The pages named (as the knowledge base spells them), and whether furniture is stored, are the crawl
start's (CrawlRun.start, kb/crawl_start.py: published on spider_opened, before start() runs), which
makes the crawl a full one when the site must be learned again.

A page's canonical link (`<link rel="canonical">`) to another page of the site is a hint, not an order:
a site built from a template can name its home page on every page, the menu and the price list
included. The spider passes it on with the page (Page.canonical; `_canonical_hint`), and the hash
pipeline, where both pages' extracted content is known, records the page as that page's duplicate only
when the content agrees, and otherwise learns it as itself and notes why the link was not followed
(pipelines/hash.py). So the comparison can be made, a canonical page the crawl does not know yet is
fetched as a candidate of its own (source "canonical"), and a page is yielded only after the Page of
the page its canonical link names (spiders/canonical.py). A canonical link to another site, a broken one,
several that disagree, or one to a URL the site's rules keep out (tick rules, globs, robots.txt) is
ignored, and so is the home page's own.

Stats: helppuff/discovery/{fetches,candidates,sitemaps,sitemap_urls}, helppuff/discovery/skipped/<why>,
helppuff/discovery/scripts/{read,unusable}, helppuff/discovery/scripts/{failed,skipped}/<why>,
helppuff/discovery/dropped/<why>, helppuff/pages/<status>, helppuff/render/{requests,needed},
helppuff/canonical/{hints,held_at_close}, helppuff/canonical/ignored/<why> (the hash pipeline adds
helppuff/canonical/honoured and .../ignored/{content_differs,not_learned}),
helppuff/targeted/{pages,refused,refused_urls}.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Request, Response, TextResponse
from scrapy.utils.response import get_base_url
from twisted.internet.error import (
    ConnectionRefusedError,
    DNSLookupError,
    TCPTimedOutError,
    TimeoutError,
)
from twisted.python.failure import Failure

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.extensions.run import CrawlRun
from helppuff_crawl.items import Page
from helppuff_crawl.middlewares.guard import OFFSITE, AddressRefused, OffsiteRedirect
from helppuff_crawl.spiders.canonical import PageOrder
from helppuff_crawl.web.categories import TickDecision, categorize, decide_tick
from helppuff_crawl.web.pagecheck import blocked_reason, challenge_reason, is_html, render_reason
from helppuff_crawl.web.scriptlinks import navigation_urls, page_code, script_sources
from helppuff_crawl.web.sitemaps import DEFAULT_SITEMAP_PATHS, SitemapWalk
from helppuff_crawl.web.urls import (
    normalize_url,
    same_site,
    site_host,
    site_name_from_url,
    url_filter_reason,
    validate_start_url,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from helppuff_crawl.kb.crawl_start import CrawlStart

logger = logging.getLogger(__name__)

MAX_PAGES_LIMIT = 1000
MAX_NAMED_PAGES = 100  # pages a targeted crawl may name
_ERROR_STATUSES = list(range(400, 600))
RENDER_MODES = ("auto", "always", "never")


def _stat_slug(reason: str) -> str:
    """A short stats key from a reason: its first words before any ':' or '(', as_snake_case."""
    head = reason.split(":", 1)[0].split("(", 1)[0]
    words = [w for w in "".join(c if c.isalnum() else " " for c in head.lower()).split()][:4]
    return "_".join(words) or "other"


def _globs(value: str | list[str] | tuple[str, ...] | None, name: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    globs = tuple(item.strip() for item in items if item.strip())
    if not globs:
        raise ValueError(f"{name}: give one or more comma-separated globs, e.g. '**/blog/**'")
    return globs


def _named_pages(value: Any, start: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The `only` argument: a JSON list of page URLs (or a list), each normalised. Returns the pages on
    the site (deduplicated, in order) and those refused with the reason (another site, not a page to
    learn). ValueError for what is not such a list, more than MAX_NAMED_PAGES, or a URL that is not an
    absolute http(s) one; and when not one page named is on the site (a targeted crawl of nothing)."""
    if value is None or value == "" or value == []:
        return (), ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"only: expected a JSON list of page URLs, e.g. '[\"{start}/contact\"]' ({exc})") from None
    if not isinstance(value, (list, tuple)) or not all(isinstance(url, str) for url in value):
        raise ValueError(f"only: expected a JSON list of page URLs (strings), got {value!r}"[:300])
    if not value:
        return (), ()  # "[]": a full crawl
    if len(value) > MAX_NAMED_PAGES:
        raise ValueError(f"only: at most {MAX_NAMED_PAGES} pages, got {len(value)}")
    pages: dict[str, None] = {}
    refused: dict[str, str] = {}
    for raw in value:
        if urlsplit(raw.strip()).scheme.lower() not in ("http", "https"):
            raise ValueError(f"only: not an http(s) URL: {raw!r}"[:300])
        url = normalize_url(raw.strip())
        if url is None:
            raise ValueError(f"only: not a web address: {raw!r}"[:300])
        if not same_site(url, start):
            refused.setdefault(url, f"another site: {site_host(url)} is not {site_host(start)}")
        elif why := url_filter_reason(url):
            refused.setdefault(url, f"not a page to learn ({why})")
        else:
            pages[url] = None
    if not pages:
        listed = "; ".join(f"{url}: {why}" for url, why in refused.items())
        raise ValueError(f"only: not one page named is on the site {site_host(start)}: {listed}"[:1000])
    return tuple(pages), tuple(refused.items())


def known_spelling(url: str, known: Any) -> str:
    """The URL under which the knowledge base knows the page `url` names: www. and the apex are one
    site, and so are http and https, so a page named with the other spelling is the page already known
    (not a second page of the same text); `url` itself when it is known, or no spelling is."""
    if url in known:
        return url
    parts = urlsplit(url)
    host = parts.netloc[4:] if parts.netloc.startswith("www.") else parts.netloc
    for scheme in dict.fromkeys((parts.scheme, "https", "http")):
        for netloc in (host, "www." + host):
            spelled = parts._replace(scheme=scheme, netloc=netloc).geturl()
            if spelled in known:
                return spelled
    return url


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{name}: expected true or false, got {value!r}")


@dataclass(frozen=True)
class SiteArgs:
    """The spider arguments, validated (they arrive as strings)."""

    url: str
    site: str
    max_pages: int | None
    render_js: str | None
    include: tuple[str, ...]
    exclude: tuple[str, ...] | None
    discover_only: bool
    only: tuple[str, ...] = ()  # a targeted crawl: the pages named that are on the site, normalised
    refused: tuple[tuple[str, str], ...] = ()  # (URL, why) of the pages named that are not

    @classmethod
    def parse(cls, url: str | None = None, site: str | None = None, max_pages: Any = None,
              render_js: str | None = None, include: Any = None, exclude: Any = None,
              discover_only: Any = False, start_url: str | None = None, only: Any = None,
              **unknown: Any) -> SiteArgs:
        if unknown:
            names = ", ".join(sorted(unknown))
            raise ValueError(f"unknown argument {names}: use url, site, max_pages, render_js, include, exclude, only")
        raw = url or start_url
        if not raw:
            raise ValueError("url: required, e.g. -a url=https://acme.com.au")
        start = validate_start_url(str(raw))
        name = (site or site_name_from_url(start)).strip().lower()
        if not name or not all(c.isalnum() or c == "-" for c in name) or len(name) > 48:
            raise ValueError(f"site: use letters, digits and '-' (at most 48), got {site!r}")
        pages: int | None = None
        if max_pages not in (None, ""):
            try:
                pages = int(str(max_pages))
            except ValueError:
                raise ValueError(f"max_pages: expected a whole number, got {max_pages!r}") from None
            if not 1 <= pages <= MAX_PAGES_LIMIT:
                raise ValueError(f"max_pages: must be between 1 and {MAX_PAGES_LIMIT}, got {pages}")
        if render_js not in (None, "") and render_js not in RENDER_MODES:
            raise ValueError(f"render_js: must be one of {', '.join(RENDER_MODES)}, got {render_js!r}")
        named, refused = _named_pages(only, start)
        discover = _flag(discover_only, "discover_only")
        if named and discover:
            raise ValueError("only: a targeted crawl fetches the pages named; discover_only lists the candidates")
        return cls(
            url=start,
            site=name,
            max_pages=pages,
            render_js=render_js or None,
            include=_globs(include, "include"),
            exclude=_globs(exclude, "exclude") if exclude not in (None, "") else None,
            discover_only=discover,
            only=named,
            refused=refused,
        )


@dataclass(frozen=True)
class CrawlConfig:
    """How to crawl: from HELPPUFF_* settings (spider arguments become settings)."""

    max_pages: int
    render_js: str
    render_min_text: int
    render_min_scripts: int
    include: tuple[str, ...]
    exclude: tuple[str, ...] | None
    follow_links: bool
    max_discovery_fetches: int
    max_sitemaps: int
    max_sitemap_urls: int
    sample_size: int
    script_fetches: int
    script_few_links: int
    boilerplate: bool = True  # the boilerplate pipeline is on: a targeted crawl with no stored furniture needs a sample

    @classmethod
    def from_settings(cls, settings: Any) -> CrawlConfig:
        max_pages = settings.getint("HELPPUFF_MAX_PAGES")
        if not 1 <= max_pages <= MAX_PAGES_LIMIT:
            raise ValueError(f"HELPPUFF_MAX_PAGES must be between 1 and {MAX_PAGES_LIMIT}, got {max_pages}")
        render = settings.get("HELPPUFF_RENDER_JS")
        if render not in RENDER_MODES:
            raise ValueError(f"HELPPUFF_RENDER_JS must be one of {', '.join(RENDER_MODES)}, got {render!r}")
        exclude = settings.getlist("HELPPUFF_EXCLUDE") if settings.get("HELPPUFF_EXCLUDE") is not None else None
        fetches = settings.getint("HELPPUFF_DISCOVERY_MAX_FETCHES")
        if fetches < 2:
            raise ValueError(f"HELPPUFF_DISCOVERY_MAX_FETCHES must be >= 2, got {fetches}")
        script_fetches = settings.getint("HELPPUFF_SCRIPT_LINKS_MAX_FETCHES")
        if script_fetches < 0:
            raise ValueError(f"HELPPUFF_SCRIPT_LINKS_MAX_FETCHES must be >= 0, got {script_fetches}")
        return cls(
            max_pages=max_pages,
            render_js=render,
            render_min_text=settings.getint("HELPPUFF_RENDER_MIN_TEXT"),
            render_min_scripts=settings.getint("HELPPUFF_RENDER_MIN_SCRIPTS"),
            include=tuple(settings.getlist("HELPPUFF_INCLUDE")),
            exclude=tuple(exclude) if exclude is not None else None,
            follow_links=settings.getbool("HELPPUFF_FOLLOW_LINKS"),
            max_discovery_fetches=fetches,
            max_sitemaps=settings.getint("HELPPUFF_SITEMAP_MAX_SITEMAPS"),
            max_sitemap_urls=settings.getint("HELPPUFF_SITEMAP_MAX_URLS"),
            sample_size=settings.getint("HELPPUFF_BOILERPLATE_SAMPLE"),
            script_fetches=script_fetches,
            script_few_links=settings.getint("HELPPUFF_SCRIPT_LINKS_FEW_LINKS"),
            boilerplate=settings.getbool("HELPPUFF_BOILERPLATE_ENABLED"),
        )


class SiteSpider(scrapy.Spider):
    name = "site"
    # Scrapy checks a callback for a generator's return value on its first response by reading the
    # method's source and parsing it: about 90 ms of CPU once per crawl process (each crawl is one),
    # a tenth of a small site's own work. tests/test_spiders_site.py runs the same check on every
    # callback of the spider instead.
    custom_settings = {"WARN_ON_GENERATOR_RETURN_VALUE": False}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = SiteArgs.parse(**kwargs)
        super().__init__(*args)
        self.start_url = self.args.url
        self.site = self.args.site
        self._seen: set[str] = set()
        self._scheduled = 0
        self._robots: dict[str, Any] = {}
        self._scripts: set[str] = set()  # script files asked for (each once per crawl)
        self._targeted = False  # fetching the pages named only: no discovery, no link following
        self._order = PageOrder()  # every Page goes out through it: after the page its canonical link names
        self._first: set[str] = set()  # candidates fetched before the others (`_fetch_first`)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        a = spider.args
        settings.set("HELPPUFF_SITE", a.site, priority="spider")
        settings.set("HELPPUFF_START_URL", a.url, priority="spider")
        if a.max_pages is not None:
            settings.set("HELPPUFF_MAX_PAGES", a.max_pages, priority="spider")
        if a.render_js is not None:
            settings.set("HELPPUFF_RENDER_JS", a.render_js, priority="spider")
        if a.include:
            settings.set("HELPPUFF_INCLUDE", list(a.include), priority="spider")
        if a.exclude is not None:
            settings.set("HELPPUFF_EXCLUDE", list(a.exclude), priority="spider")
        if a.only:
            settings.set("HELPPUFF_ONLY", list(a.only), priority="spider")
        if a.discover_only:
            # Nothing is recorded: no pipelines, and no run.
            settings.set("ITEM_PIPELINES", {}, priority="spider")
            settings.set("HELPPUFF_RUN_ENABLED", False, priority="spider")
        if settings.get("HELPPUFF_RENDER_JS") == "never":
            # No browser needed: plain Scrapy download handlers only.
            settings.set("DOWNLOAD_HANDLERS", {}, priority="spider")
        spider.config = CrawlConfig.from_settings(settings)
        crawler.signals.connect(spider._robots_parsed, signal=signals.robots_parsed)
        return spider

    # --- discovery ------------------------------------------------------------------------

    def _robots_parsed(self, robotparser: Any, request: Request) -> None:
        rules = getattr(robotparser, "rules", robotparser)
        self._robots[site_host(request.url)] = rules

    def _stat(self, key: str, count: int = 1) -> None:
        self.crawler.stats.inc_value(f"helppuff/{key}", count)

    async def start(self) -> AsyncIterator[Any]:
        self._report_refused()
        run = self.crawler.get_extension(CrawlRun)
        start = run.start if run is not None else None  # published on spider_opened, before this runs
        named = start.targeted if start is not None else self.args.only  # the start may make it a full crawl
        if named:
            for result in self._start_targeted(named, start):
                for out in self._out(result):
                    yield out
            return
        fetches = 1  # robots.txt: read once by the robots middleware before the home page
        home_request = self._page_request(self.start_url, "start", render=self.config.render_js == "always")
        home_page: Page | None = None
        home_response: Response | None = None
        try:
            fetches += 1
            home_response = await self.crawler.engine.download_async(home_request)
        except Exception as exc:  # any download failure is recorded on the page, never fatal
            home_page = self._failure_page(self.start_url, "start", Failure(exc))
        if home_response is not None and self._wants_render(home_response):
            try:
                fetches += 1
                home_response = await self.crawler.engine.download_async(
                    self._page_request(self.start_url, "start", render=True)
                )
            except Exception as exc:
                home_page = self._failure_page(self.start_url, "start", Failure(exc))
                home_response = None

        home_url = self.start_url
        self._seen.add(self.start_url)
        if home_response is not None and not self._on_site(home_response):
            # Not the site's home page: recorded as such, and none of its links are the site's.
            home_page = next(iter(self.parse_page(home_response, candidate=self.start_url, source="start")))
            home_response = None
        if home_response is not None:
            final = normalize_url(home_response.url)
            if final and same_site(final, self.start_url):
                # The home page answered from another URL of the same site (www., a path):
                # that URL is the home page too, and sitemaps are looked for on its host.
                self._seen.add(final)
                self._order.alias(final, self.start_url)
                home_url = final

        candidates: list[tuple[str, str, str]] = []  # (url, source, title hint)
        if home_response is not None:
            candidates.extend((url, "home", text) for url, text in self._links(home_response))
            candidates.extend((url, "script", "") for url in self._code_links(home_response))

        walk_urls, fetches = await self._walk_sitemaps(home_url, fetches)
        candidates.extend((url, "sitemap", "") for url in walk_urls)
        if home_response is not None:
            script_urls, fetches = await self._home_script_links(home_response, fetches)
            candidates.extend((url, "script", "") for url in script_urls)
        self._stat("discovery/fetches", fetches)

        # The home page itself: learned from its discovery response, never fetched twice.
        if home_response is not None:
            for item in self.parse_page(home_response, candidate=self.start_url, source="start", follow=False):
                if isinstance(item, Page):
                    home_page = item
        if home_page is not None:
            self._scheduled += 1  # the home page is one of max_pages
        results = [r for url, source, hint in candidates if (r := self._admit(url, source, hint)) is not None]

        # The boilerplate sample: the home page and the first ticked pages, fetched first. The
        # boilerplate pipeline waits for exactly this many items (one per sample page, whatever
        # its fate) before it lets any page through.
        requests = [r for r in results if isinstance(r, Request)]
        sample = ([home_page] if home_page is not None else []) + requests
        sample = sample[: self.config.sample_size]
        for member in sample:
            if isinstance(member, Page):
                member.sample = len(sample)
            else:
                member.meta["helppuff_sample"] = len(sample)
                self._fetch_first(member)
        self._stat("boilerplate/sample_size", len(sample))
        if home_page is not None:
            for out in self._emit(home_page):
                yield out
        for result in results:
            for out in self._out(result):
                yield out

    # --- a targeted crawl: the pages named, nothing else ---------------------------------------

    def _report_refused(self) -> None:
        """The pages named that are not the site's: logged, counted and listed (at most MAX_NAMED_PAGES)."""
        if not self.args.refused:
            return
        for url, why in self.args.refused:
            logger.warning("Refused %s: %s", url, why, extra={"spider": self})
        self._stat("targeted/refused", len(self.args.refused))
        self.crawler.stats.set_value("helppuff/targeted/refused_urls",
                                     [f"{url[:500]}: {why}" for url, why in self.args.refused[:MAX_NAMED_PAGES]])

    def _start_targeted(self, named: tuple[str, ...], start: CrawlStart | None) -> Iterator[Page | Request]:
        """The pages named, each admitted as a full crawl admits a page (tick rules, globs, max_pages;
        robots.txt at fetch time), with no discovery and no link following. With no stored furniture
        (an older data folder, or a site never crawled in full), the pages fetched are the boilerplate
        sample, and the home page joins them when it is not named: fetched for the sample only, it is
        dropped once the furniture is learned (pipelines/boilerplate.py), its row left as it is."""
        self._targeted = True
        known = start.known.pages if start is not None else {}
        named = tuple(dict.fromkeys(known_spelling(url, known) for url in named))
        self.crawler.stats.set_value("helppuff/targeted/pages", len(named))
        logger.info("Targeted crawl of %s: %d pages named", self.site, len(named), extra={"spider": self})
        results = [r for url in named
                   if (r := self._admit(url, "start" if url == self.start_url else "targeted", "")) is not None]
        requests = [r for r in results if isinstance(r, Request)]
        if self.config.boilerplate and (start is None or start.furniture is None) and requests:
            if self.start_url not in named:
                self._seen.add(self.start_url)
                requests.insert(0, self._page_request(self.start_url, "start", render=self.config.render_js == "always"))
                results.insert(0, requests[0])
            sample = requests[: self.config.sample_size]
            for request in sample:
                request.meta["helppuff_sample"] = len(sample)
                self._fetch_first(request)
            self._stat("boilerplate/sample_size", len(sample))
        yield from results

    async def _walk_sitemaps(self, home_url: str, fetches: int) -> tuple[list[str], int]:
        rules = self._robots.get(site_host(home_url))
        seeds = list(getattr(rules, "sitemaps", None) or [])
        if not seeds:
            origin = home_url.split("/", 3)[:3]
            seeds = ["/".join(origin) + path for path in DEFAULT_SITEMAP_PATHS]
        walk = SitemapWalk(seeds, max_sitemaps=self.config.max_sitemaps, max_urls=self.config.max_sitemap_urls)
        while fetches < self.config.max_discovery_fetches and (sitemap_url := walk.next_url()):
            fetches += 1
            request = Request(sitemap_url, meta={"helppuff_sitemap": True}, dont_filter=True)
            try:
                response = await self.crawler.engine.download_async(request)
            except Exception as exc:
                walk.add(sitemap_url, None, error=f"{type(exc).__name__}: {exc}")
                continue
            if response.status != 200:
                walk.add(sitemap_url, None, error=str(response.status))
                continue
            headers = {k.decode("latin-1"): b",".join(v).decode("latin-1") for k, v in response.headers.items()}
            walk.add(sitemap_url, response.body, headers, base_url=response.url)
        if walk.next_url() is not None:
            self._stat("discovery/skipped/sitemap_budget")
        for sitemap_url, why in walk.problems:
            if why != "404":
                logger.warning("Sitemap %s: %s", sitemap_url, why, extra={"spider": self})
            self._stat(f"discovery/sitemap_problems/{_stat_slug(why)}")
        self._stat("discovery/sitemaps", len(walk.fetched))
        self._stat("discovery/sitemap_urls", len(walk.page_urls))
        return list(walk.page_urls), fetches

    def _links(self, response: Response) -> Iterator[tuple[str, str]]:
        if not isinstance(response, TextResponse):
            return
        try:
            anchors = response.xpath("//a[@href]")
        except (ValueError, AttributeError):
            return
        for anchor in anchors:
            href = anchor.attrib.get("href", "")
            text = " ".join(" ".join(anchor.xpath(".//text()").getall()).split())
            yield response.urljoin(href.strip()), text[:120]

    # --- links in the page's own navigation code (web/scriptlinks.py) ------------------------

    def _code_links(self, response: Response) -> list[str]:
        """URLs the page's inline scripts, handlers and javascript: hrefs plainly navigate to."""
        if not isinstance(response, HtmlResponse):
            return []
        base = get_base_url(response)
        return [url for code in page_code(response) for url in navigation_urls(code, base)]

    def _scripts_to_fetch(self, response: Response) -> list[str]:
        """The page's own script files not asked for yet, within HELPPUFF_SCRIPT_LINKS_MAX_FETCHES a crawl."""
        if not isinstance(response, HtmlResponse):
            return []
        wanted = []
        for url in script_sources(response, get_base_url(response)):
            if url in self._scripts or not same_site(url, self.start_url):
                continue
            if len(self._scripts) >= self.config.script_fetches:
                self._stat("discovery/scripts/skipped/budget")
                break
            self._scripts.add(url)
            wanted.append(url)
        return wanted

    def _script_request(self, url: str, page_url: str) -> Request:
        # Not a candidate page: no Page item is recorded for it, whatever its fate.
        return Request(url, callback=self.parse_script, errback=self.script_failed, dont_filter=True,
                       meta={"helppuff_script_page": page_url}, priority=-1)

    async def _home_script_links(self, home: Response, fetches: int) -> tuple[list[str], int]:
        """The home page's own script files, fetched within the discovery budget, and their navigation."""
        urls: list[str] = []
        for script_url in self._scripts_to_fetch(home):
            if fetches >= self.config.max_discovery_fetches:
                self._stat("discovery/scripts/skipped/budget")
                break
            fetches += 1
            try:
                response = await self.crawler.engine.download_async(self._script_request(script_url, home.url))
            except Exception as exc:  # robots.txt, the guard, a timeout: the script is not read, nothing else
                self._script_not_read(script_url, exc)
                continue
            urls.extend(self._script_urls(response, home.url))
        return urls, fetches

    def _script_urls(self, response: Response, page_url: str) -> list[str]:
        """The URLs a fetched script file plainly navigates to, resolved against the page that runs it."""
        if response.status != 200 or not isinstance(response, TextResponse) or isinstance(response, HtmlResponse):
            # An HTML answer is a host's 404 or fallback page, not the script.
            self._stat("discovery/scripts/unusable")
            return []
        self._stat("discovery/scripts/read")
        return navigation_urls(response.text, page_url)

    def _script_not_read(self, url: str, exc: BaseException) -> None:
        self._stat(f"discovery/scripts/failed/{_stat_slug(str(exc) or type(exc).__name__)}")
        logger.debug("Script %s not read: %s", url, exc, extra={"spider": self})

    def parse_script(self, response: Response) -> Iterator[Any]:
        page_url = response.meta.get("helppuff_script_page", response.url)
        for url in self._script_urls(response, page_url):
            result = self._admit(url, "script", "")
            if result is not None:
                yield from self._out(result)

    def script_failed(self, failure: Failure) -> None:
        self._script_not_read(failure.request.url, failure.value)  # type: ignore[attr-defined]

    def _admit(self, raw_url: str, source: str, hint: str) -> Page | Request | None:
        """Decide what a found URL becomes: a request, an unticked/skipped page, or nothing."""
        url = normalize_url(raw_url)
        if url is None:
            self._stat("discovery/dropped/not_a_web_page_url")
            return None
        if url in self._seen:
            return None
        if not same_site(url, self.start_url):
            if source == "sitemap":
                # A sitemap naming another host (e.g. the production host, seen on a copy).
                self._seen.add(url)
                self._stat("discovery/skipped/another_site")
                logger.debug("Skipped %s: sitemap entry on another site", url, extra={"spider": self})
            return None
        self._seen.add(url)
        if why := url_filter_reason(url):
            self._stat(f"discovery/dropped/{why.split(':', 1)[0].replace(' ', '_')}")
            return None
        self._stat("discovery/candidates")
        category = categorize(url, hint)
        decision = self._tick(url, category)
        page = Page(url=url, site=self.site, category=category, ticked=decision.ticked,
                    tick_reason=decision.reason, source=source)
        if not decision.ticked:
            page.status = "unticked"
            page.reason = decision.reason
            return page
        if self.args.discover_only:
            page.status = "pending"
            return page
        if self._scheduled >= self.config.max_pages:
            page.status = "skipped"
            page.reason = f"over max_pages ({self.config.max_pages})"
            return page
        self._scheduled += 1
        return self._page_request(url, source, render=self.config.render_js == "always", category=category,
                                  tick_reason=decision.reason)

    # --- fetching -------------------------------------------------------------------------

    def _page_request(self, url: str, source: str, *, render: bool, category: str = "",
                      tick_reason: str = "", sample: int = 0) -> Request:
        meta: dict[str, Any] = {
            # Every error status reaches parse_page (to be recorded); 3xx stay with the redirect
            # middleware, which follows them and records the chain in redirect_urls.
            "handle_httpstatus_list": _ERROR_STATUSES,
            "helppuff_candidate": url,
            "helppuff_source": source,
            "helppuff_category": category,
            "helppuff_tick_reason": tick_reason,
        }
        if sample:
            meta["helppuff_sample"] = sample
        if render:
            meta["playwright"] = True
            meta["helppuff_render"] = True
            self._stat("render/requests")
        # dont_filter: candidates are deduplicated here, and a redirect to a seen URL must still
        # come back as a page (one item per candidate).
        return Request(url, callback=self.parse_page, errback=self.page_failed, meta=meta,
                       dont_filter=True, cb_kwargs={"candidate": url, "source": source})

    def _fetch_first(self, request: Request) -> None:
        """Fetch the page before the others: a boilerplate sample page (the boilerplate pipeline holds
        every page until the whole sample is in), or a page that such a page waits for (its canonical
        page: `_canonical_hint`)."""
        request.priority = 10
        request.meta["helppuff_first"] = True
        self._first.add(request.meta["helppuff_candidate"])

    def _wants_render(self, response: Response) -> bool:
        """`render_js: auto` on a fetched page: its main content is thin and its scripts can have built it
        (web/pagecheck.render_reason). The site's repeated blocks are not known yet here (see page_shape)."""
        if self.config.render_js != "auto" or response.meta.get("helppuff_render"):
            return False
        if response.status != 200 or not isinstance(response, TextResponse):
            return False
        config = self.config
        if why := render_reason(response.text, config.render_min_text, config.render_min_scripts, url=response.url):
            self._stat("render/needed")
            logger.debug("Rendering %s: %s", response.url, why, extra={"spider": self})
            return True
        return False

    def _on_site(self, response: Response) -> bool:
        final = normalize_url(response.url)
        return final is not None and same_site(final, self.start_url)

    def parse_page(self, response: Response, candidate: str, source: str, follow: bool = True) -> Iterator[Any]:
        if not self._on_site(response):
            # The downloader guard does not follow redirects to another site (middlewares/guard.py,
            # handlers/browser.py); whatever still ends elsewhere is not this site's page either.
            page = self._base_page(candidate, source, response.meta)
            page.status, page.reason = "skipped", f"{OFFSITE}: {response.url}"
            page.http_status, page.redirects = response.status, list(response.meta.get("redirect_urls", []))
            self._stat("pages/skipped")
            yield from self._emit(page)
            return
        if self._wants_render(response):
            request = self._page_request(candidate, source, render=True,
                                         category=response.meta.get("helppuff_category", ""),
                                         tick_reason=response.meta.get("helppuff_tick_reason", ""),
                                         sample=response.meta.get("helppuff_sample", 0))
            if response.meta.get("helppuff_first"):
                self._fetch_first(request)
            yield request
            return
        page = self._base_page(candidate, source, response.meta)
        final = normalize_url(response.url)
        if final and final != candidate and source != "start":
            if final in self._seen:
                # Another candidate is this page: record the redirect, learn it once.
                page.status, page.reason = "skipped", f"redirects to {final}"
                page.final_url, page.http_status = response.url, response.status
                page.redirects = list(response.meta.get("redirect_urls", []))
                self._stat("pages/skipped")
                yield from self._emit(page)
                return
            self._seen.add(final)
            self._order.alias(final, candidate)
        page.http_status = response.status
        page.final_url = response.url
        page.redirects = list(response.meta.get("redirect_urls", []))
        page.rendered = bool(response.meta.get("helppuff_render"))
        page.fetched_at = iso(utc_now())
        headers = {k.decode("latin-1"): b",".join(v).decode("latin-1") for k, v in response.headers.items()}
        ctype = headers.get("Content-Type", "")
        status = response.status
        if why := blocked_reason(status):
            page.status, page.reason = "blocked", why
        elif status in (404, 410):
            page.status, page.reason = "gone", f"HTTP {status}"
        elif status >= 500:
            page.status, page.reason = "failed", f"HTTP {status} after retries"
        elif status >= 300:
            page.status, page.reason = "failed", f"HTTP {status}"
        elif not is_html(ctype, response.body[:512]):
            page.status, page.reason = "skipped", f"not HTML: {ctype.split(';')[0] or 'no content type'}"
        else:
            html = response.text if isinstance(response, TextResponse) else response.body.decode("utf-8", "replace")
            if why := challenge_reason(status, headers, html):
                page.status, page.reason = "blocked", why
            else:
                page.status = "fetched"
                page.html = html
        first, wait = self._canonical_hint(page, response) if page.status == "fetched" and source != "start" else ([], "")
        self._stat(f"pages/{page.status}")
        yield from first
        if wait:
            self._order.hold(page, wait)
        else:
            yield from self._emit(page)
        if (follow and not self._targeted and page.status == "fetched" and self.config.follow_links
                and isinstance(response, HtmlResponse)):
            links = list(self._links(response))
            found = [(url, "link", text) for url, text in links]
            found.extend((url, "script", "") for url in self._code_links(response))
            for url, source, text in found:
                result = self._admit(url, source, text)
                if result is not None:
                    yield from self._out(result)
            # A page with few links to the site may be opened from its scripts: read its own script files.
            on_site = {u for u, _ in links if (n := normalize_url(u)) and same_site(n, self.start_url)}
            if len(on_site) < self.config.script_few_links:
                for script_url in self._scripts_to_fetch(response):
                    yield self._script_request(script_url, response.url)

    def _canonical_hint(self, page: Page, response: Response) -> tuple[list[Page | Request], str]:
        """Pass the page's canonical link on, to be checked against the content (Page.canonical): a
        canonical link is a hint, and the hash pipeline, where both pages' content is known, decides
        whether the page is the other's duplicate. Returns what to yield before the page, and the
        candidate whose Page it must wait for ("" when it may go at once).

        A canonical page the crawl does not know yet is fetched as a candidate of its own (source
        "canonical"; tick rules, max_pages and robots.txt apply), so its content can be compared; what to
        yield first is then its request, or its record (over max_pages). A targeted crawl fetches no
        other page: the hash pipeline compares with what the knowledge base holds of it.

        The hash pipeline can only wait for a page that is on its way, so a page goes after the Page of
        the page its canonical link names (spiders/canonical.py, `_emit`). A page fetched first (a
        boilerplate sample page: the boilerplate pipeline holds every page until the whole sample is in)
        may wait only for a page fetched first too, or the crawl would wait for it: the canonical page
        it makes the crawl fetch is fetched first. Two cases leave the hint unchecked (the page is
        learned as itself), each counted: such a page whose canonical page is already on the list, to
        be fetched in its turn; and a page whose canonical page waits, itself or through others, for
        this one (a loop).

        The home page's own canonical link is not read (source "start", as for redirects): the start URL
        is the site's home page, whatever spelling the page prefers."""
        canonical = self._canonical(response, page.url)
        if not canonical:
            return [], ""
        canonical = known_spelling(canonical, self._seen)  # www. and the apex, http and https: one page
        canonical = self._order.page_of(canonical)  # a URL a fetch ended at: that candidate's page
        if canonical == page.url:
            return [], ""
        urgent = bool(response.meta.get("helppuff_first"))  # a page fetched first waits only for such a page
        first: list[Page | Request] = []
        if canonical not in self._seen and not self._targeted:
            admitted = self._admit(canonical, "canonical", "")
            if admitted is None:  # not a page this crawl records (`_canonical` keeps those out)
                return [], ""
            if isinstance(admitted, Page):
                first.extend(self._emit(admitted))
            else:
                if urgent:
                    self._fetch_first(admitted)
                first.append(admitted)
        wait = canonical if canonical in self._seen and not self._order.is_out(canonical) else ""
        why = ""
        if wait and urgent and canonical not in self._first:
            why = "fetched first (the canonical page is fetched later)"
        elif wait and self._order.waits_for(canonical, page.url):
            why = "loop (the canonical pages name each other)"
        if why:
            self._stat(f"canonical/ignored/{_stat_slug(why)}")
            logger.debug("Canonical link of %s to %s not checked: %s", page.url, canonical, why, extra={"spider": self})
            return first, ""
        page.canonical = canonical
        self._stat("canonical/hints")
        return first, wait

    def _emit(self, page: Page) -> Iterator[Page]:
        """Yield the page, then the pages held back until it is out. Every Page the spider yields goes
        through here."""
        return self._order.emit(page)

    def _out(self, result: Page | Request) -> Iterator[Page | Request]:
        """A result of `_admit` to yield: a request as it is, a Page through `_emit`."""
        if isinstance(result, Page):
            yield from self._emit(result)
        else:
            yield result

    def closed(self, reason: str) -> None:
        """Pages still held back when the crawl ends (it was stopped before the pages their canonical
        links name came back) are not recorded by this run: counted and logged."""
        held = self._order.held()
        if held:
            self._stat("canonical/held_at_close", held)
            logger.warning("%d pages not recorded: the crawl ended (%s) before the pages their canonical links "
                           "name", held, reason, extra={"spider": self})

    def _canonical(self, response: Response, candidate: str) -> str:
        """The page's canonical URL when it is worth checking against the content, else "" (and why, in
        the log and a stat).

        Ignored: no link; several links naming different URLs (no single choice, as search engines
        ignore them); one that is not a web address; one naming the page itself (its candidate or final
        URL); one on another site. The canonical URL must also be a page this crawl would learn: a file
        or account screen, a page the tick rules leave out (legal, archive, exclude globs; include globs
        force it in) or one robots.txt disallows is ignored too, since following it would fetch a URL
        the site's rules keep out, or drop a page that the rules let in."""
        if not isinstance(response, HtmlResponse):
            return ""
        hrefs = [link.attrib.get("href", "") for link in response.xpath("//link[@rel and @href]")
                 if "canonical" in link.attrib.get("rel", "").lower().split()]
        if not hrefs:
            return ""
        base = get_base_url(response)  # <base href> counts, as for links
        named = {normalize_url(href, base) for href in hrefs}
        why = ""
        canonical = next(iter(named)) if len(named) == 1 else None
        if len(named) > 1:
            why = "several canonical links"
        elif canonical is None:
            why = "not a web address"
        elif canonical in (candidate, normalize_url(response.url)):
            return ""  # the page names itself: nothing to do
        elif not same_site(canonical, self.start_url):
            why = "another site"
        elif url_filter_reason(canonical):
            why = "not a page to learn"
        elif not self._tick(canonical, categorize(canonical, "")).ticked:
            why = "unticked"
        elif (rules := self._robots.get(site_host(canonical))) is not None and not rules.allowed(canonical):
            why = "robots.txt"
        if why:
            self._stat(f"canonical/ignored/{_stat_slug(why)}")
            logger.debug("Canonical link of %s ignored (%s): %s", candidate, why, hrefs,
                         extra={"spider": self})
            return ""
        assert canonical is not None
        return canonical

    def _tick(self, url: str, category: str) -> TickDecision:
        return decide_tick(url, category, include=self.config.include,
                           **({} if self.config.exclude is None else {"exclude": self.config.exclude}))

    def _base_page(self, candidate: str, source: str, meta: dict[str, Any]) -> Page:
        category = meta.get("helppuff_category") or categorize(candidate, "")
        return Page(url=candidate, site=self.site, category=category, ticked=True,
                    tick_reason=meta.get("helppuff_tick_reason", ""), source=source,
                    sample=int(meta.get("helppuff_sample", 0)))

    def _failure_page(self, candidate: str, source: str, failure: Failure, meta: dict[str, Any] | None = None) -> Page:
        page = self._base_page(candidate, source, meta or {})
        page.fetched_at = iso(utc_now())
        exc = failure.value
        from helppuff_crawl.middlewares.robotstxt import RobotsDisallowed

        if isinstance(exc, RobotsDisallowed):
            page.status, page.reason = "skipped", str(exc) or "robots.txt: disallowed"
        elif isinstance(exc, (OffsiteRedirect, AddressRefused)):
            # A redirect to another site, or a non-public address: never fetched.
            page.status, page.reason = "skipped", str(exc)
            page.redirects = list((meta or {}).get("redirect_urls", []))
        elif isinstance(exc, IgnoreRequest):
            message = str(exc)
            if "max redirections" in message.lower():
                page.status, page.reason = "failed", "redirect loop (too many redirects)"
            else:
                page.status, page.reason = "skipped", message or type(exc).__name__
        elif isinstance(exc, (TimeoutError, TCPTimedOutError)):
            page.status, page.reason = "failed", "timed out after retries"
        elif isinstance(exc, (DNSLookupError, ConnectionRefusedError)):
            page.status, page.reason = "failed", f"unreachable: {type(exc).__name__}"
        else:
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            if "larger than" in text and "max" in text:
                page.status, page.reason = "skipped", "response over the 3 MB download limit"
            else:
                page.status, page.reason = "failed", f"{type(exc).__name__}: {text}"[:300]
        self._stat(f"pages/{page.status}")
        return page

    def page_failed(self, failure: Failure) -> Iterator[Page]:
        request = failure.request  # type: ignore[attr-defined]
        meta = request.meta
        yield from self._emit(self._failure_page(meta.get("helppuff_candidate", request.url),
                                                 meta.get("helppuff_source", ""), failure, meta))
