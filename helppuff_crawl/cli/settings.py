"""`helppuff settings ...`: the site's answering settings (helppuff.json), as the Worker reads them.

    helppuff settings show --site S [--json]    the stored settings, or that the defaults apply
    helppuff settings set --site S FILE         store FILE (helppuff.json, or - for stdin)

The Worker reads `site_settings` on every request, so a change applies at once. Each field is
checked there too (a bad one keeps its default and is reported); here the file must be a JSON
object, and `allowedOrigins`, which decides whether the widget works on the owner's site at
all, must list origins ("https://acme.com.au": a scheme and a host, no path).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

from helppuff_crawl.cli import UsageError
from helppuff_crawl.cli.crawl import parse_set_options, project_settings

MAX_SETTINGS_BYTES = 64 * 1024
_ORIGIN = re.compile(r"^https?://[^/\s?#]+$", re.IGNORECASE)


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
    """The settings as a JSON object; ValueError naming what is wrong."""
    if len(text.encode("utf-8")) > MAX_SETTINGS_BYTES:
        raise ValueError(f"settings must be at most {MAX_SETTINGS_BYTES} bytes")
    try:
        root = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"settings are not JSON: {exc}") from exc
    if not isinstance(root, dict):
        raise ValueError("settings must be a JSON object, like {\"backend\": {...}}")
    backend = root.get("backend", root)
    if not isinstance(backend, dict):
        raise ValueError("\"backend\" must be an object")
    for where in (root, backend):
        origins = where.get("allowedOrigins")
        if origins is None:
            continue
        if not isinstance(origins, list) or not all(isinstance(o, str) for o in origins):
            raise ValueError("allowedOrigins must be a list of origins, like [\"https://acme.com.au\"]")
        bad = [o for o in origins if not _ORIGIN.match(o.strip())]
        if bad:
            raise ValueError(f"allowedOrigins: {bad[0]!r} is not an origin (a scheme and a host, no path), "
                             "like \"https://acme.com.au\"")
    return root


async def _show(settings: Any, site: str) -> dict[str, Any] | None:
    from helppuff_crawl.knowledge import BackendConfig, KnowledgeBase

    kb = KnowledgeBase.open(BackendConfig.from_settings(settings))
    try:
        return await kb.site_settings(site)
    finally:
        await kb.close()


async def _store(settings: Any, site: str, text: str) -> None:
    from helppuff_crawl.knowledge import BackendConfig, KnowledgeBase

    kb = KnowledgeBase.open(BackendConfig.from_settings(settings))
    try:
        await kb.set_site_settings(site, text)
    finally:
        await kb.close()


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
            root = check_settings(text)
        except ValueError as exc:
            raise UsageError(f"{args.file}: {exc}") from exc
        asyncio.run(_store(settings, args.site, json.dumps(root, ensure_ascii=False, sort_keys=True)))
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
