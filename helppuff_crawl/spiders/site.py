"""SiteSpider: discover a small business's site, then fetch the pages worth learning from.

    scrapy crawl site -a url=https://acme.com.au [-a site=acme] [-a max_pages=300]
        [-a render_js=auto|always|never] [-a include=GLOB,GLOB] [-a exclude=GLOB,GLOB]
        [-a discover_only=1] [-a only='["https://acme.com.au/contact"]']

The arguments are checked by spiders/arguments.py and become settings (`from_crawler`), read back as
`CrawlConfig`. Discovery is one pass of at most HELPPUFF_DISCOVERY_MAX_FETCHES downloads: the home page
(which makes the robots middleware read robots.txt; its Sitemap: lines arrive through the
`robots_parsed` signal), then the sitemaps (robots.txt's, else the usual paths). Candidates come from
the home page's links and the sitemaps, normalised, deduplicated and filtered; each gets a category
and a tick decision. Ticked pages are fetched (up to max_pages, the home page among them), and links
found on fetched pages join the candidates. So do the pages a page's own navigation code plainly opens
(`location.href = '...'`; source "script"; spiders/scriptlinks.py): from its inline scripts and
handlers always, and from the site's own script files it loads (each read once, robots.txt honoured,
at most HELPPUFF_SCRIPT_LINKS_MAX_FETCHES a crawl) for the home page, during discovery and within its
fetch budget, and for pages with fewer than HELPPUFF_SCRIPT_LINKS_FEW_LINKS links to the site. Exactly
one `Page` item is yielded per candidate, fetched or not, so the store records every page with its
status and reason (web/page_status.py decides them from the response, or from the failed download).

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

A page's canonical link (`<link rel="canonical">`) to another page of the site is a hint, not an
order: a site built from a template can name its home page on every page. The spider passes it on
with the page (Page.canonical; `_canonical_hint`), and the hash pipeline records the page as that
page's duplicate only when their content agrees (pipelines/hash.py). So the comparison can be made, a
canonical page the crawl does not know yet is fetched as a candidate of its own (source "canonical"),
and a page is yielded only after the Page of the page its canonical link names (spiders/canonical.py).
Links to another site, broken ones, several that disagree, and one to a URL the site's rules keep out
are ignored (web/canonical.py), and so is the home page's own.

Stats: helppuff/discovery/{fetches,candidates,sitemaps,sitemap_urls}, helppuff/discovery/skipped/<why>,
helppuff/discovery/scripts/{read,unusable}, helppuff/discovery/scripts/{failed,skipped}/<why>,
helppuff/discovery/dropped/<why>, helppuff/pages/<status>, helppuff/render/{requests,needed},
helppuff/canonical/{hints,held_at_close}, helppuff/canonical/ignored/<why> (the hash pipeline adds
helppuff/canonical/honoured and .../ignored/{content_differs,not_learned}),
helppuff/targeted/{pages,refused,refused_urls}.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from functools import cache, partial
from typing import TYPE_CHECKING, Any, Self

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
from helppuff_crawl.middlewares.guard import AddressRefused, OffsiteRedirect
from helppuff_crawl.middlewares.robotstxt import RobotsDisallowed
from helppuff_crawl.spiders import stat_slug
from helppuff_crawl.spiders.arguments import MAX_NAMED_PAGES, CrawlConfig, SiteArgs
from helppuff_crawl.spiders.canonical import PageOrder
from helppuff_crawl.spiders.scriptlinks import ScriptLinks
from helppuff_crawl.web.canonical import canonical_hrefs, canonical_link
from helppuff_crawl.web.categories import categorize, decide_tick
from helppuff_crawl.web.page_status import FailureKind, failure_status, offsite_status, page_status
from helppuff_crawl.web.pagecheck import render_reason
from helppuff_crawl.web.sitemaps import DEFAULT_SITEMAP_PATHS, SitemapWalk
from helppuff_crawl.web.urls import known_spelling, normalize_url, same_site, site_host, url_filter_reason

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from helppuff_crawl.kb.crawl_start import CrawlStart

logger = logging.getLogger(__name__)

_ERROR_STATUSES = list(range(400, 600))
# How a download failed (web/page_status.failure_status), by the exception's class: the first that fits.
_FAILURE_KINDS: tuple[tuple[tuple[type[BaseException], ...], FailureKind], ...] = (
    ((RobotsDisallowed,), "robots"),
    ((OffsiteRedirect, AddressRefused), "refused"),
    ((IgnoreRequest,), "ignored"),
    ((TimeoutError, TCPTimedOutError), "timeout"),
    ((DNSLookupError, ConnectionRefusedError), "unreachable"),
)


def _headers(response: Response) -> dict[str, str]:
    return {k.decode("latin-1"): b",".join(v).decode("latin-1") for k, v in response.headers.items()}


def _text(response: Response) -> str:
    """The body as text: decoded as the response says (TextResponse), else as UTF-8."""
    return response.text if isinstance(response, TextResponse) else response.body.decode("utf-8", "replace")


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
        self._targeted = False  # fetching the pages named only: no discovery, no link following
        self._order = PageOrder()  # every Page goes out through it: after the page its canonical link names

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        for name, value in spider.args.settings().items():
            settings.set(name, value, priority="spider")
        if settings.get("HELPPUFF_RENDER_JS") == "never":
            # No browser needed: plain Scrapy download handlers only.
            settings.set("DOWNLOAD_HANDLERS", {}, priority="spider")
        spider.config = CrawlConfig.from_settings(settings)
        spider._script_links = ScriptLinks(spider, spider.start_url, spider.config.script_fetches,
                                           spider.parse_script, spider.script_failed)
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
            walk.add(sitemap_url, response.body, _headers(response), base_url=response.url)
        if walk.next_url() is not None:
            self._stat("discovery/skipped/sitemap_budget")
        for sitemap_url, why in walk.problems:
            if why != "404":
                logger.warning("Sitemap %s: %s", sitemap_url, why, extra={"spider": self})
            self._stat(f"discovery/sitemap_problems/{stat_slug(why)}")
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

    # --- links in the page's own navigation code (spiders/scriptlinks.py) ----------------------

    def _code_links(self, response: Response) -> list[str]:
        return self._script_links.in_page(response)

    async def _home_script_links(self, home: Response, fetches: int) -> tuple[list[str], int]:
        return await self._script_links.from_home(home, fetches, self.config.max_discovery_fetches,
                                                  self.crawler.engine.download_async)

    def parse_script(self, response: Response) -> Iterator[Any]:
        for url in self._script_links.read(response):
            result = self._admit(url, "script", "")
            if result is not None:
                yield from self._out(result)

    def script_failed(self, failure: Failure) -> None:
        self._script_links.not_read(failure.request.url, failure.value)  # type: ignore[attr-defined]

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
        decision = decide_tick(url, category, **self.config.globs)
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
        self._order.fetch_first(request.meta["helppuff_candidate"])

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
        return offsite_status(response.url, self.start_url) is None

    def parse_page(self, response: Response, candidate: str, source: str, follow: bool = True) -> Iterator[Any]:
        if (offsite := offsite_status(response.url, self.start_url)) is not None:
            page = self._base_page(candidate, source, response.meta)
            page.status, page.reason = offsite.status, offsite.reason
            page.http_status, page.redirects = response.status, list(response.meta.get("redirect_urls", []))
            self._stat(f"pages/{page.status}")
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
        html = cache(partial(_text, response))  # decoded once, and only for an HTML page
        verdict = page_status(response.status, _headers(response), response.body, html)
        page.status, page.reason = verdict.status, verdict.reason
        if verdict.fetched:
            page.html = html()
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
                yield from self._script_links.requests(response)

    def _canonical_hint(self, page: Page, response: Response) -> tuple[list[Page | Request], str]:
        """Pass the page's canonical link on, to be checked against the content (Page.canonical): a
        canonical link is a hint, and the hash pipeline, where both pages' content is known, decides
        whether the page is the other's duplicate. Returns what to yield before the page, and the
        candidate whose Page it must wait for ("" when it may go at once).

        A canonical page the crawl does not know yet is fetched as a candidate of its own (source
        "canonical"; tick rules, max_pages and robots.txt apply), so its content can be compared; what to
        yield first is then its request, or its record (over max_pages). A targeted crawl fetches no
        other page: the hash pipeline compares with what the knowledge base holds of it. The hash
        pipeline can only wait for a page that is on its way, so a page goes after the Page of the page
        its canonical link names (`_emit`), unless PageOrder.wait leaves the link unchecked (counted): a
        page fetched first makes the crawl fetch its canonical page first too.

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
        wait, why = self._order.wait(page.url, canonical, known=canonical in self._seen, first=urgent)
        if why:
            self._stat(f"canonical/ignored/{stat_slug(why)}")
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
        the log and a stat): web/canonical.py decides, with the site's rules (the tick rules and globs,
        robots.txt as read in this crawl)."""
        if not isinstance(response, HtmlResponse):
            return ""
        hrefs = canonical_hrefs(response)
        link = canonical_link(hrefs, get_base_url(response), page=candidate, final=response.url,
                              start=self.start_url, robots=self._robots, **self.config.globs)
        if link.ignored:
            self._stat(f"canonical/ignored/{stat_slug(link.ignored)}")
            logger.debug("Canonical link of %s ignored (%s): %s", candidate, link.ignored, hrefs,
                         extra={"spider": self})
        return link.url

    def _base_page(self, candidate: str, source: str, meta: dict[str, Any]) -> Page:
        category = meta.get("helppuff_category") or categorize(candidate, "")
        return Page(url=candidate, site=self.site, category=category, ticked=True,
                    tick_reason=meta.get("helppuff_tick_reason", ""), source=source,
                    sample=int(meta.get("helppuff_sample", 0)))

    def _failure_page(self, candidate: str, source: str, failure: Failure, meta: dict[str, Any] | None = None) -> Page:
        page = self._base_page(candidate, source, meta or {})
        page.fetched_at = iso(utc_now())
        exc = failure.value
        kind = next((name for types, name in _FAILURE_KINDS if isinstance(exc, types)), "")
        verdict = failure_status(kind, type(exc).__name__, str(exc))
        page.status, page.reason = verdict.status, verdict.reason
        if kind == "refused":  # a redirect to another site, or a non-public address: never fetched
            page.redirects = list((meta or {}).get("redirect_urls", []))
        self._stat(f"pages/{page.status}")
        return page

    def page_failed(self, failure: Failure) -> Iterator[Page]:
        request = failure.request  # type: ignore[attr-defined]
        meta = request.meta
        yield from self._emit(self._failure_page(meta.get("helppuff_candidate", request.url),
                                                 meta.get("helppuff_source", ""), failure, meta))
