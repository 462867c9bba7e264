"""RenderBudgetMiddleware, built with a test crawler: browser time is summed, and past the budget
pages that need rendering are refused with the reason."""

from __future__ import annotations

import pytest
from scrapy.http import HtmlResponse, Request
from scrapy.utils.misc import build_from_crawler

from helppuff_crawl.middlewares.render import RenderBudgetExceeded, RenderBudgetMiddleware, RenderConfig
from tests.crawlers import component_crawler


def test_browser_time_is_summed_and_the_budget_holds() -> None:
    crawler = component_crawler(HELPPUFF_RENDER_BUDGET=0.5)
    middleware = build_from_crawler(RenderBudgetMiddleware, crawler)
    plain = Request("https://acme.example/plain")
    assert middleware.process_request(plain) is None and "helppuff_render_started" not in plain.meta
    rendered = Request("https://acme.example/quote", meta={"playwright": True})
    middleware.process_request(rendered)
    rendered.meta["helppuff_render_started"] -= 0.6  # it took 0.6 s in the browser
    middleware.process_response(rendered, HtmlResponse(rendered.url, body=b"<html></html>"))
    assert crawler.stats.get_value("helppuff/render/rendered") == 1
    assert crawler.stats.get_value("helppuff/render/seconds") >= 0.6
    with pytest.raises(RenderBudgetExceeded, match=r"browser time budget used up \(0.5 s this run\)"):
        middleware.process_request(Request("https://acme.example/menu", meta={"playwright": True}))
    assert crawler.stats.get_value("helppuff/render/over_budget") == 1
    assert middleware.process_request(Request("https://acme.example/other")) is None  # plain fetches go on


def test_config() -> None:
    assert RenderConfig.from_settings(component_crawler().settings) == RenderConfig(600.0)
    with pytest.raises(ValueError, match="HELPPUFF_RENDER_BUDGET"):
        RenderConfig.from_settings(component_crawler(HELPPUFF_RENDER_BUDGET=-1).settings)
