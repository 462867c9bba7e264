"""SiteSpider built the Scrapy way: its arguments become settings that the components read (they never
read the spider's attributes), and its callbacks are checked as Scrapy would check them. The arguments'
own rules are tests/test_spiders_arguments.py's."""

from __future__ import annotations

from helppuff_crawl.spiders.arguments import CrawlConfig
from helppuff_crawl.spiders.site import SiteSpider
from tests.crawlers import unstarted_crawler


def test_arguments_become_spider_priority_settings() -> None:
    crawler = unstarted_crawler(SiteSpider)
    spider = SiteSpider.from_crawler(crawler, url="acme.com.au", max_pages="20", render_js="never",
                                     include="**/menu", exclude="**/old/**,**/tag/**")
    settings = crawler.settings
    assert (settings["HELPPUFF_SITE"], settings["HELPPUFF_START_URL"]) == ("acme-com-au", "https://acme.com.au")
    assert settings.getint("HELPPUFF_MAX_PAGES") == 20 and settings["HELPPUFF_RENDER_JS"] == "never"
    assert settings.getlist("HELPPUFF_INCLUDE") == ["**/menu"]
    assert settings.getlist("HELPPUFF_EXCLUDE") == ["**/old/**", "**/tag/**"]
    assert settings.getpriority("HELPPUFF_SITE") == 30  # "spider": above the project, below -s
    assert settings["DOWNLOAD_HANDLERS"] == {}  # never render: no browser handler
    assert spider.config == CrawlConfig(max_pages=20, render_js="never", render_min_text=300, render_min_scripts=2,
                                        include=("**/menu",), exclude=("**/old/**", "**/tag/**"), follow_links=True,
                                        max_discovery_fetches=50, max_sitemaps=25, max_sitemap_urls=1000, sample_size=5,
                                        script_fetches=10, script_few_links=5)


def test_discovery_alone_records_nothing() -> None:
    crawler = unstarted_crawler(SiteSpider)
    SiteSpider.from_crawler(crawler, url="https://acme.com.au", discover_only="true")
    assert crawler.settings.getdict("ITEM_PIPELINES") == {}
    assert crawler.settings.getbool("HELPPUFF_RUN_ENABLED") is False


def test_no_callback_is_a_generator_returning_a_value() -> None:
    # The check Scrapy makes on a callback's first response, which the spider turns off (it costs a
    # crawl ~90 ms), made here on each of its callbacks and errbacks instead.
    from scrapy.utils.misc import is_generator_with_return_value

    crawler = unstarted_crawler(SiteSpider)
    spider = SiteSpider.from_crawler(crawler, url="https://acme.com.au")
    assert crawler.settings.getbool("WARN_ON_GENERATOR_RETURN_VALUE") is False
    page = spider._page_request("https://acme.com.au/a", "link", render=False)
    script = spider._script_links.request("https://acme.com.au/a.js", "https://acme.com.au")
    callbacks = [page.callback, page.errback, script.callback, script.errback]
    assert all(callable(callback) for callback in callbacks)
    assert [is_generator_with_return_value(callback) for callback in callbacks] == [False] * 4
