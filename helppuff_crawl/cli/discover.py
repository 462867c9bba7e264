"""`helppuff discover URL [--json]`: the candidate pages, without crawling them.

Runs only the spider's discovery pass (home page, robots.txt, sitemaps: at most 50 fetches)
and prints each candidate with its category and tick decision. Nothing is written. A `helppuff worker`
runs it for a "discover" job (the owner's Set up) and records the JSON (kb/discoveries.py).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from helppuff_crawl.cli.crawl import parse_set_options, run_spider, spider_args_from


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("discover", help="list a site's candidate pages without crawling")
    parser.add_argument("url")
    parser.add_argument("--site")
    parser.add_argument("--include", action="append", default=[])
    parser.add_argument("--exclude", action="append", default=None)
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.add_argument("--config", metavar="HELPPUFF_JSON",
                        help="helppuff.json: its knowledge.website sets the arguments above that are not given")
    parser.set_defaults(func=run, scrapy_logging=True)


def run(args: argparse.Namespace) -> int:
    pages: list[Any] = []
    spider_args = {**spider_args_from(args), "discover_only": "1", "render_js": "never"}
    overrides = parse_set_options(args.set)
    overrides.setdefault("LOG_LEVEL", "INFO" if args.verbose else "WARNING")
    stats = run_spider(spider_args, overrides, pages.append)
    rows = [
        {"url": p.url, "category": p.category, "ticked": p.ticked, "reason": p.tick_reason or p.reason,
         "source": p.source, "status": p.status}
        for p in pages
    ]
    summary = {k.removeprefix("helppuff/discovery/"): v for k, v in stats.items() if k.startswith("helppuff/discovery/")}
    if args.json:
        print(json.dumps({"site": spider_args.get("site") or (pages[0].site if pages else ""), "url": args.url,
                          "pages": rows, "discovery": summary}, indent=2, sort_keys=True))
    else:
        for row in rows:
            mark = "x" if row["ticked"] else " "
            why = f"  ({row['reason']})" if row["reason"] else ""
            print(f"[{mark}] {row['category']:<12} {row['url']}{why}")
        print(f"{sum(r['ticked'] for r in rows)} of {len(rows)} ticked")
    return 0 if rows else 1
