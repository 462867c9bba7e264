"""`helppuff`: the command line.

Each subcommand lives in its own module with `register(subparsers)`, which adds its parser and
sets `func` to a `run(args) -> int`. Bad input is one clear line on stderr and exit status 2; a
Cloudflare API call that failed (after its retries) is one line with Cloudflare's code and message,
and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

_COMMANDS = ("crawl", "discover", "status", "extract", "chunk", "knowledge", "cloudflare", "deploy", "serve", "search", "ask",
             "settings", "leads", "config", "schedule", "recrawl", "worker", "rag", "secret", "scaffold")


class UsageError(Exception):
    """Bad input from the command line: printed as one line, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="helppuff", description="HelpPuff Crawl")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in _COMMANDS:
        try:
            module = importlib.import_module(f"helppuff_crawl.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"helppuff_crawl.cli.{name}":
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "scrapy_logging", False):
        # Commands that run Scrapy let it configure logging from LOG_LEVEL (one handler, no duplicates).
        logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    from helppuff_crawl.cloudflare.client import CloudflareError

    try:
        return int(args.func(args) or 0)
    except (UsageError, ValueError) as exc:
        print(f"helppuff {args.command}: {exc}", file=sys.stderr)
        return 2
    except CloudflareError as exc:
        print(f"helppuff {args.command}: {one_line(str(exc))}", file=sys.stderr)
        return 1


def one_line(text: str) -> str:
    """`text` on one line: its lines joined with " / "."""
    return " / ".join(line.strip() for line in text.splitlines() if line.strip())


if __name__ == "__main__":
    sys.exit(main())
