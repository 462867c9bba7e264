"""`helppuff schedule`: crawl the sites that are due (helppuff_crawl/kb/schedule.py), one after another.

    helppuff schedule [--dry-run] [--json]

Run it from cron (hourly is plenty) or in a loop in the crawl container. A site's pending recrawl
request (POST /v1/sites/:site/recrawl) is marked handled once its crawl is done. Each due site is crawled
by `helppuff crawl START_URL --site S` in a process of its own, with its stored helppuff.json as
--config, so one site's failure never stops the next. Exit status 1 when a crawl failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from helppuff_crawl.cli.crawl import parse_set_options, project_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("schedule", help="crawl the sites whose schedule says they are due")
    parser.add_argument("--dry-run", action="store_true", help="say which sites are due, crawl nothing")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.set_defaults(func=run)


async def _plan(settings: Any) -> list[Any]:
    from helppuff_crawl.clock import utc_now
    from helppuff_crawl.kb.database import KnowledgeBase
    from helppuff_crawl.kb.schedule import plan

    async with KnowledgeBase.from_settings(settings) as kb:
        return await plan(kb, utc_now(), settings.getfloat("HELPPUFF_RUN_STALE_AFTER"))


async def _handled(settings: Any, site: str, request_id: str) -> None:
    from helppuff_crawl.clock import utc_now
    from helppuff_crawl.kb.database import KnowledgeBase
    from helppuff_crawl.kb.schedule import mark_request_handled

    async with KnowledgeBase.from_settings(settings) as kb:
        await mark_request_handled(kb, site, request_id, utc_now())


def _crawl(verdict: Any, set_options: list[str]) -> tuple[int, str]:
    """Crawl one due site in a process of its own; (exit status, its last line of output)."""
    helppuff = str(Path(sys.executable).parent / "helppuff")
    command = [helppuff, "crawl", verdict.start_url, "--site", verdict.site]
    for option in set_options:
        command += ["-s", option]
    with tempfile.TemporaryDirectory(prefix="helppuff-schedule-") as folder:
        if verdict.config is not None:
            config = Path(folder) / "helppuff.json"
            config.write_text(json.dumps(verdict.config), encoding="utf-8")
            command += ["--config", str(config)]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = (result.stdout.strip() or result.stderr.strip() or "no output").splitlines()
    # "run <id>: done (finished)" ... "found 32, ticked 28, learned 19, ..."; else the error.
    return result.returncode, f"{lines[0]}; {lines[-1]}" if result.returncode == 0 else lines[-1]


def run(args: argparse.Namespace) -> int:
    settings = project_settings(parse_set_options(args.set))
    verdicts = asyncio.run(_plan(settings))
    results: dict[str, dict[str, Any]] = {}
    failed = False
    for verdict in verdicts:
        entry = {key: value for key, value in asdict(verdict).items() if key != "config"}
        if verdict.due and not args.dry_run:
            status, line = _crawl(verdict, args.set)
            entry["crawl"] = {"exit_status": status, "result": line}
            failed = failed or status != 0
            if status == 0 and verdict.request is not None:
                asyncio.run(_handled(settings, verdict.site, verdict.request))
        results[verdict.site] = entry
    if args.json:
        print(json.dumps(list(results.values()), indent=2))
    else:
        if not results:
            print("no site has been crawled yet: nothing to schedule")
        for site, entry in results.items():
            state = "due" if entry["due"] else "not due"
            crawl = f"; crawled: {entry['crawl']['result']}" if "crawl" in entry else ""
            print(f"{site}: {state}: {entry['why']}{crawl}")
    return 1 if failed else 0
