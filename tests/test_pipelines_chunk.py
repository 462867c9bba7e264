"""ChunkPipeline and HashPipeline, built with a test crawler."""

from __future__ import annotations

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler

from helppuff_crawl.items import Page
from helppuff_crawl.pipelines.chunk import ChunkConfig, ChunkPipeline
from helppuff_crawl.pipelines.hash import HashPipeline
from helppuff_crawl.text.chunking import ChunkSizes
from helppuff_crawl.text.hashing import content_hash
from tests.crawlers import component_crawler

_MARKDOWN = "# Repairs\n\n" + "\n\n".join(f"## Job {n}\n\n" + "We fix leaking taps and burst pipes. " * 25
                                          for n in range(4))


def _page(**kw: object) -> Page:
    return Page(url="https://acme.example/repairs", site="acme", title="Repairs", category="service",
                markdown=_MARKDOWN, status="fetched", **kw)  # type: ignore[arg-type]


def test_chunks_are_cut_with_the_sizes_the_settings_give() -> None:
    seed = build_from_crawler(ChunkPipeline, component_crawler()).process_item(_page())
    crawler = component_crawler(HELPPUFF_CHUNK_MIN_TOKENS=40, HELPPUFF_CHUNK_MAX_TOKENS=120)
    small = build_from_crawler(ChunkPipeline, crawler).process_item(_page())
    assert len(small.chunks) > len(seed.chunks) >= 1
    assert all(chunk.tokens <= 120 for chunk in small.chunks)
    assert crawler.stats.get_value("helppuff/chunk/chunks") == len(small.chunks)
    assert crawler.stats.get_value("helppuff/chunk/pages") == 1


def test_pages_not_fetched_are_not_chunked() -> None:
    page = Page(url="https://acme.example/x", site="acme", status="gone", markdown="# X\n\nOld text.")
    assert build_from_crawler(ChunkPipeline, component_crawler()).process_item(page).chunks == []


def test_config_and_switch() -> None:
    assert ChunkConfig.from_settings(component_crawler().settings) == ChunkConfig(ChunkSizes(150, 800))
    with pytest.raises(ValueError, match="HELPPUFF_CHUNK_MIN_TOKENS / HELPPUFF_CHUNK_MAX_TOKENS"):
        build_from_crawler(ChunkPipeline, component_crawler(HELPPUFF_CHUNK_MIN_TOKENS=900))
    with pytest.raises(NotConfigured, match="HELPPUFF_CHUNK_ENABLED"):
        build_from_crawler(ChunkPipeline, component_crawler(HELPPUFF_CHUNK_ENABLED=False))


def test_the_hash_covers_title_category_and_markdown_of_fetched_pages_only() -> None:
    crawler = component_crawler()
    pipeline = build_from_crawler(HashPipeline, crawler)
    page = pipeline.process_item(_page())
    assert page.content_hash == content_hash("Repairs", "service", _MARKDOWN) and len(page.content_hash) == 64
    gone = pipeline.process_item(Page(url="https://acme.example/y", site="acme", status="gone"))
    assert gone.content_hash == ""
    assert crawler.stats.get_value("helppuff/hash/pages") == 1
