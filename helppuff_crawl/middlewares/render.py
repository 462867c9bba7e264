"""A per-run browser-time budget for JS rendering.

Requests with meta `playwright=True` are rendered in headless Chromium (scrapy-playwright).
Their time is summed; once HELPPUFF_RENDER_BUDGET seconds are used, further render requests are
dropped with `RenderBudgetExceeded`, which the spider records as the page's reason.

Enable: DOWNLOADER_MIDDLEWARES {"helppuff_crawl.middlewares.render.RenderBudgetMiddleware": 550}.
Settings: HELPPUFF_RENDER_BUDGET (600.0). Stats: helppuff/render/{rendered,seconds,over_budget}.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Self

from scrapy.exceptions import IgnoreRequest

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


class RenderBudgetExceeded(IgnoreRequest):
    """The run's browser time is used up."""


@dataclass(frozen=True)
class RenderConfig:
    budget: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RenderConfig:
        budget = settings.getfloat("HELPPUFF_RENDER_BUDGET")
        if budget < 0:
            raise ValueError(f"HELPPUFF_RENDER_BUDGET must be >= 0 seconds, got {budget}")
        return cls(budget)


class RenderBudgetMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.config = RenderConfig.from_settings(crawler.settings)
        self.crawler = crawler
        self.stats = crawler.stats
        self.used = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        if not request.meta.get("playwright"):
            return
        if self.used >= self.config.budget:
            self.stats.inc_value("helppuff/render/over_budget")
            raise RenderBudgetExceeded(
                f"browser time budget used up ({self.config.budget:g} s this run): not rendered"
            )
        request.meta["helppuff_render_started"] = time.monotonic()

    def process_response(self, request: Request, response: Response) -> Response:
        self._account(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        self._account(request)

    def _account(self, request: Request) -> None:
        started = request.meta.pop("helppuff_render_started", None)
        if started is None:
            return
        spent = time.monotonic() - started
        self.used += spent
        self.stats.inc_value("helppuff/render/rendered")
        self.stats.set_value("helppuff/render/seconds", round(self.used, 3))
