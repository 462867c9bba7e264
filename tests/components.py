"""The crawl's knowledge-base components wired the Scrapy way, on a local cloud in a tmp folder.

    parts = await open_parts(tmp_path, HELPPUFF_SITE="acme")   # crawler, CrawlRun, EmbedPipeline, StorePipeline
    page = await parts.learn(fetched_page("https://acme.example/x", "# X\\n\\nText."))
    await parts.close("finished")

The embedder is a fake (tests/fakes.py) with the dimensions of the local model the index expects, so
nothing loads a model; everything else is the real code on a real SQLite knowledge base.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scrapy import signals

from helppuff_crawl.extensions.run import CrawlRun
from helppuff_crawl.items import Page
from helppuff_crawl.pipelines.chunk import ChunkPipeline
from helppuff_crawl.pipelines.embed import EmbedPipeline
from helppuff_crawl.pipelines.hash import HashPipeline
from helppuff_crawl.pipelines.store import StorePipeline
from tests.crawlers import component_crawler
from tests.fakes import FakeEmbedder

LOCAL_MODEL = "@local/all-minilm-l6-v2"


def crawl_settings(tmp_path: Path, **settings: Any) -> dict[str, Any]:
    """What the site spider would set, a local cloud under tmp_path, and the CrawlRun extension."""
    return {"HELPPUFF_SITE": "acme", "HELPPUFF_START_URL": "https://acme.example", "HELPPUFF_DATA_DIR": str(tmp_path),
            "EXTENSIONS": {"helppuff_crawl.extensions.run.CrawlRun": 0}, "TELNETCONSOLE_ENABLED": False,
            "HELPPUFF_EMBED_LINGER": 0.05, **settings}


def fetched_page(url: str, markdown: str, title: str = "A page", category: str = "service", **kw: Any) -> Page:
    """A page as the extract pipeline leaves it."""
    return Page(url=url, site="acme", category=category, title=title, markdown=markdown, status="fetched",
                http_status=200, final_url=url, fetched_at="2026-12-01T00:00:00Z", **kw)


@dataclass
class Parts:
    crawler: Any
    run: CrawlRun
    embed: EmbedPipeline | None
    store: StorePipeline
    embedder: FakeEmbedder
    scraped: list[Page]

    async def learn(self, page: Page) -> Page:
        """The page through hash, chunk, embed and store, then `item_scraped` as the engine sends it."""
        page = HashPipeline(self.crawler).process_item(page)
        if self.crawler.settings.getbool("HELPPUFF_CHUNK_ENABLED"):
            page = ChunkPipeline(self.crawler).process_item(page)
        if self.embed is not None:
            page = await self.embed.process_item(page)
        page = await self.store.process_item(page)
        self.crawler.signals.send_catch_log(signals.item_scraped, item=page, spider=self.crawler.spider)
        return page

    async def close(self, reason: str = "finished") -> None:
        """The end of the crawl as the engine runs it: pipelines close, then spider_closed."""
        if self.embed is not None:
            await self.embed.close_spider()
        await self.store.close_spider()
        await self.run.spider_closed(self.crawler.spider, reason)


async def open_parts(tmp_path: Path, embedder: FakeEmbedder | None = None, **settings: Any) -> Parts:
    """The crawler's CrawlRun, embed and store pipelines, opened as the engine opens them."""
    crawler = component_crawler(**crawl_settings(tmp_path, **settings))
    crawler.spider = crawler.spidercls.from_crawler(crawler)
    run = crawler.get_extension(CrawlRun)
    assert run is not None
    embedder = embedder or FakeEmbedder(dimensions=384, model=LOCAL_MODEL)
    embed = None
    if crawler.settings.getbool("HELPPUFF_EMBED_ENABLED"):
        embed = EmbedPipeline(crawler, run, embedder)
        embed.open_spider()
    store = StorePipeline(crawler, run, lambda: embed)
    store.open_spider()
    await run.spider_opened(crawler.spider)  # the run row, then the crawl's start
    scraped: list[Page] = []

    def collect(item: Page) -> None:
        scraped.append(item)

    crawler.signals.connect(collect, signal=signals.item_scraped, weak=False)
    return Parts(crawler, run, embed, store, embedder, scraped)
