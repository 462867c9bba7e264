"""`helppuff cloudflare setup --site NAME`: create what a site needs, idempotently.

On Cloudflare (CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID set) or the local cloud: the D1
database with the project's migrations applied (tracked in d1_migrations, as wrangler does), the
Vectorize index with the embedding model's dimension and the `category` metadata index, and the
site's row in site_index. Running it again changes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from helppuff_crawl.cli.crawl import parse_set_options, project_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("cloudflare", help="Cloudflare resources")
    sub = parser.add_subparsers(dest="cloudflare_command", required=True)
    setup = sub.add_parser("setup", help="create the D1 database, migrations and Vectorize index for a site")
    setup.add_argument("--site", required=True)
    setup.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    setup.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


async def setup(settings: Any, site: str) -> dict[str, Any]:
    from helppuff_crawl.cli.knowledge import open_knowledge
    from helppuff_crawl.kb.database import BackendConfig
    from helppuff_crawl.kb.migrations import apply_migrations

    backend = BackendConfig.from_settings(settings)
    kb, writer, _ = open_knowledge(settings)
    try:
        database = backend.database
        if backend.remote:
            found = await kb.client.d1_list_databases(database)
            if not any(db.get("name") == database or db.get("uuid") == database for db in found):
                created = await kb.client.d1_create_database(database)
                database = created.get("uuid") or database
            else:
                database = next(db.get("uuid") or database for db in found
                                if db.get("name") == database or db.get("uuid") == database)
            kb.database = database
        migrations = await apply_migrations(kb)
        had_index = await kb.client.vectorize_get_index(writer.index) is not None
        await writer.ensure_index()
        await writer.claim_site(site)
        await writer.wait_for_writes()  # the metadata index in place before any vector is written
        return {"site": site, "d1_database": database, "migrations_applied": migrations,
                "vector_index": writer.index, "index_created": not had_index, "model": writer.model,
                "dimensions": writer.dimensions, "namespace": site, "remote": backend.remote}
    finally:
        await kb.close()


def run(args: argparse.Namespace) -> int:
    settings = project_settings(parse_set_options(args.set))
    report = asyncio.run(setup(settings, args.site))
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        where = "Cloudflare" if report["remote"] else "the local cloud"
        print(f"{args.site} on {where}: D1 {report['d1_database']} "
              f"({len(report['migrations_applied'])} migrations applied), Vectorize index {report['vector_index']} "
              f"({'created' if report['index_created'] else 'already there'}, {report['dimensions']} dimensions, "
              f"{report['model']}), namespace {report['namespace']}")
    return 0
