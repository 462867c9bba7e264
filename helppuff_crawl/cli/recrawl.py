"""`helppuff recrawl --site S [URL ...]`: put a crawl job for S on the crawl queue.

    helppuff recrawl --site acme                          a full crawl
    helppuff recrawl --site acme https://acme.com.au/a    only these pages (at most 100)
    helppuff recrawl --site acme --failed                 the pages that failed for a passing reason, now

The same job the Worker's recrawl webhook asks for (kb/jobs.py): merged with the one waiting for the
site, if any; a `helppuff worker` runs it. Each URL must be on the site (its host, `www.` and the apex
being one); others are refused with the reason, and when none is left, nothing is asked (exit 2).
`helppuff crawl --retry-failed --site S` is `--failed`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from helppuff_crawl.cli import UsageError
from helppuff_crawl.cli.crawl import parse_set_options, project_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("recrawl", help="put a crawl job on the crawl queue")
    parser.add_argument("urls", nargs="*", metavar="URL", help="only these pages (default: the whole site)")
    parser.add_argument("--site", required=True)
    parser.add_argument("--failed", action="store_true", help="the pages that failed for a passing reason")
    parser.add_argument("--reason", default="", help="why (kept with the job; default: the command)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.set_defaults(func=run)


def on_site(urls: list[str], start_url: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The URLs that are pages of the site whose home page is `start_url`, normalised; and those refused, with why."""
    from helppuff_crawl.web.urls import normalize_url, same_site, site_host

    kept: list[str] = []
    refused: list[tuple[str, str]] = []
    for url in urls:
        normal = normalize_url(url)
        if not normal:
            refused.append((url, "not an http(s) URL"))
        elif not same_site(normal, start_url):
            refused.append((url, f"not on {site_host(start_url)}"))
        else:
            kept.append(normal)
    return list(dict.fromkeys(kept)), refused


async def ask_recrawl(settings: Any, site: str, urls: list[str], failed: bool, reason: str) -> dict[str, Any]:
    """Ask for the job; what was asked, as printed."""
    from helppuff_crawl.kb import jobs, runs
    from helppuff_crawl.kb.crawl_queue import open_queue
    from helppuff_crawl.kb.database import KnowledgeBase

    async with KnowledgeBase.from_settings(settings) as kb:
        last = await runs.last_run(kb, site)
        if last is None:
            raise UsageError(f"site {site} has never been crawled: crawl it first (`helppuff crawl URL --site {site}`)")
        kept, refused = on_site(urls, last["start_url"])
        if urls and not kept:
            raise UsageError("; ".join(f"{url}: {why}" for url, why in refused) + ": no page of the site to recrawl")
        kind = "urls" if kept else "full"
        if failed:
            pages, _ = await jobs.retry_pages(kb, site)
            if not pages:
                return {"site": site, "queued": False, "why": f"no page of {site} failed for a passing reason"}
            kind, kept = "retry", list(dict.fromkeys([*kept, *pages]))
        queue = await open_queue(kb, settings)
        asked = await jobs.ask(kb, queue, site, kind, kept, reason or ("helppuff recrawl --failed" if failed
                                                                         else "helppuff recrawl"))
    job = asked.job
    return {"site": site, "queued": True, "request": job.request, "kind": job.kind, "urls": list(job.urls),
            "due": job.not_before, "asked": asked.asked, "sent": asked.sent, "send_error": asked.send_error,
            "refused": [{"url": url, "reason": why} for url, why in refused]}


def run(args: argparse.Namespace) -> int:
    settings = project_settings(parse_set_options(args.set))
    result = asyncio.run(ask_recrawl(settings, args.site, args.urls, args.failed, args.reason))
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
