"""Crawl speed and memory: our discovery + fetch beside a plain Scrapy spider, same run.

    .venv/bin/python bench/crawl.py [--pages 1000] [--repeat 3]

A generated 1,000-page site is served on 127.0.0.1 (from this process, in threads). Each crawl
runs in its own child process (so its peak RSS is its own), alternating:
  ours   `site` spider: discovery (robots.txt, home, sitemap) and fetching, rendering off, with
         our middlewares; item pipelines off (this measures discovery + fetch, not extraction);
  full   the same with the project's pipelines (extract, hash, store to a local SQLite) — shown
         for information;
  plain  a plain scrapy.Spider fetching the sitemap's URLs with the same politeness settings
         (concurrency, AutoThrottle, robots.txt).
Prints pages/s and peak RSS per run, medians, and ours/plain. Target: ratio >= 0.8, RSS < 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sitegen import GeneratedSite  # noqa: E402

_CHILD = r'''
import json, resource, sys, time
from scrapy.crawler import CrawlerProcess
from scrapy.settings import Settings
import scrapy

kind, url, pages, data_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
settings = Settings()
settings.setmodule("helppuff_crawl.settings", priority="project")
settings.update({"LOG_LEVEL": "ERROR", "HELPPUFF_DATA_DIR": data_dir, "HELPPUFF_RENDER_JS": "never",
                 "DOWNLOAD_HANDLERS": {}, "CLOUDFLARE_API_TOKEN": ""}, priority="cmdline")
if kind == "ours":
    settings.set("ITEM_PIPELINES", {}, priority="cmdline")
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
'''


def run_child(kind: str, url: str, pages: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as data_dir:
        out = subprocess.run([sys.executable, "-c", _CHILD, kind, url, str(pages), data_dir],
                             cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    site = GeneratedSite(args.pages)
    results: dict[str, list[dict[str, float]]] = {"ours": [], "full": [], "plain": []}
    try:
        for round_ in range(args.repeat):
            for kind in ("plain", "ours", "full") if round_ % 2 == 0 else ("full", "ours", "plain"):
                r = run_child(kind, site.url, args.pages)
                r["rate"] = r["pages"] / r["seconds"]
                results[kind].append(r)
                print(f"round {round_ + 1} {kind:<5} {r['pages']:>5} pages in {r['seconds']:6.2f} s "
                      f"= {r['rate']:7.1f} pages/s, peak RSS {r['rss_mb']:6.1f} MB", flush=True)
    finally:
        site.close()
    med = {k: statistics.median(r["rate"] for r in v) for k, v in results.items()}
    rss = {k: max(r["rss_mb"] for r in v) for k, v in results.items()}
    print()
    print(f"{'crawler':<8}{'median pages/s':>16}{'max peak RSS MB':>18}")
    for kind in ("plain", "ours", "full"):
        print(f"{kind:<8}{med[kind]:>16.1f}{rss[kind]:>18.1f}")
    print(f"\nours/plain rate ratio: {med['ours'] / med['plain']:.2f} (target >= 0.8); "
          f"full/plain: {med['full'] / med['plain']:.2f}; ours peak RSS {rss['ours']:.0f} MB (target < 300)")


if __name__ == "__main__":
    main()
