"""`helppuff config ...`: helppuff.json, the site's configuration file.

    helppuff config check FILE    every problem, naming its field (exit 1), or that it is fine
    helppuff config schema        the JSON Schema it is checked against (editors can use it)
    helppuff config apply FILE --site S
                                  store its settings for the Worker, and make the site's listed
                                  documents what knowledge.files says (new and changed ones
                                  uploaded, ones taken out of the list removed)
    helppuff config pull --site S [FILE]
                                  the live settings (what the Worker reads) back into FILE
                                  (default helppuff.json), so the file and the Worker agree;
                                  prints the fields that changed; `-` prints them instead

`helppuff settings set --site S FILE` stores the file for the Worker, `helppuff crawl URL
--config FILE` crawls as its knowledge.website says; both check it the same way first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from helppuff_crawl.cli import UsageError
from helppuff_crawl.cli.crawl import parse_set_options, project_settings
from helppuff_crawl.config.helppuff_json import (
    ConfigError,
    listed_files,
    read_config,
    schema,
    stored_settings,
)


def file_changed_at(path: Path) -> datetime:
    """When the file at `path` was last changed, in UTC."""
    return datetime.fromtimestamp(path.stat().st_mtime, UTC)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("config", help="helppuff.json: check it, or print its schema")
    sub = parser.add_subparsers(dest="config_command", required=True)
    check = sub.add_parser("check", help="check a helppuff.json, naming every problem's field")
    check.add_argument("file")
    sub.add_parser("schema", help="print the JSON Schema helppuff.json is checked against")
    apply = sub.add_parser("apply", help="store the settings and upload knowledge.files (removing files taken out)")
    apply.add_argument("file")
    apply.add_argument("--site", required=True)
    apply.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    pull = sub.add_parser("pull", help="write the site's live settings (what the Worker reads) into a helppuff.json")
    pull.add_argument("file", nargs="?", default="helppuff.json", help="default helppuff.json; - for stdout")
    pull.add_argument("--site", required=True)
    pull.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.set_defaults(func=run)


async def apply_config(settings: Any, site: str, path: Path, config: dict[str, Any]) -> tuple[list[Any], list[str], str]:
    """Store `config` as the site's settings and apply its knowledge.files (paths inside the file's
    folder; ConfigError naming each entry that is not, before anything is stored); the uploads, the
    files removed, and the warning naming live fields saved since the file changed that it replaced."""
    from helppuff_crawl.cli.knowledge import open_knowledge
    from helppuff_crawl.kb.files import apply_listed_files
    from helppuff_crawl.kb.site_settings import replace_site_settings, replaced_warning

    files = listed_files(path, config)
    kb, writer, embedder = open_knowledge(settings)
    try:
        text = json.dumps(stored_settings(path, config), ensure_ascii=False, sort_keys=True)
        replaced = await replace_site_settings(kb, site, text, file_changed_at(path))
        uploads, removed = await apply_listed_files(kb, writer, embedder.embed, site, files)
        await writer.wait_for_writes()  # the files searchable by meaning too once the command returns
        return uploads, removed, replaced_warning(site, str(path), replaced)
    finally:
        await kb.close()


async def _live_settings(settings: Any, site: str) -> dict[str, Any] | None:
    from helppuff_crawl.kb.database import KnowledgeBase
    from helppuff_crawl.kb.site_settings import get_site_settings

    async with KnowledgeBase.from_settings(settings) as kb:
        row = await get_site_settings(kb, site)
    if row is None:
        return None
    try:
        live = json.loads(row["settings"])
    except ValueError as exc:
        raise UsageError(f"the stored settings of {site} are not JSON ({exc}): store a helppuff.json again") from exc
    return live if isinstance(live, dict) else None


def _pull(args: argparse.Namespace) -> int:
    live = asyncio.run(_live_settings(project_settings(parse_set_options(args.set)), args.site))
    if live is None:
        raise UsageError(f"{args.site} has no stored settings: `helppuff settings set FILE --site {args.site}` stores them")
    text = json.dumps(live, indent=2, ensure_ascii=False) + "\n"
    if args.file == "-":
        print(text, end="")
        return 0
    path = Path(args.file)
    before: Any = {}
    if path.exists():
        try:
            before = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            before = None  # not JSON: replaced as a whole
    from helppuff_crawl.kb.site_settings import changed_fields

    fields = changed_fields(before, live) if isinstance(before, dict) else ["(the whole file: it was not JSON)"]
    if not fields:
        print(f"{path}: already the live settings of {args.site}")
        return 0
    scratch = path.with_name(f".{path.name}.pull.tmp")
    scratch.write_text(text, encoding="utf-8")
    scratch.replace(path)  # whole, or not at all
    print(f"{path}: the live settings of {args.site}; changed: {', '.join(fields)}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.config_command == "apply":
        return _apply(args)
    if args.config_command == "pull":
        return _pull(args)
    if args.config_command == "schema":
        print(json.dumps(schema(), indent=2, ensure_ascii=False))
        return 0
    try:
        read_config(Path(args.file))
    except ConfigError as exc:
        print(f"{exc.source}: {len(exc.problems)} problem{'s' if len(exc.problems) != 1 else ''}")
        for problem in exc.problems:
            print(f"  {problem}")
        return 1
    print(f"{args.file}: fine")
    return 0


def _apply(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        config = read_config(path)
    except ConfigError as exc:
        raise UsageError(str(exc)) from exc
    uploads, removed, warning = asyncio.run(apply_config(project_settings(parse_set_options(args.set)), args.site, path, config))
    if warning:  # live fields saved since the file changed (the dashboard's), with their values
        print(warning, file=sys.stderr)
    print(f"{args.site}: settings stored; the Worker uses them from its next request")
    for upload in uploads:
        passages = f"{upload.chunks} passage{'s' if upload.chunks != 1 else ''}"
        detail = {"ok": f"learned, {passages}", "unchanged": "unchanged"}.get(
            upload.status, f"not learned: {upload.reason}")
        print(f"  {upload.name}: {detail}")
    for name in removed:
        print(f"  {name}: removed (no longer in knowledge.files)")
    return 1 if any(upload.status == "failed" for upload in uploads) else 0
