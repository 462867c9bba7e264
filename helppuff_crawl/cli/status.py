"""`helppuff status [--site S] [--json]`: the runs and page counts in the knowledge base, and each
site's crawl jobs: those waiting or running, and those given up (dead) with their reasons."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from helppuff_crawl.cli.crawl import parse_set_options, project_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("status", help="runs and pages per site")
    parser.add_argument("--site", help="only this site")
    parser.add_argument("--pages", action="store_true", help="list every page with its status")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


async def collect(settings: Any, site: str | None, with_pages: bool) -> dict[str, Any]:
    from helppuff_crawl.kb import jobs, pages, runs
    from helppuff_crawl.kb.database import KnowledgeBase

    kb = KnowledgeBase.from_settings(settings)
    try:
        sites = [site] if site else await pages.sites(kb)
        out: dict[str, Any] = {"sites": []}
        for name in sites:
            counts = {row["status"]: row["pages"] for row in await pages.status_counts(kb, name)}
            last = await runs.last_run(kb, name)
            entry: dict[str, Any] = {"site": name, "pages": counts, "total": sum(counts.values()),
                                     "last_run": _run_summary(last),
                                     "jobs": [{**job, "urls": json.loads(job["urls"] or "[]")}
                                              for job in await jobs.open_jobs(kb, name)],
                                     "dead_jobs": await jobs.dead_jobs(kb, name, limit=5)}
            if with_pages:
                entry["page_list"] = [
                    {k: row[k] for k in ("url", "category", "ticked", "status", "reason", "http_status", "title")}
                    for row in await pages.list_pages(kb, name)
                ]
            out["sites"].append(entry)
        return out
    finally:
        await kb.close()


def _run_summary(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    keys = ("id", "status", "reason", "start_url", "started_at", "finished_at",
            "pages_found", "pages_ticked", "pages_ok", "pages_failed")
    return {k: row[k] for k in keys}


def run(args: argparse.Namespace) -> int:
    settings = project_settings(parse_set_options(args.set))
    report = asyncio.run(collect(settings, args.site, args.pages))
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
        return 0
    if not report["sites"]:
        print("no sites in the knowledge base yet")
    for entry in report["sites"]:
        last = entry["last_run"] or {}
        print(f"{entry['site']}: {entry['total']} pages "
              f"({', '.join(f'{n} {s}' for s, n in sorted(entry['pages'].items()))})")
        if last:
            print(f"  last run {last['id']}: {last['status']} ({last['reason']}), "
                  f"{last['pages_ok']} learned of {last['pages_ticked']} ticked")
        for job in entry["jobs"]:
            pages_named = f", {len(job['urls'])} pages" if job["urls"] else ""
            if job["taken_at"] and job["beat_at"]:
                state = f"taken by {job['taken_by']} at {job['taken_at']} (alive at {job['beat_at']})"
            elif job["taken_at"]:
                state = f"waiting for its next delivery after {job['attempts']} tries"
            else:
                state = f"waiting, due {job['not_before']}" + ("" if job["queued_for"] else ", not sent yet")
            print(f"  job {job['id']} ({job['kind']}{pages_named}): {state}; {job['reason']}")
        for job in entry["dead_jobs"]:
            print(f"  dead job {job['id']} ({job['kind']}), given up {job['dead_at']} after {job['attempts']} "
                  f"tries: {job['dead_reason']}")
        for page in entry.get("page_list", []):
            print(f"  {page['status']:<9} {page['category']:<12} {page['url']}  {page['reason']}")
    return 0
