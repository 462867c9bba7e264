"""ExtractMarkdownPipeline and BoilerplatePipeline, built with a test crawler."""

from __future__ import annotations

import asyncio

import pytest_twisted
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from helppuff_crawl.items import Page
from helppuff_crawl.pipelines.boilerplate import BoilerplatePipeline
from helppuff_crawl.pipelines.extract import ExtractMarkdownPipeline
from tests.conftest import run_async

_FAQ_JSONLD = """<html><head><title>Questions | Acme</title>
<script type="application/ld+json">{"@context": "https://schema.org", "@type": "FAQPage", "mainEntity": [
 {"@type": "Question", "name": "Do you work weekends?", "acceptedAnswer": {"@type": "Answer", "text": "Yes, Saturdays until noon."}},
 {"@type": "Question", "name": "Shown on the page?", "acceptedAnswer": {"@type": "Answer", "text": "Yes."}}]}
</script></head><body><main><h1>Questions</h1><p><strong>Shown on the page?</strong></p><p>Yes.</p></main></body></html>"""


def _page(html: str, url: str = "https://acme.example/questions", **kw: object) -> Page:
    return Page(url=url, site="acme", html=html, status="fetched", **kw)  # type: ignore[arg-type]


def test_faqpage_jsonld_pairs_the_page_does_not_show_become_bold_questions() -> None:
    crawler = get_crawler()
    pipeline = build_from_crawler(ExtractMarkdownPipeline, crawler)
    page = pipeline.process_item(_page(_FAQ_JSONLD))
    assert page.markdown == (
        "# Questions\n\n**Shown on the page?**\n\nYes.\n\n**Do you work weekends?**\n\nYes, Saturdays until noon."
    )
    assert ("Do you work weekends?", "Yes, Saturdays until noon.") in page.faq
    assert page.title == "Questions | Acme" and page.category == "faq"  # from the title: the URL said nothing
    assert crawler.stats.get_value("helppuff/extract/pages") == 1


def test_a_page_without_content_is_empty_not_learned() -> None:
    crawler = get_crawler()
    pipeline = build_from_crawler(ExtractMarkdownPipeline, crawler)
    page = pipeline.process_item(_page("<html><body><nav><a href='/'>Home</a></nav></body></html>"))
    assert (page.status, page.reason) == ("empty", "no main content")
    assert crawler.stats.get_value("helppuff/extract/empty") == 1


def test_pages_not_fetched_pass_through_untouched() -> None:
    pipeline = build_from_crawler(ExtractMarkdownPipeline, get_crawler())
    page = Page(url="https://acme.example/x", site="acme", status="gone", reason="HTTP 404")
    assert pipeline.process_item(page) is page and page.markdown == ""


_PANEL = "<section><h2>Why choose us?</h2><p>Licensed, insured and on time since 1998.</p></section>"


def _site_page(n: int) -> str:
    return (f"<html><head><title>Page {n}</title></head><body><main><h1>Page {n}</h1>"
            f"<p>Unique words for page number {n}: {'alpha beta gamma ' * n}</p>{_PANEL}</main></body></html>")


async def _sample_scenario() -> None:
    crawler = get_crawler()
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



