"""`scrapy crawl site -a url=...`, with the arguments checked before anything starts.

A bad argument is one clear line on stderr and exit status 2 (not a traceback), as in `helppuff crawl`.
A start URL on loopback allows loopback addresses, as `helppuff crawl` does, unless `-s` sets
HELPPUFF_ALLOW_PRIVATE_ADDRESSES.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.settings import SETTINGS_PRIORITIES

from helppuff_crawl.spiders.arguments import SiteArgs
from helppuff_crawl.spiders.site import SiteSpider
from helppuff_crawl.web.addresses import loopback_allowance

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCrawlCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args and args[0] == SiteSpider.name:
            try:
                site_args = SiteArgs.parse(**opts.spargs)
            except ValueError as exc:
                print(f"scrapy crawl site: {exc}", file=sys.stderr)
                self.exitcode = 2
                return
            assert self.crawler_process is not None
            settings = self.crawler_process.settings
            for name, value in loopback_allowance(site_args.url).items():
                if (settings.getpriority(name) or 0) < SETTINGS_PRIORITIES["cmdline"]:
                    settings.set(name, value, priority="cmdline")
        super().run(args, opts)
