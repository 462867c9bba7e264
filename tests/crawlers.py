"""Crawlers for component tests, built the Scrapy way with the project's own settings.

Components read each HELPPUFF_* setting without a default of their own (helppuff_crawl/settings.py
declares them), so a test crawler starts from those declarations:

    crawler = component_crawler(HELPPUFF_SITE="acme", HELPPUFF_DATA_DIR=str(tmp_path))
    pipeline = build_from_crawler(StorePipeline, crawler)
"""

from __future__ import annotations

from typing import Any

from scrapy.utils.test import get_crawler


def project_defaults() -> dict[str, Any]:
    """Every HELPPUFF_* setting as helppuff_crawl/settings.py declares it (the local cloud's defaults),
    but for non-public addresses, allowed: every test site is on 127.0.0.1."""
    from helppuff_crawl import settings

    declared = {name: value for name, value in vars(settings).items() if name.startswith("HELPPUFF_")}
    # The local cloud, whatever this machine's environment says.
    declared.update(HELPPUFF_CLOUDFLARE_API_TOKEN="", HELPPUFF_CLOUDFLARE_ACCOUNT_ID="")
    declared.update(HELPPUFF_ALLOW_PRIVATE_ADDRESSES=True)
    return declared


def component_crawler(spidercls: Any = None, **settings: Any) -> Any:
    """A crawler with the project's HELPPUFF_* defaults, `settings` on top (no other project settings)."""
    return get_crawler(spidercls, settings_dict={**project_defaults(), **settings})


def unstarted_crawler(spidercls: Any, **settings: Any) -> Any:
    """A crawler whose settings are not applied yet, as its spider's from_crawler sees them."""
    from scrapy.crawler import CrawlerRunner

    return CrawlerRunner({**project_defaults(), **settings}).create_crawler(spidercls)
