"""`helppuff schedule`: put a crawl job on the crawl queue for each site that is due (kb/schedule.py).

    helppuff schedule [--dry-run] [--crawl] [--json]

Run it from cron (hourly is plenty); in production the Worker's cron trigger does the same. A due site
gets a full crawl job (kb/jobs.py: merged with one waiting, if any); a waiting job whose message was
never sent (the queue could not be reached) is sent now. `helppuff worker`s run the jobs. `--crawl`
then runs what is queued in this process's turn, as `helppuff worker --once` does, and prints each
job's line: one command for a machine with no worker running. Exit status 1 when a crawl failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import asdict
from typing import Any

from helppuff_crawl.cli.crawl import parse_set_options, project_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("schedule", help="queue a crawl job for each site whose schedule says it is due")
    parser.add_argument("--dry-run", action="store_true", help="say which sites are due, queue nothing")
    parser.add_argument("--crawl", action="store_true", help="then run the queued jobs (as `helppuff worker --once`)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.set_defaults(func=run)


async def _queue_due(settings: Any, dry_run: bool) -> dict[str, dict[str, Any]]:
    from helppuff_crawl.clock import utc_now
    from helppuff_crawl.kb import jobs
    from helppuff_crawl.kb.crawl_queue import open_queue
    from helppuff_crawl.kb.database import KnowledgeBase
    from helppuff_crawl.kb.schedule import plan

    results: dict[str, dict[str, Any]] = {}
    async with KnowledgeBase.from_settings(settings) as kb:
        verdicts = await plan(kb, utc_now(), settings.getfloat("HELPPUFF_RUN_STALE_AFTER"))
        queue = None if dry_run or not any(v.due for v in verdicts) else await open_queue(kb, settings)
        unsent = {job.site: job for job in await jobs.unsent(kb)} if queue is not None else {}
        for verdict in verdicts:
            entry = {key: value for key, value in asdict(verdict).items() if key != "config"}
            if verdict.due and queue is not None:
                if verdict.site in unsent:
                    asked = await jobs.send(kb, queue, unsent[verdict.site])
                else:
                    asked = await jobs.ask(kb, queue, verdict.site, "full", [], f"schedule: {verdict.why}")
                entry["job"] = {"request": asked.job.request, "kind": asked.job.kind, "sent": asked.sent,
                                "send_error": asked.send_error}
            results[verdict.site] = entry
    return results


def run(args: argparse.Namespace) -> int:
    settings = project_settings(parse_set_options(args.set))
    results = asyncio.run(_queue_due(settings, args.dry_run))
    status = 0
    if args.json:
        print(json.dumps(list(results.values()), indent=2))
    else:
        if not results:
            print("no site has been crawled yet: nothing to schedule")
        for site, entry in results.items():
            state = "due" if entry["due"] else "not due"
            job = entry.get("job")
            queued = ""
            if job is not None:
                queued = f"; queued: job {job['request']}" if job["sent"] else \
                    f"; job {job['request']} not sent ({job['send_error']})"
            print(f"{site}: {state}: {entry['why']}{queued}")
    if args.crawl and not args.dry_run:
        from helppuff_crawl.cli.worker import Worker

        status = asyncio.run(Worker(settings, args.set).serve(once=True))
    return status
