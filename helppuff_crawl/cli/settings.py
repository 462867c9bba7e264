"""`helppuff settings ...`: the site's answering settings (helppuff.json), as the Worker reads them.

    helppuff settings show --site S [--json]    the stored settings, or that the defaults apply
    helppuff settings set --site S FILE         store FILE (helppuff.json, or - for stdin)

The Worker reads `site_settings` on every request, so a change applies at once. Fields saved after the
file was last changed (from the dashboard's Settings) that storing it replaces are named, with their
values, on stderr (kb/site_settings.py replace_site_settings). The file is
checked first against helppuff.json's schema (helppuff_crawl/config/helppuff_json.py), every problem named by
its field, so a mistake such as an `allowedOrigins` entry with a path, which would leave the
widget refused on the owner's site, is caught before it is stored.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from helppuff_crawl.cli import UsageError
from helppuff_crawl.cli.crawl import parse_set_options, project_settings
from helppuff_crawl.cli.config import file_changed_at
from helppuff_crawl.config.helppuff_json import (
    ConfigError,
    parse_config,
    stored_settings,
)

MAX_SETTINGS_BYTES = 64 * 1024


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("settings", help="the site's answering settings (helppuff.json)")
    sub = parser.add_subparsers(dest="settings_command", required=True)
    show = sub.add_parser("show", help="print the stored settings")
    show.add_argument("--site", required=True)
    show.add_argument("--json", action="store_true")
    show.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    setter = sub.add_parser("set", help="store a helppuff.json file (- for stdin)")
    setter.add_argument("file")
    setter.add_argument("--site", required=True)
    setter.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.set_defaults(func=run)


def check_settings(text: str) -> dict[str, Any]:
    """The settings as a checked helppuff.json object; ValueError naming every problem's field."""
    if len(text.encode("utf-8")) > MAX_SETTINGS_BYTES:
        raise ValueError(f"settings must be at most {MAX_SETTINGS_BYTES} bytes")
    try:
        return parse_config(text, "settings")
    except ConfigError as exc:
        raise ValueError("; ".join(exc.problems)) from exc


async def _show(settings: Any, site: str) -> dict[str, Any] | None:
    from helppuff_crawl.kb import site_settings
    from helppuff_crawl.kb.database import KnowledgeBase

    async with KnowledgeBase.from_settings(settings) as kb:
        return await site_settings.get_site_settings(kb, site)


async def _store(settings: Any, site: str, text: str, edited_at: datetime | None) -> list[tuple[str, Any]]:
    from helppuff_crawl.kb import site_settings
    from helppuff_crawl.kb.database import KnowledgeBase

    async with KnowledgeBase.from_settings(settings) as kb:
        return await site_settings.replace_site_settings(kb, site, text, edited_at)


def run(args: argparse.Namespace) -> int:
    settings = project_settings(parse_set_options(args.set))
    if args.settings_command == "set":
        if args.file == "-":
            text = sys.stdin.read()
        else:
            path = Path(args.file)
            if not path.is_file():
                raise UsageError(f"{args.file}: no such file")
            text = path.read_text(encoding="utf-8")
        try:
            # A module retriever's path is relative to the file's folder (stdin: this folder).
            root = stored_settings(Path("helppuff.json" if args.file == "-" else args.file), check_settings(text))
        except ValueError as exc:
            raise UsageError(f"{args.file}: {exc}") from exc
        edited_at = None if args.file == "-" else file_changed_at(Path(args.file))
        replaced = asyncio.run(_store(settings, args.site, json.dumps(root, ensure_ascii=False, sort_keys=True), edited_at))
        if replaced:
            from helppuff_crawl.kb.site_settings import replaced_warning

            print(replaced_warning(args.site, None if args.file == "-" else args.file, replaced), file=sys.stderr)
        print(f"{args.site}: settings stored; the Worker uses them from its next request")
        return 0
    row = asyncio.run(_show(settings, args.site))
    if args.json:
        print(json.dumps(None if row is None else {"settings": json.loads(row["settings"] or "{}"),
                                                    "updated_at": row["updated_at"]}, indent=2, ensure_ascii=False))
    elif row is None:
        print(f"{args.site}: no settings stored; the Worker uses its defaults")
    else:
        print(f"{args.site}: settings stored {row['updated_at']}")
        print(json.dumps(json.loads(row["settings"] or "{}"), indent=2, ensure_ascii=False, sort_keys=True))
    return 0
