"""`helppuff cloudflare setup --site NAME`: the data side of a deploy (`helppuff deploy --no-worker`).

On Cloudflare (CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID set) or the local cloud: the D1 database
found by its exact name or created, its UUID kept in the state file; the project's migrations; the
Vectorize index with the embedding model's dimension and its `category` metadata index; the site's row
in site_index. Running it again changes nothing. helppuff_crawl/deploy/resources.py does the work.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from helppuff_crawl.cli.crawl import parse_set_options, project_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("cloudflare", help="Cloudflare resources")
    sub = parser.add_subparsers(dest="cloudflare_command", required=True)
    setup = sub.add_parser("setup", help="the data side of `helppuff deploy`: D1, migrations, Vectorize")
    setup.add_argument("--site", required=True)
    setup.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    setup.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from helppuff_crawl.deploy.resources import deploy_data

    settings = project_settings(parse_set_options(args.set))
    plan = asyncio.run(deploy_data(settings, args.site))
    print(json.dumps(plan.as_dict(), indent=2, sort_keys=True) if args.json else "\n".join(plan.lines()))
    return 0
