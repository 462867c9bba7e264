"""EmbedPipeline with an injected fake embedder, on a real local knowledge base: batches fill across
pages, unchanged passages keep their vectors, and a failed call fails only its pages."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler

from helppuff_crawl.embed.models import default_model
from helppuff_crawl.extensions.run import CrawlRun
from helppuff_crawl.items import Page
from helppuff_crawl.pipelines.chunk import ChunkPipeline
from helppuff_crawl.pipelines.embed import EmbedConfig, EmbedPipeline
from helppuff_crawl.pipelines.hash import HashPipeline
from tests.components import LOCAL_MODEL, crawl_settings, fetched_page, open_parts
from tests.conftest import run_async
from tests.crawlers import component_crawler
from tests.fakes import FakeEmbedder

A = "https://acme.example"


def _markdown(n: int) -> str:
    return f"# Page {n}\n\n## About {n}\n\n" + f"Section of page {n}, about plumbing job number {n}. " * 20


def _ready(parts: Any, page: Page) -> Page:
    page = HashPipeline(parts.crawler).process_item(page)
    return ChunkPipeline(parts.crawler).process_item(page)


async def _batches_across_pages(tmp_path: Path) -> None:
    parts = await open_parts(tmp_path, HELPPUFF_EMBED_BATCH_SIZE=4, HELPPUFF_EMBED_LINGER=5.0)
    pages = [_ready(parts, fetched_page(f"{A}/p{n}", _markdown(n))) for n in range(6)]
    assert all(len(page.chunks) == 1 for page in pages)
    assert parts.embed is not None
    # The batches of a remote model, whose calls are requests: a partial batch lingers.
    parts.embed.config = dataclasses.replace(parts.embed.config, send_when_idle=False)
    parts.embed.open_spider()
    waiting = [asyncio.ensure_future(parts.embed.process_item(page)) for page in pages]
    await asyncio.sleep(0.2)
    # Four texts made a full batch at once; the other two wait for more pages (linger: 5 s)...
    assert [len(batch) for batch in parts.embedder.batches] == [4]
    assert sum(task.done() for task in waiting) == 4
    # ... and the end of the crawl sends them.
    await parts.embed.close_spider()
    done = await asyncio.gather(*waiting)
    assert [len(batch) for batch in parts.embedder.batches] == [4, 2]
    assert all(page.lesson is not None and len(page.lesson.vectors) == 1 for page in done)
    stats = parts.crawler.stats
    assert (stats.get_value("helppuff/embed/texts"), stats.get_value("helppuff/embed/batches")) == (6, 2)
    assert stats.get_value("helppuff/embed/calls") == 2 and stats.get_value("helppuff/embed/model") == LOCAL_MODEL
    await parts.close()


@pytest_twisted.inlineCallbacks
def test_batches_fill_across_pages(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_batches_across_pages(tmp_path))


async def _partial_batch_sent(tmp_path: Path, send_when_idle: bool, linger: float) -> None:
    parts = await open_parts(tmp_path, HELPPUFF_EMBED_BATCH_SIZE=32, HELPPUFF_EMBED_LINGER=linger)
    assert parts.embed is not None and parts.embed.config.send_when_idle  # the local cloud
    if not send_when_idle:  # as on Cloudflare
        parts.embed.config = dataclasses.replace(parts.embed.config, send_when_idle=False)
        parts.embed.open_spider()
    page = await asyncio.wait_for(parts.embed.process_item(_ready(parts, fetched_page(f"{A}/p1", _markdown(1)))), 30)
    # No other page came: the page's one text went alone, and the page moved on.
    assert [len(batch) for batch in parts.embedder.batches] == [1] and page.lesson.vectors
    await parts.close()


@pytest_twisted.inlineCallbacks
@pytest.mark.parametrize(("send_when_idle", "linger"), [
    (False, 0.05),  # on Cloudflare, once the linger is over
    (True, 600.0),  # in the local cloud at once, the model being idle: a linger no test waits out
])
def test_a_page_never_waits_for_a_batch_that_will_not_fill(  # type: ignore[no-untyped-def]
        tmp_path: Path, send_when_idle: bool, linger: float):
    yield run_async(_partial_batch_sent(tmp_path, send_when_idle, linger))


async def _reuse(tmp_path: Path) -> None:
    parts = await open_parts(tmp_path)
    await parts.learn(fetched_page(f"{A}/p1", _markdown(1) + "\n\n## Prices\n\n" + "Call-outs cost $99. " * 40))
    first = len(parts.embedder.batches[-1])
    await parts.close()
    assert first == 2
    again = await open_parts(tmp_path)
    changed = _markdown(1) + "\n\n## Prices\n\n" + "Call-outs cost $120. " * 40
    page = await again.learn(fetched_page(f"{A}/p1", changed))
    assert page.status == "ok"
    assert [len(batch) for batch in again.embedder.batches] == [1]  # the unchanged section kept its vector
    assert again.crawler.stats.get_value("helppuff/embed/reused") == 1
    await again.close()


@pytest_twisted.inlineCallbacks
def test_unchanged_passages_keep_their_vectors(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_reuse(tmp_path))


async def _one_failed_call(tmp_path: Path) -> None:
    class _FailsOnce(FakeEmbedder):
        async def embed(self, texts: list[str]) -> list[list[float]]:
            if any("page 1," in text for text in texts):
                raise RuntimeError("429 Too Many Requests after 3 attempts")
            return await super().embed(texts)

    parts = await open_parts(tmp_path, embedder=_FailsOnce(dimensions=384, model=LOCAL_MODEL),
                             HELPPUFF_EMBED_BATCH_SIZE=1)
    assert parts.embed is not None
    bad, good = await asyncio.gather(*(parts.embed.process_item(_ready(parts, fetched_page(f"{A}/p{n}", _markdown(n))))
                                       for n in (1, 2)))
    assert bad.lesson.error == "RuntimeError: 429 Too Many Requests after 3 attempts" and not bad.lesson.vectors
    assert not good.lesson.error and good.lesson.vectors
    assert parts.crawler.stats.get_value("helppuff/embed/failed_pages") == 1
    await parts.close()


@pytest_twisted.inlineCallbacks
def test_a_failed_call_fails_only_its_pages(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_one_failed_call(tmp_path))


async def _passes_through(tmp_path: Path) -> None:
    parts = await open_parts(tmp_path)
    assert parts.embed is not None
    gone = Page(url=f"{A}/gone", site="acme", status="gone")
    no_chunks = fetched_page(f"{A}/raw", "# Raw\n\nText.")  # the chunk pipeline did not run
    assert await parts.embed.process_item(gone) is gone and gone.lesson is None
    assert await parts.embed.process_item(no_chunks) is no_chunks and no_chunks.lesson is None
    assert parts.embedder.batches == []
    await parts.close()


@pytest_twisted.inlineCallbacks
def test_pages_without_chunks_pass_through(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_passes_through(tmp_path))


def _config(tmp_path: Path, **settings: Any) -> EmbedConfig:
    """The embed pipeline's config as a crawl builds it: its index is the crawl's one writer's."""
    crawler = component_crawler(**crawl_settings(tmp_path, **settings))
    pipeline = build_from_crawler(EmbedPipeline, crawler)
    run = crawler.get_extension(CrawlRun)
    assert pipeline.config.index is run.writer.config
    return pipeline.config


def test_config_from_the_settings(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert (config.batch_size, config.concurrency, config.linger) == (32, 2, 0.05)
    assert config.send_when_idle  # the local cloud
    assert (config.index.model, config.index.dimensions, config.index.index) == (default_model(remote=False), 384,
                                                                                  "helppuff")
    remote = _config(tmp_path, HELPPUFF_CLOUDFLARE_API_TOKEN="token", HELPPUFF_CLOUDFLARE_ACCOUNT_ID="account")
    assert not remote.send_when_idle  # on Cloudflare every call is a request: a partial batch lingers
    assert remote.index.model == default_model(remote=True)


@pytest.mark.parametrize(("name", "value", "message"), [
    ("HELPPUFF_EMBED_BATCH_SIZE", 33, r"HELPPUFF_EMBED_BATCH_SIZE must be 1-32"),
    ("HELPPUFF_EMBED_BATCH_SIZE", -1, r"HELPPUFF_EMBED_BATCH_SIZE must be 1-32"),
    ("HELPPUFF_EMBED_CONCURRENCY", 0, "HELPPUFF_EMBED_CONCURRENCY must be >= 1"),
    ("HELPPUFF_EMBED_LINGER", 0, "HELPPUFF_EMBED_LINGER must be > 0"),
])  # the index's settings are the writer's: tests/test_extensions_run.py
def test_bad_settings_are_refused_naming_them(tmp_path: Path, name: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _config(tmp_path, **{name: value})


def test_the_switch(tmp_path: Path) -> None:
    crawler = component_crawler(**crawl_settings(tmp_path, HELPPUFF_EMBED_ENABLED=False))
    with pytest.raises(NotConfigured, match="HELPPUFF_EMBED_ENABLED"):
        EmbedPipeline(crawler, None, FakeEmbedder())  # type: ignore[arg-type]
