"""`scrapy crawl site -a url=...`, with the arguments checked before anything starts.

A bad argument is one clear line on stderr and exit status 2 (not a traceback), as in `helppuff crawl`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from helppuff_crawl.spiders.site import SiteArgs, SiteSpider

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCrawlCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args and args[0] == SiteSpider.name:
            try:
                SiteArgs.parse(**opts.spargs)
            except ValueError as exc:
                print(f"scrapy crawl site: {exc}", file=sys.stderr)
                self.exitcode = 2
                return
        super().run(args, opts)
