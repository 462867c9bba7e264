"""`helppuff config ...`: helppuff.json, the site's configuration file.

    helppuff config check FILE    every problem, naming its field (exit 1), or that it is fine
    helppuff config schema        the JSON Schema it is checked against (editors can use it)

`helppuff settings set --site S FILE` stores the file for the Worker, `helppuff crawl URL
--config FILE` crawls as its knowledge.website says; both check it the same way first.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from helppuff_crawl.config import ConfigError, read_config, schema


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("config", help="helppuff.json: check it, or print its schema")
    sub = parser.add_subparsers(dest="config_command", required=True)
    check = sub.add_parser("check", help="check a helppuff.json, naming every problem's field")
    check.add_argument("file")
    sub.add_parser("schema", help="print the JSON Schema helppuff.json is checked against")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
