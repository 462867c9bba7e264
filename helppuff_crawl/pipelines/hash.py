"""Hash each learned page (title, category, Markdown) so unchanged pages are not redone, and learn
the same content once: a page whose title and Markdown are another page's is that page's duplicate.

A site answers several URLs with one text: a single-page app's host serves its index.html for every
route (`/about`, `/services`, `/`), a CMS serves a page under its slug and its ?p=id, a print view
repeats an article. Each would be learned again, its passages crowding the search with copies. So
the first page of a run with a given title and Markdown is learned, and every later one is recorded
"skipped", reason "duplicate of URL (same content)" (Page.duplicate_of), and goes no further: no
chunks, no embeddings, and its old passages leave the knowledge base as an unticked page's do (the
store pipeline). The category is left out of this comparison: it comes from the URL, so the same
text at `/about` and `/services` has two categories.

Which page is kept must not change from one crawl to the next, or every recrawl would move the
passages back and forth. Pages reach this pipeline in the order their responses arrive, which is
not stable, so the page kept is the one the last crawl learned with this content (its stored
content hash is this content's, in its own category), when there is one and it has not come with
other content in this run; with several (learned before this rule existed), the home page, else
the shortest URL, else the first in order. Only when none was learned is it the first page seen
this run, which is then the one learned, and so the one kept by the next crawls. A duplicate whose
content changes is learned again as itself. One case waits a crawl: when the kept page changes
after its duplicate was recorded in the same run, the duplicate's text is learned by the next crawl.

Canonical links are checked here, against the content. A page's canonical link to another page of the
site is a hint (search engines ignore it when the pages differ): a site built from a template can name
its home page on every page, the menu and the price list included. The spider passes it on
(Page.canonical), and the page is recorded as that page's duplicate only when their content agrees:
the same title and Markdown, or a near-duplicate, at least NEAR_DUPLICATE of the page's Markdown (its
4-word runs, after the furniture is dropped: text/resemblance.py) being on that page too. It is then
"skipped", reason "duplicate of URL (canonical link)", URL being the page learned with that content
(the canonical page, or the page that one duplicates), and goes no further, as above (stat
helppuff/canonical/honoured). Otherwise it is learned as itself, and its record notes why the link was
not followed (Page.reason on a learned page: "canonical link to URL not followed: the content differs
(12% of this page's text is on that page)", shown by `helppuff status --pages`; stat
helppuff/canonical/ignored/content_differs), or that the canonical page has no content this run (gone,
failed, unticked, not a page: .../not_learned).

The comparison needs the canonical page's outcome. The spider yields a page only after the Page of the
page its canonical link names, when that page is fetched in this run (spiders/canonical.py), but pages
go through the pipelines concurrently, so the canonical page can still come here later: the page then
waits for its outcome (stat helppuff/canonical/waited). That page is on its way, so the wait ends when
it comes, or when it is dropped or fails before it comes (the item_dropped and item_error signals). A
targeted crawl that does not fetch the canonical page compares with what the knowledge base holds of
it (its last good crawl's title and Markdown). The Markdown of the run's pages is kept here, for these
comparisons, until the crawl ends (at most max_pages pages).

Enable: ITEM_PIPELINES {"helppuff_crawl.pipelines.hash.HashPipeline": 500}, after the extract pipeline
(title and Markdown) and before the chunk pipeline. Reads what the last crawl learned and whether the
crawl is targeted from the crawl's start (CrawlRun.start.known and .targeted, kb/crawl_start.py, at its
first page), and the knowledge base from the CrawlRun extension; without it, the first page seen is
kept, and a canonical page is only waited for.
Stats: helppuff/hash/{pages,duplicates}, helppuff/canonical/{honoured,waited},
helppuff/canonical/ignored/{content_differs,not_learned}.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals

from helppuff_crawl.cloudflare.client import CloudflareError
from helppuff_crawl.schema.contract import CATEGORIES
from helppuff_crawl.extensions.run import CrawlRun
from helppuff_crawl.items import Page
from helppuff_crawl.kb.pages import LEARNED, get_page
from helppuff_crawl.text.hashing import content_hash
from helppuff_crawl.text.resemblance import NEAR_DUPLICATE, containment

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from helppuff_crawl.kb.writer import KnownSite

logger = logging.getLogger(__name__)

StoredPage = Callable[[str], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True)
class _Outcome:
    """What became of a page here, for the pages whose canonical link names it."""

    keeper: str  # the URL learned with its content: its own, or the page it duplicates; "" when it has none
    status: str  # its status here ("fetched": on its way to be learned), and below why, for a page's note
    key: str = ""  # its same-content key: content_hash(title, "", markdown)
    markdown: str = ""
    reason: str = ""

    def said(self) -> str:
        """Its status, and why, for a note: "gone (HTTP 404)"."""
        return self.status + (f" ({self.reason})" if self.reason else "")


class HashPipeline:
    def __init__(self, crawler: Crawler, known: Callable[[], KnownSite | None] = lambda: None,
                 stored: StoredPage | None = None, targeted: Callable[[], tuple[str, ...]] = lambda: ()) -> None:
        """`known` gives, once the crawl has begun, what the site held at its start (CrawlRun.start.known);
        `stored` reads one page's row with its Markdown from the knowledge base, and `targeted` gives the
        pages a targeted crawl fetches (CrawlRun.start.targeted, () for a full crawl)."""
        self.crawler = crawler
        self._known = known
        self._stored = stored
        self._targeted = targeted
        self.stats = crawler.stats
        self.home = crawler.settings.get("HELPPUFF_START_URL") or ""
        self._kept: dict[str, str] = {}  # same-content key -> the URL learned for it in this run
        self._key_of: dict[str, str] = {}  # URL -> its same-content key in this run ("": never kept for it)
        self._last: dict[str, str] | None = None  # content hash -> URL the last crawl learned with it
        self._outcomes: dict[str, _Outcome] = {}  # URL -> what became of its page in this run
        self._waiting: dict[str, asyncio.Future[_Outcome]] = {}  # URL -> its outcome, for pages waiting here
        crawler.signals.connect(self._dropped, signal=signals.item_dropped)
        crawler.signals.connect(self._failed, signal=signals.item_error)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        run = crawler.get_extension(CrawlRun)
        if run is None:
            return cls(crawler)
        return cls(crawler, lambda: run.start.known, lambda url: get_page(run.kb, run.config.site, url),
                   lambda: run.start.targeted)

    def process_item(self, item: Page) -> Page | Coroutine[Any, Any, Page]:
        """The page with its content hash, recorded as a duplicate when it is one; a coroutine instead
        when its canonical page's outcome is not known yet (Scrapy awaits it)."""
        if not isinstance(item, Page):
            return item
        if item.status != "fetched":
            self._settle(item.url, _Outcome("", item.status, reason=item.reason))
            return item
        item.content_hash = content_hash(item.title, item.category, item.markdown)
        self.stats.inc_value("helppuff/hash/pages")
        if item.canonical:
            target = self._outcomes.get(item.canonical)
            if target is None:
                return self._check_later(item)
            self._check(item, target)
        return self._dedupe(item)

    async def _check_later(self, item: Page) -> Page:
        url = item.canonical
        target = self._outcomes.get(url)
        if target is None:
            named = self._targeted()
            if named and url not in named:
                target = await self._stored_outcome(url)  # a targeted crawl does not fetch it
            else:
                self.stats.inc_value("helppuff/canonical/waited")
                if url not in self._waiting:
                    self._waiting[url] = asyncio.get_running_loop().create_future()
                target = await self._waiting[url]
        self._check(item, target)
        return self._dedupe(item)

    def _check(self, item: Page, target: _Outcome) -> None:
        """Record the page as its canonical page's duplicate when their content agrees, else note why not."""
        url = item.canonical
        if not target.keeper:
            self._ignored(item, "not_learned", f"canonical link to {url} not followed: that page is {target.said()}")
            return
        if target.keeper == item.url:
            return  # the canonical page is this page's duplicate: this page is learned
        held = 1.0 if content_hash(item.title, "", item.markdown) == target.key else containment(
            item.markdown, target.markdown)
        if held < NEAR_DUPLICATE:
            self._ignored(item, "content_differs", f"canonical link to {url} not followed: the content differs "
                                                   f"({held:.0%} of this page's text is on that page)")
            return
        item.status, item.reason, item.duplicate_of = "skipped", f"duplicate of {target.keeper} (canonical link)", \
            target.keeper
        item.html = ""
        self.stats.inc_value("helppuff/canonical/honoured")
        logger.debug("%s has the content of %s, its canonical page: recorded as its duplicate", item.url, url,
                     extra={"spider": self.crawler.spider})

    def _ignored(self, item: Page, why: str, note: str) -> None:
        item.reason = note[:300]
        self.stats.inc_value(f"helppuff/canonical/ignored/{why}")
        logger.debug("%s learned as itself: %s", item.url, note, extra={"spider": self.crawler.spider})

    def _dedupe(self, item: Page) -> Page:
        """The same title and Markdown as a page kept in this run: recorded as its duplicate. Synchronous
        to the end: pages processed concurrently cannot both take one key."""
        key = content_hash(item.title, "", item.markdown)
        if item.status != "fetched":  # its canonical page's duplicate: never the page kept for its content
            self._key_of[item.url] = ""
            self._settle(item.url, _Outcome(item.duplicate_of, item.status, key, item.markdown))
            return item
        kept = self._kept.get(key)
        if kept is None:
            kept = self._kept[key] = self._learned_before(item, key) or item.url
        self._key_of[item.url] = key
        if kept != item.url:
            item.status, item.reason, item.duplicate_of = "skipped", f"duplicate of {kept} (same content)", kept
            item.html = ""
            self.stats.inc_value("helppuff/hash/duplicates")
            logger.debug("%s has the content of %s: recorded as its duplicate", item.url, kept,
                         extra={"spider": self.crawler.spider})
        self._settle(item.url, _Outcome(kept, item.status, key, item.markdown))
        return item

    def _settle(self, url: str, outcome: _Outcome) -> None:
        """Remember what became of the page at `url`, and wake the pages waiting for it."""
        outcome = self._outcomes.setdefault(url, outcome)
        waiting = self._waiting.pop(url, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(outcome)

    def _dropped(self, item: Any, **kwargs: Any) -> None:
        if isinstance(item, Page):  # a page dropped before it came here has no content this run
            self._settle(item.url, _Outcome("", "dropped", reason=str(kwargs.get("exception") or "")[:200]))

    def _failed(self, item: Any, **kwargs: Any) -> None:
        if isinstance(item, Page):
            self._settle(item.url, _Outcome("", "failed", reason="a processing error"))

    async def _stored_outcome(self, url: str) -> _Outcome:
        """What the knowledge base holds of the page at `url`: its last good crawl's content."""
        row = None
        if self._stored is not None:
            try:
                row = await self._stored(url)
            except CloudflareError as exc:
                logger.warning("The stored page %s could not be read: %s", url, exc, extra={"spider": self.crawler.spider})
                return _Outcome("", "not read", reason=str(exc).splitlines()[0][:200])
        if row is None:
            outcome = _Outcome("", "not known")
        elif row["status"] not in LEARNED or not row.get("markdown"):
            outcome = _Outcome("", row["status"], reason=row.get("reason") or "")
        else:
            outcome = _Outcome(url, row["status"], content_hash(row.get("title") or "", "", row["markdown"]),
                               row["markdown"])
        return self._outcomes.setdefault(url, outcome)

    def _learned_before(self, item: Page, key: str) -> str:
        """The URL the last crawl learned with this page's title and Markdown (in its own category),
        unless it came with other content in this run; "" when there is none."""
        if self._last is None:
            known = self._known()
            rows = known.pages.values() if known is not None else ()
            self._last = {row["content_hash"]: row["url"] for row in rows
                          if row["status"] in LEARNED and row.get("content_hash")}
        if not self._last:
            return ""
        found = {url for category in CATEGORIES
                 if (url := self._last.get(content_hash(item.title, category, item.markdown)))
                 and self._key_of.get(url, key) == key}
        return min(found, key=lambda url: (url != self.home, len(url), url), default="")
