"""BoilerplatePipeline, built with a test crawler: the sample first, then furniture dropped everywhere."""

from __future__ import annotations

import asyncio

import pytest
import pytest_twisted
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler

from helppuff_crawl.items import Page
from helppuff_crawl.pipelines.boilerplate import BoilerplateConfig, BoilerplatePipeline
from helppuff_crawl.pipelines.extract import ExtractMarkdownPipeline
from tests.conftest import run_async
from tests.crawlers import component_crawler


def _page(html: str, url: str = "https://acme.example/questions", **kw: object) -> Page:
    return Page(url=url, site="acme", html=html, status="fetched", **kw)  # type: ignore[arg-type]


_PANEL = "<section><h2>Why choose us?</h2><p>Licensed, insured and on time since 1998.</p></section>"


def _site_page(n: int) -> str:
    return (f"<html><head><title>Page {n}</title></head><body><main><h1>Page {n}</h1>"
            f"<p>Unique words for page number {n}: {'alpha beta gamma ' * n}</p>{_PANEL}</main></body></html>")


async def _sample_scenario() -> None:
    crawler = component_crawler()
    boilerplate = build_from_crawler(BoilerplatePipeline, crawler)
    extract = build_from_crawler(ExtractMarkdownPipeline, crawler)
    # A fetched page outside the sample arrives first: it waits for the sample.
    early = _page(_site_page(9), url="https://acme.example/p9")
    waiting = asyncio.ensure_future(boilerplate.process_item(early))
    await asyncio.sleep(0)
    assert not waiting.done()
    # A page that was not fetched never waits.
    gone = Page(url="https://acme.example/gone", site="acme", status="gone")
    assert await boilerplate.process_item(gone) is gone
    # The sample: four pages, one of them blocked (it counts, but teaches nothing).
    blocked = Page(url="https://acme.example/p4", site="acme", status="blocked", sample=4)
    assert await boilerplate.process_item(blocked) is blocked
    fetched = [_page(_site_page(n), url=f"https://acme.example/p{n}", sample=4) for n in range(1, 4)]
    await asyncio.gather(*(boilerplate.process_item(p) for p in fetched), waiting)
    assert crawler.stats.get_value("helppuff/boilerplate/sample_pages") == 3
    assert crawler.stats.get_value("helppuff/boilerplate/furniture_blocks") >= 1
    done = extract.process_item(early)
    assert "Why choose us" not in done.markdown and "Unique words for page number 9" in done.markdown


@pytest_twisted.inlineCallbacks
def test_furniture_is_learned_from_the_sample_then_dropped_everywhere():  # type: ignore[no-untyped-def]
    yield run_async(_sample_scenario())


async def _one_page_under_many_urls() -> list[str]:
    """A single-page app's host: the sample is the home page and three routes answered with the same
    index.html, then two other pages. Returns the URLs in the order they left the pipeline."""
    crawler = component_crawler()
    boilerplate = build_from_crawler(BoilerplatePipeline, crawler)
    extract = build_from_crawler(ExtractMarkdownPipeline, crawler)
    app = _site_page(1)
    sample = [_page(app, url=f"https://acme.example{path}", sample=6) for path in ("", "/about", "/team", "/x")]
    sample += [_page(_site_page(n), url=f"https://acme.example/p{n}", sample=6) for n in (2, 3)]
    left: list[str] = []

    async def through(page: Page) -> None:
        await boilerplate.process_item(page)
        left.append(page.url)

    tasks = [asyncio.ensure_future(through(page)) for page in sample]
    await asyncio.gather(*tasks)
    # Counted once, the app's page is one of three: its own text is no furniture, the shared panel is.
    assert crawler.stats.get_value("helppuff/boilerplate/sample_pages") == 3
    home = extract.process_item(sample[0])
    assert "Unique words for page number 1" in home.markdown and "Why choose us" not in home.markdown
    return left


@pytest_twisted.inlineCallbacks
def test_a_page_served_under_many_urls_counts_once_in_the_sample():  # type: ignore[no-untyped-def]
    left = yield run_async(_one_page_under_many_urls())
    # The page that completed the sample leaves last: the home page, first in, is first out.
    assert left == ["https://acme.example", "https://acme.example/about", "https://acme.example/team",
                    "https://acme.example/x", "https://acme.example/p2", "https://acme.example/p3"]





@pytest.mark.parametrize("threshold", [0, 1, 1.5, -0.2])
def test_a_threshold_outside_zero_to_one_is_refused_naming_the_setting(threshold: float) -> None:
    with pytest.raises(ValueError, match="HELPPUFF_BOILERPLATE_THRESHOLD"):
        BoilerplateConfig.from_settings(component_crawler(HELPPUFF_BOILERPLATE_THRESHOLD=threshold).settings)


def test_the_switch() -> None:
    assert BoilerplateConfig.from_settings(component_crawler().settings) == BoilerplateConfig(0.5)
    with pytest.raises(NotConfigured):
        build_from_crawler(BoilerplatePipeline, component_crawler(HELPPUFF_BOILERPLATE_ENABLED=False))
