"""The Worker side of a deploy: a wrangler config for this account's resources, then `wrangler deploy`.

The checked-in worker/wrangler.jsonc declares the bindings, the rate limiters and the Worker's name;
it carries no account's ids. A deploy writes `<data dir>/wrangler.deploy.json` from it: the D1
database's UUID and name, the Vectorize index, absolute paths (wrangler resolves `main` and
`migrations_dir` against the config's folder), and no `env` (the "local" environment is for
`helppuff serve`). `main` is the Worker's src/index.ts, or, when a site's settings name a module
retriever, the entry file that bundles the modules in (helppuff_crawl/deploy/entry.py, `bundle_entry`).
Then `wrangler deploy --config` that file. A dry run builds the bundle with
`wrangler deploy --dry-run --outdir`, which needs no account and touches nothing.

A site's webhook and recrawl secrets live in its settings in D1; the Worker's own secrets (a custom
retriever's token, the providers' keys) are put with `wrangler secret put` (`put_secret`, which
`helppuff secret set` runs against the deployed Worker's config).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helppuff_crawl.deploy.entry import Entry, write_entry
from helppuff_crawl.deploy.toolchain import WORKER_DIR, find_toolchain

DEPLOY_CONFIG = "wrangler.deploy.json"
_JSONC_TOKENS = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', re.DOTALL)
_WORKER_URL = re.compile(r"https://[A-Za-z0-9.-]+\.workers\.dev\b")


class WorkerDeployError(Exception):
    """wrangler refused or failed: one line with its last words."""


def read_jsonc(text: str) -> Any:
    """JSON with comments and trailing commas, as wrangler.jsonc is written."""
    return json.loads(_JSONC_TOKENS.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text))


@dataclass(frozen=True)
class WorkerTarget:
    database: str
    database_id: str
    index: str
    queue: str = ""  # the crawl queue its CRAWL_QUEUE producer sends to (HELPPUFF_QUEUE); "": as declared
    email_from: str = ""  # HELPPUFF_EMAIL_FROM: the owner's emails' sender; "": no send_email binding


def deploy_config(target: WorkerTarget, worker_dir: Path = WORKER_DIR, entry: Path | None = None) -> dict[str, Any]:
    """worker/wrangler.jsonc with this account's resources filled in (and `entry` as main, when given)."""
    config = read_jsonc((worker_dir / "wrangler.jsonc").read_text(encoding="utf-8"))
    config.pop("$schema", None)
    config.pop("env", None)
    config["main"] = str(Path(entry).resolve() if entry is not None else (worker_dir / config["main"]).resolve())
    databases = config.get("d1_databases") or []
    if len(databases) != 1:
        raise WorkerDeployError(f"{worker_dir / 'wrangler.jsonc'} must declare one D1 database, found {len(databases)}")
    databases[0].update(database_name=target.database, database_id=target.database_id)
    databases[0]["migrations_dir"] = str((worker_dir / databases[0].get("migrations_dir", "migrations")).resolve())
    for index in config.get("vectorize") or []:
        index["index_name"] = target.index
    for producer in (config.get("queues") or {}).get("producers") or []:
        if target.queue and producer.get("binding") == "CRAWL_QUEUE":
            producer["queue"] = target.queue
    if target.email_from:
        # The owner's email of each new lead and question (worker/src/notify-email.ts): a send_email
        # binding needs Cloudflare Email Service on the account, so it is added only when asked for.
        config["send_email"] = [{"name": "EMAIL"}]
        config["vars"] = {**(config.get("vars") or {}), "EMAIL_FROM": target.email_from}
    return config


def write_deploy_config(target: WorkerTarget, data_dir: Path, worker_dir: Path = WORKER_DIR,
                        entry: Path | None = None) -> Path:
    path = Path(data_dir) / DEPLOY_CONFIG
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(deploy_config(target, worker_dir, entry), indent=2) + "\n", encoding="utf-8")
    return path


async def _settings_rows(settings: Any) -> list[tuple[str, str | None]]:
    from helppuff_crawl.kb.database import KnowledgeBase
    from helppuff_crawl.kb.site_settings import all_site_settings

    async with KnowledgeBase.from_settings(settings) as kb:
        return await all_site_settings(kb)


def bundle_entry(settings: Any, folder: Path, worker_dir: Path = WORKER_DIR) -> Entry:
    """The entry file (in `folder`) bundling the module retrievers every site's stored settings name."""
    return write_entry(folder, asyncio.run(_settings_rows(settings)), worker_dir)


def _environment(remote: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ACCOUNT_ID")}
    env.update(WRANGLER_SEND_METRICS="false", CLOUDFLARE_CF_FETCH_ENABLED="false", NO_COLOR="1", FORCE_COLOR="0")
    env.update(remote or {})
    return env


def _wrangler(args: list[str], env: dict[str, str], worker_dir: Path, stdin: str | None = None) -> str:
    tool = find_toolchain(worker_dir)
    env = {**env, "PATH": f"{tool.node.parent}{os.pathsep}{env.get('PATH', '')}"}
    try:
        done = subprocess.run([str(tool.node), str(tool.wrangler), *args], cwd=worker_dir, env=env, input=stdin,
                              capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired as exc:
        raise WorkerDeployError(f"wrangler {args[0]} did not finish in {exc.timeout:.0f} s") from exc
    output = done.stdout + done.stderr
    if done.returncode != 0:
        last = [line.strip() for line in output.splitlines() if line.strip() and not line.startswith("🪵")]
        reason = next((line for line in last if "ERROR" in line), last[-1] if last else "no output")
        raise WorkerDeployError(f"wrangler {args[0]} failed (exit {done.returncode}): {reason}")
    return output


def build_bundle(config: Path, outdir: Path, worker_dir: Path = WORKER_DIR) -> list[Path]:
    """`wrangler deploy --dry-run --outdir`: the bundle a deploy would upload; its files."""
    _wrangler(["deploy", "--dry-run", "--outdir", str(outdir), "--config", str(config)], _environment(None), worker_dir)
    files = sorted(p for p in Path(outdir).rglob("*") if p.is_file())
    if not any(p.suffix == ".js" for p in files):
        raise WorkerDeployError(f"wrangler deploy --dry-run wrote no script to {outdir}")
    return files


def deploy_worker(config: Path, api_token: str, account_id: str, secrets: dict[str, str] | None = None,
                  worker_dir: Path = WORKER_DIR) -> str:
    """`wrangler deploy`, then `wrangler secret put` for each secret; the Worker's URL."""
    env = _environment({"CLOUDFLARE_API_TOKEN": api_token, "CLOUDFLARE_ACCOUNT_ID": account_id})
    output = _wrangler(["deploy", "--config", str(config)], env, worker_dir)
    for name, value in (secrets or {}).items():
        _put_secret(config, env, name, value, worker_dir)
    return worker_url(output)


def put_secret(config: Path, api_token: str, account_id: str, name: str, value: str,
               worker_dir: Path = WORKER_DIR) -> None:
    """`wrangler secret put NAME` on the deployed Worker, the value on stdin (never on a command line)."""
    env = _environment({"CLOUDFLARE_API_TOKEN": api_token, "CLOUDFLARE_ACCOUNT_ID": account_id})
    _put_secret(config, env, name, value, worker_dir)


def _put_secret(config: Path, env: dict[str, str], name: str, value: str, worker_dir: Path) -> None:
    _wrangler(["secret", "put", name, "--config", str(config)], env, worker_dir, stdin=value)


def worker_url(output: str) -> str:
    """The workers.dev URL `wrangler deploy` prints under "Deployed <name> triggers"."""
    found = _WORKER_URL.search(output)
    if found is None:
        raise WorkerDeployError("wrangler deploy succeeded but printed no workers.dev URL (a custom route only?)")
    return found.group(0)


def widget_tag(worker_url: str, site: str) -> str:
    """The one line a site owner pastes into their pages."""
    return f'<script src="{worker_url.rstrip("/")}/widget.js" data-site="{site}" async></script>'
