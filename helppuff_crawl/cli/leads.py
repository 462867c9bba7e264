"""`helppuff leads ...`: the visitors who asked to be called back, and following them up.

    helppuff leads list --site S [--all] [--json]   open leads, newest first (--all: handled too),
                                                    with the lead webhook's delivery
    helppuff leads done --site S ID [ID ...]        mark leads handled (an id or its first characters)
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from helppuff_crawl.cli import UsageError
from helppuff_crawl.cli.crawl import parse_set_options, project_settings

NEED_CHARS = 200


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("leads", help="callback requests from the chat, and following them up")
    sub = parser.add_subparsers(dest="leads_command", required=True)
    listing = sub.add_parser("list", help="open leads, newest first")
    listing.add_argument("--site", required=True)
    listing.add_argument("--all", action="store_true", help="handled leads too")
    listing.add_argument("--json", action="store_true")
    listing.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    done = sub.add_parser("done", help="mark leads handled")
    done.add_argument("ids", nargs="+", metavar="ID")
    done.add_argument("--site", required=True)
    done.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.set_defaults(func=run)


async def _with_kb(settings: Any, work: Any) -> Any:
    from helppuff_crawl.kb import leads
    from helppuff_crawl.kb.database import KnowledgeBase

    async with KnowledgeBase.from_settings(settings) as kb:
        return await work(leads, kb)


def lead_lines(lead: dict[str, Any]) -> list[str]:
    """One lead as a few lines of text for the operator."""
    who = "  ".join(part for part in (lead["name"], lead["phone"], lead["email"]) if part)
    when = lead["created_at"][:16].replace("T", " ")
    state = f"handled {lead['handled_at'][:16].replace('T', ' ')}" if lead["handled_at"] else "open"
    need = " ".join(lead["need"].split())
    lines = [f"{when}  {who}  [{lead['source']}, {state}]  id {lead['id'][:8]}",
             f"  needs: {need[:NEED_CHARS]}{'…' if len(need) > NEED_CHARS else ''}"]
    if lead["notified_at"]:
        lines.append(f"  webhook: delivered {lead['notified_at'][:16].replace('T', ' ')}")
    elif lead["notify_error"]:
        lines.append(f"  webhook: not delivered: {lead['notify_error']}")
    return lines


def run(args: argparse.Namespace) -> int:
    settings = project_settings(parse_set_options(args.set))
    if args.leads_command == "done":
        try:
            marked = asyncio.run(_with_kb(settings, lambda room, kb: room.mark_leads_handled(kb, args.site, args.ids)))
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        print(f"{args.site}: {len(marked)} lead{'s' if len(marked) != 1 else ''} marked handled")
        return 0
    leads = asyncio.run(_with_kb(settings, lambda room, kb: room.list_leads(kb, args.site, include_handled=args.all)))
    if args.json:
        print(json.dumps(leads, indent=2, ensure_ascii=False))
        return 0
    if not leads:
        print(f"{args.site}: no {'' if args.all else 'open '}leads")
        return 0
    print(f"{args.site}: {len(leads)} {'' if args.all else 'open '}lead{'s' if len(leads) != 1 else ''}")
    for lead in leads:
        print("\n".join(lead_lines(lead)))
    return 0
