"""`helppuff chunk FILE.md --url URL --title TITLE --category CAT [--site SITE] [--json] [-s NAME=VALUE]`.

Chunks a Markdown file (or stdin, with FILE "-") exactly as a crawl would (text/chunking, with the
chunk sizes of HELPPUFF_CHUNK_MIN_TOKENS and HELPPUFF_CHUNK_MAX_TOKENS) and
prints the chunks: a readable listing, or with --json one JSON object per chunk per line (id,
ordinal, heading_path, anchor, tokens, is_faq, oversized, prefix, text). --site defaults to the
URL's host without "www.", lower case, with every run of other characters than [a-z0-9] as "-".
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

from helppuff_crawl.cli import UsageError
from helppuff_crawl.cli.crawl import parse_set_options, project_settings
from helppuff_crawl.schema.contract import CATEGORIES
from helppuff_crawl.text.chunking import PATH_SEPARATOR, Chunk, ChunkMeta, ChunkSizes, chunk_page

logger = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "chunk",
        help="split a Markdown page into chunks",
        description="Split a Markdown page into the chunks a crawl would embed and store.",
    )
    parser.add_argument("file", metavar="FILE", help='Markdown file, or "-" for stdin')
    parser.add_argument("--url", required=True, help="the page's URL")
    parser.add_argument("--title", required=True, help="the page's title")
    parser.add_argument("--category", required=True, help=f"one of: {' '.join(CATEGORIES)}")
    parser.add_argument("--site", default="", help="site name (default: from the URL's host)")
    parser.add_argument("--json", action="store_true", help="one JSON object per chunk per line")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting, e.g. HELPPUFF_CHUNK_MAX_TOKENS=600")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.category not in CATEGORIES:
        raise UsageError(f"--category must be one of: {' '.join(CATEGORIES)} (got {args.category!r})")
    markdown = _read(args.file)
    site = args.site or _site_from_url(args.url)
    if not site:
        raise UsageError(f"cannot name the site from --url {args.url!r}: give --site")
    meta = ChunkMeta(site=site, url=args.url, title=args.title, category=args.category)
    chunks = chunk_page(markdown, meta, ChunkSizes.from_settings(project_settings(parse_set_options(args.set))))
    logger.info("Chunked %s into %d chunks", args.file, len(chunks))
    if args.json:
        for chunk in chunks:
            print(json.dumps(_as_json(chunk), ensure_ascii=False))
    else:
        _print_listing(chunks)
    return 0


def _read(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    path = Path(name)
    if not path.is_file():
        raise UsageError(f"no such file: {name}")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{name} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _site_from_url(url: str) -> str:
    host = (urlsplit(url).hostname or "").removeprefix("www.")
    return re.sub(r"[^a-z0-9]+", "-", host.lower()).strip("-")


def _as_json(chunk: Chunk) -> dict[str, object]:
    return {
        "id": chunk.id,
        "ordinal": chunk.ordinal,
        "heading_path": list(chunk.heading_path),
        "anchor": chunk.anchor,
        "tokens": chunk.tokens,
        "is_faq": chunk.is_faq,
        "oversized": chunk.oversized,
        "prefix": chunk.prefix,
        "text": chunk.text,
    }


def _print_listing(chunks: list[Chunk]) -> None:
    for n, chunk in enumerate(chunks, 1):
        flags = [f"{chunk.tokens} tokens"]
        if chunk.anchor:
            flags.append(f"#{chunk.anchor}")
        if chunk.is_faq:
            flags.append("faq")
        if chunk.oversized:
            flags.append("oversized")
        print(f"=== chunk {n}/{len(chunks)} · {PATH_SEPARATOR.join(chunk.heading_path)} [{chunk.ordinal}]")
        print(f"id {chunk.id} · {', '.join(flags)}")
        print()
        print(chunk.text)
        print()
    total = sum(chunk.tokens for chunk in chunks)
    print(f"{len(chunks)} chunk{'' if len(chunks) == 1 else 's'}, {total} tokens")
