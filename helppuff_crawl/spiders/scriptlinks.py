"""The pages a site's own navigation code opens, for the site spider: which scripts it reads, and what.

web/scriptlinks.py reads the code (pure: a plain `location.href = '...'` and the like, never run);
this is the crawl's side of it, one `ScriptLinks` per crawl (`SiteSpider.from_crawler`):

- `in_page(response)`: what a page's inline scripts, on* handlers and `javascript:` hrefs navigate
  to. Read on every page whose links the spider follows, and on the home page.
- `requests(response)` / `from_home(...)`: the page's own script files (on the site), each asked for
  once a crawl, at most HELPPUFF_SCRIPT_LINKS_MAX_FETCHES in all: a followed page's when it has fewer
  than HELPPUFF_SCRIPT_LINKS_FEW_LINKS links to the site (the spider's rule), the home page's during
  discovery, within its fetch budget, awaited there. A script is no candidate page: no Page is
  recorded for it, whatever its fate; robots.txt and the downloader guard apply as to any request.
- `read(response)`: what a fetched script file navigates to, resolved against the page that runs it.
  An error status or an HTML answer (a host's 404 or fallback page) is not the script: unusable.

The spider admits each URL found as it admits a link (source "script"). Stats:
helppuff/discovery/scripts/{read,unusable}, helppuff/discovery/scripts/failed/<why> (not fetched:
robots.txt, the guard, a timeout), helppuff/discovery/scripts/skipped/budget.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from scrapy.http import HtmlResponse, Request, Response, TextResponse
from scrapy.utils.response import get_base_url

from helppuff_crawl.spiders import stat_slug
from helppuff_crawl.web.scriptlinks import navigation_urls, page_code, script_sources
from helppuff_crawl.web.urls import same_site

if TYPE_CHECKING:
    from scrapy import Spider
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)


class ScriptLinks:
    def __init__(self, spider: Spider, start_url: str, max_fetches: int,
                 callback: Callable[[Response], Any], errback: Callable[[Failure], Any]) -> None:
        self._spider = spider  # its crawler's stats (set once the crawl starts), and the log records' `extra`
        self.start_url = start_url
        self.max_fetches = max_fetches  # HELPPUFF_SCRIPT_LINKS_MAX_FETCHES
        self._callback, self._errback = callback, errback  # the spider's: its parse_script and script_failed
        self._asked: set[str] = set()  # script files asked for (each once per crawl)

    def in_page(self, response: Response) -> list[str]:
        """URLs the page's inline scripts, handlers and javascript: hrefs plainly navigate to."""
        if not isinstance(response, HtmlResponse):
            return []
        base = get_base_url(response)
        return [url for code in page_code(response) for url in navigation_urls(code, base)]

    def requests(self, response: Response) -> list[Request]:
        """Requests for the page's own script files not asked for yet (`files`)."""
        return [self.request(url, response.url) for url in self.files(response)]

    def files(self, response: Response) -> list[str]:
        """The page's own script files not asked for yet, within HELPPUFF_SCRIPT_LINKS_MAX_FETCHES a crawl."""
        if not isinstance(response, HtmlResponse):
            return []
        wanted = []
        for url in script_sources(response, get_base_url(response)):
            if url in self._asked or not same_site(url, self.start_url):
                continue
            if len(self._asked) >= self.max_fetches:
                self._stat("skipped/budget")
                break
            self._asked.add(url)
            wanted.append(url)
        return wanted

    def request(self, url: str, page_url: str) -> Request:
        # Not a candidate page: no Page item is recorded for it, whatever its fate.
        return Request(url, callback=self._callback, errback=self._errback, dont_filter=True,
                       meta={"helppuff_script_page": page_url}, priority=-1)

    async def from_home(self, home: Response, fetches: int, max_fetches: int,
                        download: Callable[[Request], Awaitable[Response]]) -> tuple[list[str], int]:
        """The home page's own script files, fetched within the discovery budget (`fetches` made so far
        of `max_fetches`), and their navigation; with the fetches made then."""
        urls: list[str] = []
        for script_url in self.files(home):
            if fetches >= max_fetches:
                self._stat("skipped/budget")
                break
            fetches += 1
            try:
                response = await download(self.request(script_url, home.url))
            except Exception as exc:  # robots.txt, the guard, a timeout: the script is not read, nothing else
                self.not_read(script_url, exc)
                continue
            urls.extend(self.read(response, home.url))
        return urls, fetches

    def read(self, response: Response, page_url: str | None = None) -> list[str]:
        """The URLs a fetched script file plainly navigates to, resolved against the page that runs it
        (`page_url`; default: the page its request was made for)."""
        if page_url is None:
            page_url = response.meta.get("helppuff_script_page", response.url)
        if response.status != 200 or not isinstance(response, TextResponse) or isinstance(response, HtmlResponse):
            # An HTML answer is a host's 404 or fallback page, not the script.
            self._stat("unusable")
            return []
        self._stat("read")
        return navigation_urls(response.text, page_url)

    def not_read(self, url: str, exc: BaseException) -> None:
        self._stat(f"failed/{stat_slug(str(exc) or type(exc).__name__)}")
        logger.debug("Script %s not read: %s", url, exc, extra={"spider": self._spider})

    def _stat(self, key: str) -> None:
        self._spider.crawler.stats.inc_value(f"helppuff/discovery/scripts/{key}")
