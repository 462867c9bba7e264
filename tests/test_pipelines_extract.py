"""ExtractMarkdownPipeline, built with a test crawler."""

from __future__ import annotations

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler

from helppuff_crawl.items import Page
from helppuff_crawl.pipelines.extract import ExtractConfig, ExtractMarkdownPipeline
from helppuff_crawl.web.categories import DEFAULT_EXCLUDE
from tests.crawlers import component_crawler

_FAQ_JSONLD = """<html><head><title>Questions | Acme</title>
<script type="application/ld+json">{"@context": "https://schema.org", "@type": "FAQPage", "mainEntity": [
 {"@type": "Question", "name": "Do you work weekends?", "acceptedAnswer": {"@type": "Answer", "text": "Yes, Saturdays until noon."}},
 {"@type": "Question", "name": "Shown on the page?", "acceptedAnswer": {"@type": "Answer", "text": "Yes."}}]}
</script></head><body><main><h1>Questions</h1><p><strong>Shown on the page?</strong></p><p>Yes.</p></main></body></html>"""


def _page(html: str, url: str = "https://acme.example/questions", **kw: object) -> Page:
    return Page(url=url, site="acme", html=html, status="fetched", **kw)  # type: ignore[arg-type]


def test_faqpage_jsonld_pairs_the_page_does_not_show_become_bold_questions() -> None:
    crawler = component_crawler()
    pipeline = build_from_crawler(ExtractMarkdownPipeline, crawler)
    page = pipeline.process_item(_page(_FAQ_JSONLD))
    assert page.markdown == (
        "# Questions\n\n**Shown on the page?**\n\nYes.\n\n**Do you work weekends?**\n\nYes, Saturdays until noon."
    )
    assert ("Do you work weekends?", "Yes, Saturdays until noon.") in page.faq
    assert page.title == "Questions | Acme" and page.category == "faq"  # from the title: the URL said nothing
    assert crawler.stats.get_value("helppuff/extract/pages") == 1


def test_a_page_without_content_is_empty_not_learned() -> None:
    crawler = component_crawler()
    pipeline = build_from_crawler(ExtractMarkdownPipeline, crawler)
    page = pipeline.process_item(_page("<html><body><nav><a href='/'>Home</a></nav></body></html>"))
    assert (page.status, page.reason) == ("empty", "no main content")
    assert crawler.stats.get_value("helppuff/extract/empty") == 1


def test_pages_not_fetched_pass_through_untouched() -> None:
    pipeline = build_from_crawler(ExtractMarkdownPipeline, component_crawler())
    page = Page(url="https://acme.example/x", site="acme", status="gone", reason="HTTP 404")
    assert pipeline.process_item(page) is page and page.markdown == ""


_PRIVACY = """<html><head><title>Privacy Policy | Acme</title></head><body><main><h1>Privacy Policy</h1>
<p>We keep your details only to call you back about your job, and we never sell them.</p></main></body></html>"""


def test_a_page_whose_title_makes_it_legal_is_unticked_not_learned() -> None:
    # /information says nothing of the page; its title makes it a legal page, and legal pages start
    # unticked, so it is recorded unticked with the reason, like a /privacy page found in discovery.
    crawler = component_crawler()
    pipeline = build_from_crawler(ExtractMarkdownPipeline, crawler)
    page = pipeline.process_item(_page(_PRIVACY, url="https://acme.example/information"))
    assert page.category == "legal"
    assert (page.status, page.ticked, page.tick_reason, page.reason) == ("unticked", False, "legal page", "legal page")
    assert crawler.stats.get_value("helppuff/extract/unticked_by_title") == 1


def test_an_include_glob_still_forces_the_tick_of_a_page_its_title_makes_legal() -> None:
    pipeline = build_from_crawler(ExtractMarkdownPipeline, component_crawler(HELPPUFF_INCLUDE=["/information"]))
    page = pipeline.process_item(_page(_PRIVACY, url="https://acme.example/information"))
    assert (page.category, page.status, page.ticked) == ("legal", "fetched", True)


def test_an_exclude_glob_unticks_a_page_its_title_gives_a_category() -> None:
    contact = "<html><head><title>Contact Us</title></head><body><main><h1>Contact</h1><p>Call 03 9000 1234 " \
              "any time between eight and five on weekdays.</p></main></body></html>"
    pipeline = build_from_crawler(ExtractMarkdownPipeline, component_crawler(HELPPUFF_EXCLUDE=["/reach-us"]))
    page = pipeline.process_item(_page(contact, url="https://acme.example/reach-us"))
    assert (page.category, page.status, page.tick_reason) == ("contact", "unticked", "exclude glob '/reach-us'")


def test_config_and_switch() -> None:
    assert ExtractConfig.from_settings(component_crawler().settings) == ExtractConfig((), DEFAULT_EXCLUDE)
    assert ExtractConfig.from_settings(component_crawler(HELPPUFF_EXCLUDE="/a,/b").settings).exclude == ("/a", "/b")
    with pytest.raises(NotConfigured):
        build_from_crawler(ExtractMarkdownPipeline, component_crawler(HELPPUFF_EXTRACT_ENABLED=False))
