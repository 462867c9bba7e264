"""`helppuff status [--site S] [--json]`: the runs and page counts in the knowledge base, and each
site's crawl jobs: those waiting or running, and those given up (dead) with their reasons.

For a site whose helppuff.json has backend.type "retell" (stored by `helppuff settings set`), the
Retell custom function to add in Retell's dashboard: `--json` prints its definition (`retell.function`:
name, description, url, method, parameters), the text a line saying where it is. Its URL is the
Worker's: the one `helppuff deploy` recorded in the state file for this account, else the one
`helppuff serve` recorded locally, else the placeholder `<worker url>`, said as such.
"""

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
    from helppuff_crawl.kb.site_settings import get_site_settings

    kb = KnowledgeBase.from_settings(settings)
    worker = _worker_url(settings)
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
            stored = await get_site_settings(kb, name)
            if _backend_type(stored["settings"] if stored else None) == "retell":
                entry["retell"] = retell_entry(name, worker)
            if with_pages:
                entry["page_list"] = [
                    {k: row[k] for k in ("url", "category", "ticked", "status", "reason", "http_status", "title")}
                    for row in await pages.list_pages(kb, name)
                ]
            out["sites"].append(entry)
        return out
    finally:
        await kb.close()


#: The Retell custom function's name, and the URL said when no Worker URL is known.
RETELL_FUNCTION = "search_knowledge_base"
WORKER_URL_PLACEHOLDER = "<worker url>"


def retell_function(site: str, worker_url: str | None) -> dict[str, Any]:
    """The custom function to paste into Retell for `site`: POST <worker>/v1/sites/<site>/retell/kb
    with one parameter, query (worker/src/retell.ts answers it)."""
    base = (worker_url or WORKER_URL_PLACEHOLDER).rstrip("/")
    return {
        "name": RETELL_FUNCTION,
        "description": ("Search the business's website knowledge base (its pages, documents and own answers) "
                        "for what the caller asks about the business: services, prices, areas, hours, bookings, "
                        "policies. Returns the matching passages as text, each with its title and source; "
                        "answer only from them, and say so when nothing was found."),
        "url": f"{base}/v1/sites/{site}/retell/kb",
        "method": "POST",
        "parameters": {
            "type": "object",
            "properties": {"query": {
                "type": "string",
                "description": ("The caller's question as a short search on its own, e.g. "
                                "\"how much is a call-out on weekends\"."),
            }},
            "required": ["query"],
        },
    }


def retell_entry(site: str, worker: tuple[str | None, str]) -> dict[str, Any]:
    """The Retell part of a site's status: the function, the Worker URL it uses and where that came from."""
    url, source = worker
    return {"function": retell_function(site, url), "worker_url": url, "worker_url_from": source}


def _worker_url(settings: Any) -> tuple[str | None, str]:
    """The Worker's URL and where it is from: the state file's worker entry for this backend's account
    (`helppuff deploy`, or `helppuff serve` on the local cloud), else (None, why)."""
    from helppuff_crawl.kb.database import BackendConfig

    backend = BackendConfig.from_settings(settings)
    worker = backend.state.account(backend.account).get("worker")
    url = worker.get("url") if isinstance(worker, dict) else None
    if isinstance(url, str) and url:
        return url, str(worker.get("by") or "helppuff deploy")
    return None, "none yet: `helppuff deploy` (or `helppuff serve` here) records it"


def _backend_type(text: str | None) -> str:
    """backend.type of a stored helppuff.json (the Worker reads a bare backend object too)."""
    try:
        root = json.loads(text or "{}")
    except ValueError:
        return "workers-ai"
    backend = root.get("backend", root) if isinstance(root, dict) else {}
    kind = backend.get("type") if isinstance(backend, dict) else None
    return kind if isinstance(kind, str) else "workers-ai"


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
        if "retell" in entry:
            retell = entry["retell"]
            where = "" if retell["worker_url"] else f" ({WORKER_URL_PLACEHOLDER} is a placeholder: {retell['worker_url_from']})"
            print(f"  Retell: custom function {retell['function']['name']} at {retell['function']['url']}{where}; "
                  "`helppuff status --json` prints its definition")
        for page in entry.get("page_list", []):
            print(f"  {page['status']:<9} {page['category']:<12} {page['url']}  {page['reason']}")
    return 0
