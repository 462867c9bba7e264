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

Enable: ITEM_PIPELINES {"helppuff_crawl.pipelines.hash.HashPipeline": 500}, after the extract pipeline
(title and Markdown) and before the chunk pipeline. Reads what the last crawl learned from the
CrawlRun extension (CrawlRun.known, loaded by the store pipeline); without it, the first page seen is
kept. Stats: helppuff/hash/{pages,duplicates}.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Self

from helppuff_crawl.config.contract import CATEGORIES
from helppuff_crawl.extensions.run import CrawlRun
from helppuff_crawl.items import Page
from helppuff_crawl.kb.pages import LEARNED
from helppuff_crawl.text.hashing import content_hash

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from helppuff_crawl.kb.writer import KnownSite

logger = logging.getLogger(__name__)


class HashPipeline:
    def __init__(self, crawler: Crawler, known: Callable[[], KnownSite | None] = lambda: None) -> None:
        """`known` gives, once the crawl has begun, what the site held at its start (CrawlRun.known)."""
        self.crawler = crawler
        self._known = known
        self.stats = crawler.stats
        self.home = crawler.settings.get("HELPPUFF_START_URL") or ""
        self._kept: dict[str, str] = {}  # same-content key -> the URL learned for it in this run
        self._key_of: dict[str, str] = {}  # URL -> its same-content key in this run
        self._last: dict[str, str] | None = None  # content hash -> URL the last crawl learned with it

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        run = crawler.get_extension(CrawlRun)
        return cls(crawler, (lambda: run.known) if run is not None else (lambda: None))

    def process_item(self, item: Page) -> Page:
        if not isinstance(item, Page) or item.status != "fetched":
            return item
        item.content_hash = content_hash(item.title, item.category, item.markdown)
        self.stats.inc_value("helppuff/hash/pages")
        # Synchronous from here to the end: pages processed concurrently cannot both take one key.
        key = content_hash(item.title, "", item.markdown)
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
        return item

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
