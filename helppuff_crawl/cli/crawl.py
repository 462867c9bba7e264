"""`helppuff crawl URL`: the `site` spider run in this process, with a progress line.

Same spider, settings and pipelines as `scrapy crawl site -a url=URL`. Exit status: 0 when the
run is done, 1 when it failed (the reason is printed), 2 for bad input.

`--only URL` (repeatable, at most 100) makes it a targeted crawl of those pages (the spider argument
`only`, a JSON list). Its output is a full crawl's (first line "run <id>: <status> (<reason>)", last
line the counts), with, between them, one line per URL refused ("refused URL: why") and one when the
crawl was done in full instead ("done in full: why").

A start URL on loopback (127.0.0.0/8, ::1, localhost) is a site on this machine: its crawl may
connect to loopback addresses (HELPPUFF_ALLOW_PRIVATE_ADDRESSES=127.0.0.0/8,::1) unless the
setting is given (`-s`). Any other start URL is crawled on public addresses only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helppuff_crawl.cli import UsageError
from helppuff_crawl.web.addresses import loopback_allowance


def project_settings(overrides: dict[str, Any] | None = None) -> Any:
    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "helppuff_crawl.settings")
    from scrapy.utils.project import get_project_settings

    settings = get_project_settings()
    for name, value in (overrides or {}).items():
        settings.set(name, value, priority="cmdline")
    return settings


def parse_set_options(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"-s expects NAME=VALUE, got {pair!r}")
        out[name] = value
    return out


def run_spider(spider_args: dict[str, Any], settings_overrides: dict[str, Any],
               on_item: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Run the site spider to the end in this process; returns the final Scrapy stats."""
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    from helppuff_crawl.spiders.arguments import SiteArgs
    from helppuff_crawl.spiders.site import SiteSpider

    try:
        site_args = SiteArgs.parse(**spider_args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    settings = project_settings({**loopback_allowance(site_args.url), **settings_overrides})
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)

    def item_scraped(item: Any) -> None:
        if on_item is not None:
            on_item(item)

    # Signal receivers are held weakly: item_scraped stays referenced until the crawl ends.
    crawler.signals.connect(item_scraped, signal=signals.item_scraped)
    refused: list[BaseException] = []
    # A component refusing a setting fails the crawl's start: one line for the operator, no traceback.
    process.crawl(crawler, **spider_args).addErrback(lambda failure: refused.append(failure.value))
    process.start()
    if refused:
        if isinstance(refused[0], ValueError):
            raise UsageError(str(refused[0]))
        raise refused[0]
    return dict(crawler.stats.get_stats()) if crawler.stats else {}


class _Progress:
    """One line on stderr, rewritten as pages are recorded (only on a terminal)."""

    def __init__(self, stream: Any = sys.stderr) -> None:
        self.counts: Counter[str] = Counter()
        self.stream = stream
        self.live = stream.isatty()

    def __call__(self, page: Any) -> None:
        self.counts[getattr(page, "status", "?")] += 1
        if self.live:
            self.stream.write("\r" + self.line() + "\x1b[K")
            self.stream.flush()

    def line(self) -> str:
        total = sum(self.counts.values())
        parts = ", ".join(f"{n} {status}" for status, n in sorted(self.counts.items()))
        return f"pages: {total} ({parts})"

    def done(self) -> None:
        if self.live:
            self.stream.write("\n")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("crawl", help="crawl a site into the knowledge base")
    parser.add_argument("url", nargs="?", help="the site's home page, e.g. https://acme.com.au")
    parser.add_argument("--site", help="site name (default: from the host)")
    parser.add_argument("--max-pages", help="pages to fetch (default 300, at most 1000)")
    parser.add_argument("--render-js", choices=("auto", "always", "never"))
    parser.add_argument("--include", action="append", default=[], help="glob forcing a tick (repeatable)")
    parser.add_argument("--exclude", action="append", default=None, help="glob unticking pages (repeatable)")
    parser.add_argument("--only", action="append", default=[], metavar="URL",
                        help="a targeted crawl: fetch this page of the site and nothing else (repeatable, at most 100)")
    parser.add_argument("--retry-failed", action="store_true",
                        help="crawl nothing now: queue the --site's failed pages as a retry job (helppuff recrawl --failed)")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE", help="a Scrapy/HELPPUFF setting")
    parser.add_argument("--json", action="store_true", help="print the run as JSON")
    parser.add_argument("--config", metavar="HELPPUFF_JSON",
                        help="helppuff.json: its knowledge.website sets the arguments above that are not given")
    parser.set_defaults(func=run, scrapy_logging=True)


def spider_args_from(args: argparse.Namespace) -> dict[str, Any]:
    """The spider's arguments: those given on the command line, else helppuff.json's (--config)."""
    spider_args: dict[str, Any] = {"url": args.url}
    if getattr(args, "config", None):
        from helppuff_crawl.config.helppuff_json import (
            ConfigError,
            read_config,
            website_arguments,
        )

        try:
            configured = website_arguments(read_config(Path(args.config)))
        except ConfigError as exc:
            raise UsageError(str(exc)) from exc
        for name, value in configured.items():
            spider_args[name] = ",".join(value) if isinstance(value, list) else str(value)
    if args.site:
        spider_args["site"] = args.site
    if getattr(args, "max_pages", None):
        spider_args["max_pages"] = args.max_pages
    if getattr(args, "render_js", None):
        spider_args["render_js"] = args.render_js
    if args.include:
        spider_args["include"] = ",".join(args.include)
    if args.exclude is not None:
        spider_args["exclude"] = ",".join(args.exclude)
    if getattr(args, "only", None):
        spider_args["only"] = json.dumps(args.only)
    return spider_args


def run(args: argparse.Namespace) -> int:
    from helppuff_crawl.kb import runs
    from helppuff_crawl.kb.database import BackendConfig, KnowledgeBase

    if args.retry_failed:
        if not args.site or args.url:
            raise UsageError("--retry-failed takes --site SITE and no URL: it queues the site's failed pages")
        from helppuff_crawl.kb.recrawl import ask_recrawl

        asked = asyncio.run(ask_recrawl(project_settings(parse_set_options(args.set)), args.site, [], True,
                                        "helppuff crawl --retry-failed"))
        if not asked["queued"]:
            print(asked["why"])
        else:
            print(f"job {asked['request']} for {args.site}: retry, {len(asked['urls'])} pages, due {asked['due']}; "
                  f"{'sent to the queue' if asked['sent'] else 'already in the queue or not sent yet'}")
        return 0
    if not args.url:
        raise UsageError("the site's home page is required, e.g. helppuff crawl https://acme.com.au")
    overrides = parse_set_options(args.set)
    overrides.setdefault("LOG_LEVEL", "INFO" if args.verbose else "WARNING")

    spider_args = spider_args_from(args)

    async def _database() -> None:
        async with KnowledgeBase.from_settings(project_settings(overrides)) as kb:
            await kb.database_id()

    if BackendConfig.from_settings(project_settings(overrides)).remote:
        # Before anything is fetched: a database never deployed is one line (NotDeployed). The local
        # cloud finds or creates its own when the crawl opens it.
        asyncio.run(_database())
    progress = _Progress()
    stats = run_spider(spider_args, overrides, progress)
    progress.done()
    run_id = stats.get("helppuff/run_id")
    if not run_id:
        why = stats.get("finish_reason") or "see the log above"
        print(f"helppuff crawl: the crawl did not start a run: {why}", file=sys.stderr)
        return 1

    async def _read() -> dict[str, Any] | None:
        async with KnowledgeBase.from_settings(project_settings(overrides)) as kb:
            return await runs.get_run(kb, run_id)

    row = asyncio.run(_read()) or {}
    if args.json:
        row = {**row, "stats": json.loads(row.get("stats") or "{}")}
        print(json.dumps(row, indent=2, sort_keys=True))
    else:
        print(f"run {run_id}: {row.get('status')} ({row.get('reason')})")
        for refused in stats.get("helppuff/targeted/refused_urls") or []:
            print(f"refused {refused}")
        if why := stats.get("helppuff/targeted/full_instead"):
            print(f"done in full: {why}")
        print(progress.line())
        print(f"found {row.get('pages_found')}, ticked {row.get('pages_ticked')}, "
              f"learned {row.get('pages_ok')}, failed/blocked/gone {row.get('pages_failed')}")
    return 0 if row.get("status") == "done" else 1
