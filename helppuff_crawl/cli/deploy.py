"""`helppuff deploy --site S [--dry-run] [--no-worker]`: go live, idempotently; run it again after any change.

1. The data side (helppuff_crawl/deploy/resources.py): the D1 database found by its exact name or
   created, its UUID kept in the state file (`<data dir>/state.json`) that every other command reads;
   the migrations; the Vectorize index and its metadata index, before any vector is written.
2. The Worker (helppuff_crawl/deploy/worker.py): a wrangler config with those ids, `wrangler deploy`,
   then the Worker's URL and the widget's script tag, and a line for each Worker secret it needs and
   lacks (OWNER_TOKEN, a provider's key: deploy/secrets_needed.py; names only, never values). On the local cloud there is no account to deploy
   to: `helppuff serve` runs the Worker here.

`--dry-run` reads, prints the plan and builds the bundle (`wrangler deploy --dry-run --outdir`), touching
nothing. `--no-worker` does the data side only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from helppuff_crawl.cli.crawl import parse_set_options, project_settings

PLACEHOLDER_ID = "00000000-0000-0000-0000-000000000000"  # a dry run's database id before the database exists


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("deploy", help="create or find a site's Cloudflare resources, deploy the Worker")
    parser.add_argument("--site", required=True)
    parser.add_argument("--dry-run", action="store_true", help="print the plan and build the bundle; change nothing")
    parser.add_argument("--no-worker", action="store_true", help="the data side only (D1, migrations, Vectorize)")
    parser.add_argument("--outdir", type=Path, help="where a dry run writes the bundle (default: a new temporary folder)")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


def deploy(settings: Any, site: str, *, dry_run: bool, worker: bool, outdir: Path | None) -> dict[str, Any]:
    from helppuff_crawl.deploy.resources import deploy_data
    from helppuff_crawl.deploy.worker import (
        WorkerTarget,
        build_bundle,
        bundle_entry,
        deploy_config,
        deploy_worker,
        widget_tag,
        write_deploy_config,
    )
    from helppuff_crawl.kb.database import BackendConfig

    backend = BackendConfig.from_settings(settings)
    plan = asyncio.run(deploy_data(settings, site, dry_run=dry_run))
    report: dict[str, Any] = {**plan.as_dict(), "lines": plan.lines()}
    if not worker:
        return report
    target = WorkerTarget(plan.database, plan.database_id or PLACEHOLDER_ID, plan.index, plan.queue,
                          str(settings.get("HELPPUFF_EMAIL_FROM") or ""))
    folder = (outdir or Path(tempfile.mkdtemp(prefix="helppuff-bundle-"))) if dry_run else backend.data_dir
    # The sites' module retrievers, bundled in (helppuff_crawl/deploy/entry.py), read from the stored settings.
    entry = None
    if plan.database_id and (dry_run or backend.remote):
        entry = bundle_entry(settings, folder / "config" if dry_run else folder)
        report["modules"] = sorted(entry.modules)
        for how, found in (("bundled", entry.modules), ("left out, no such file", entry.missing)):
            report["lines"] += [f"  Module retriever {how}: {key} (site {', '.join(sites)})" for key, sites in found.items()]
    main = entry.path if entry is not None else None
    if dry_run:
        config = write_deploy_config(target, folder / "config", entry=main)
        files = build_bundle(config, folder / "bundle")
        report["bundle"] = [str(f) for f in files]
        report["lines"].append(f"  Worker bundle built in {folder / 'bundle'} ({len(files)} files); nothing deployed")
        return report
    if not backend.remote:
        report["lines"].append("  Worker: the local cloud has no account to deploy to; `helppuff serve` runs it here")
        return report
    config = write_deploy_config(target, backend.data_dir, entry=main)
    url = deploy_worker(config, backend.api_token, backend.account_id)
    backend.state.record_worker(backend.account, {"url": url, "config": str(config)})
    report.update(worker_url=url, widget=widget_tag(url, site))
    report["lines"] += [f"  Worker deployed: {url}", f"  Widget: {report['widget']}"]
    missing, lines = asyncio.run(_missing_secrets(settings, str(deploy_config(target)["name"])))
    report["missing_secrets"] = missing
    report["lines"] += lines
    return report


async def _missing_secrets(settings: Any, script: str) -> tuple[list[str], list[str]]:
    """The Worker secrets the deployed Worker needs and lacks (deploy/secrets_needed.py), and their lines."""
    from helppuff_crawl.cloudflare.client import CloudflareError
    from helppuff_crawl.deploy.secrets_needed import missing_secret_lines, needed_secrets, secret_names
    from helppuff_crawl.kb.database import KnowledgeBase
    from helppuff_crawl.kb.site_settings import all_site_settings

    async with KnowledgeBase.from_settings(settings) as kb:
        needed = needed_secrets(await all_site_settings(kb))
        try:
            present = secret_names(await kb.client.worker_secrets(script))
        except CloudflareError as exc:
            return [], [f"  Secrets: not checked ({exc}); needed: {', '.join(needed)}"]
    lines = missing_secret_lines(needed, present)
    return [line.split()[1] for line in lines], lines or [f"  Secrets: the Worker has each it needs ({', '.join(needed)})"]


def run(args: argparse.Namespace) -> int:
    from helppuff_crawl.cloudflare.client import CloudflareError
    from helppuff_crawl.deploy.worker import WorkerDeployError
    from helppuff_crawl.deploy.toolchain import DevServerError

    settings = project_settings(parse_set_options(args.set))
    try:
        report = deploy(settings, args.site, dry_run=args.dry_run, worker=not args.no_worker, outdir=args.outdir)
    except (CloudflareError, WorkerDeployError, DevServerError) as exc:
        print(f"helppuff deploy: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({k: v for k, v in report.items() if k != "lines"}, indent=2, sort_keys=True))
    else:
        print("\n".join(report["lines"]))
    return 0
