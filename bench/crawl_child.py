"""One crawl of bench/crawl.py, in its own process: `crawl_child.py KIND URL PAGES DATA_DIR`.

Prints one JSON line: pages fetched, seconds, peak RSS.
"""

import json, resource, sys, time
from scrapy.crawler import CrawlerProcess
from scrapy.settings import Settings
import scrapy

kind, url, pages, data_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
settings = Settings()
settings.setmodule("helppuff_crawl.settings", priority="project")
settings.update({"LOG_LEVEL": "ERROR", "HELPPUFF_DATA_DIR": data_dir, "HELPPUFF_RENDER_JS": "never",
                 "DOWNLOAD_HANDLERS": {}, "CLOUDFLARE_API_TOKEN": ""}, priority="cmdline")
# The generated site is on loopback: allowed as `helppuff crawl` allows it.
from helppuff_crawl.web.addresses import loopback_allowance
settings.update(loopback_allowance(url), priority="cmdline")
if kind == "ours":
    # Discovery and fetching only: no pipelines, and no run row.
    settings.set("ITEM_PIPELINES", {}, priority="cmdline")
    settings.set("HELPPUFF_RUN_ENABLED", False, priority="cmdline")
count = {"n": 0}

class PlainSpider(scrapy.Spider):
    name = "plain"
    custom_settings = {"DOWNLOADER_MIDDLEWARES": {}, "ITEM_PIPELINES": {}}
    async def start(self):
        yield scrapy.Request(url + "/sitemap.xml", callback=self.parse_sitemap)
    def parse_sitemap(self, response):
        response.selector.remove_namespaces()
        for loc in response.xpath("//loc/text()").getall()[:pages]:
            yield scrapy.Request(loc, callback=self.parse_page)
    def parse_page(self, response):
        count["n"] += 1
        yield {"url": response.url, "title": response.css("title::text").get()}

process = CrawlerProcess(settings)
if kind == "plain":
    crawler = process.create_crawler(PlainSpider)
    process.crawl(crawler)
else:
    from helppuff_crawl.spiders.site import SiteSpider
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, url=url, site="bench", max_pages=str(pages))
started = time.perf_counter()
process.start()
elapsed = time.perf_counter() - started
stats = crawler.stats.get_stats()
fetched = count["n"] if kind == "plain" else stats.get("helppuff/pages/fetched", 0)
print(json.dumps({"kind": kind, "pages": fetched, "seconds": elapsed,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
