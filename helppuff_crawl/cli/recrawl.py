"""`helppuff recrawl --site S [URL ...]`: put a crawl job for S on the crawl queue.

    helppuff recrawl --site acme                          a full crawl
    helppuff recrawl --site acme https://acme.com.au/a    only these pages (at most 100)
    helppuff recrawl --site acme --failed                 the pages that failed for a passing reason, now
    helppuff recrawl --site acme --discover               find and list the pages (the owner's Set up), learn nothing
    helppuff recrawl --site acme --detect                 read the business details again from the pages kept

The same job the Worker's recrawl webhook asks for (kb/jobs.py): merged with the one waiting for the
site, if any; a `helppuff worker` runs it. Each URL must be on the site (its host, `www.` and the apex
being one); others are refused with the reason, and when none is left, nothing is asked (exit 2).
`helppuff crawl --retry-failed --site S` is `--failed`.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from helppuff_crawl.cli import UsageError
from helppuff_crawl.cli.crawl import parse_set_options, project_settings
from helppuff_crawl.kb.recrawl import ask_recrawl


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("recrawl", help="put a crawl job on the crawl queue")
    parser.add_argument("urls", nargs="*", metavar="URL", help="only these pages (default: the whole site)")
    parser.add_argument("--site", required=True)
    parser.add_argument("--failed", action="store_true", help="the pages that failed for a passing reason")
    parser.add_argument("--discover", action="store_true",
                        help="find and list the site's pages for the dashboard's Set up; nothing is learned")
    parser.add_argument("--detect", action="store_true",
                        help="read the business details again from the pages kept (helppuff knowledge facts detect)")
    parser.add_argument("--reason", default="", help="why (kept with the job; default: the command)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = project_settings(parse_set_options(args.set))
    if (args.discover or args.detect) and (args.urls or args.failed or (args.discover and args.detect)):
        raise UsageError("--discover and --detect crawl no page: give one of them, with no URL and no --failed")
    result = asyncio.run(ask_recrawl(settings, args.site, args.urls, args.failed, args.reason, args.discover,
                                     args.detect))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for refused in result.get("refused", []):
        print(f"refused {refused['url']}: {refused['reason']}")
    if not result["queued"]:
        print(result["why"])
        return 0
    pages = f", {len(result['urls'])} pages" if result["urls"] else ""
    sent = "sent to the queue" if result["sent"] else (
        f"not sent yet ({result['send_error']}); `helppuff worker` or `helppuff schedule` sends it"
        if result["send_error"] else "already in the queue")
    times = f", asked {result['asked']} times" if result["asked"] > 1 else ""
    print(f"job {result['request']} for {result['site']}: {result['kind']}{pages}, due {result['due']}{times}; {sent}")
    return 0
