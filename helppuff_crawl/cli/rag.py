"""`helppuff rag ...`: where the chat's passages come from (seed 001, custom retrievers).

    helppuff rag set http --site S --url URL --token-env NAME [--timeout-ms MS]
    helppuff rag set custom --site S --module FILE [--secret NAME ...] [--timeout-ms MS]
                                                a module retriever (helppuff scaffold rag writes one)
    helppuff rag set helppuff --site S          back to this knowledge base
    helppuff rag test "question" --site S [--url WORKER] [--limit N] [--json]

`rag set` writes `knowledge.retrieval` into the site's stored settings (D1 site_settings, which the
Worker reads on every request: helppuff_crawl/kb/site_settings.py), keeping the rest of them, after
checking the whole against helppuff.json's schema. It stores the token's *name* only: the token is
the Worker secret NAME (`helppuff secret set NAME`). The Worker then POSTs {query, question, siteId,
limit} to URL with `Authorization: Bearer <NAME>` (worker/src/rag.ts). After storing, `rag set http`
says whether that secret is set, and, when `helppuff serve` is running without it, that serve must be
restarted to pass it (serve gives the Worker the secrets it finds when it starts).

A module retriever (knowledge.retrieval "custom", seed 001 "In TypeScript") is made with `helppuff scaffold
rag --use` (helppuff_crawl/cli/scaffold.py) and bundled into the Worker at deploy and serve.

`rag test` asks the Worker's search route, whatever the retriever (http or custom), as `helppuff search`
does (default http://127.0.0.1:8787, where `helppuff serve` runs; give a deployed Worker's URL with
--url), so what it prints is what the chat gets: the passages after the Worker's checks, or the
reason there are none (`retriever-failed`).
The route needs an Origin or the site's "allowNoOrigin": true. Exit status as `helppuff search`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from helppuff_crawl.cli import UsageError
from helppuff_crawl.cli.search import DEFAULT_URL


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("rag", help="the site's retriever: this knowledge base or your own search")
    sub = parser.add_subparsers(dest="rag_command", required=True)
    setter = sub.add_parser("set", help="choose where the chat's passages come from")
    kinds = setter.add_subparsers(dest="rag_type", required=True)
    http = kinds.add_parser("http", help="your own search over HTTP")
    http.add_argument("--site", required=True)
    http.add_argument("--url", required=True, help="the search endpoint (https://; http:// only on loopback)")
    http.add_argument("--token-env", required=True, metavar="NAME", help="the Worker secret holding the bearer token")
    http.add_argument("--timeout-ms", type=int, help="how long a search may take (default 5000)")
    custom = kinds.add_parser("custom", help="your own search in a TypeScript module (helppuff scaffold rag)")
    custom.add_argument("--site", required=True)
    custom.add_argument("--module", required=True, type=Path, help="the module (.ts or .js), e.g. ./rag.ts")
    custom.add_argument("--secret", action="append", default=[], metavar="NAME",
                        help="a Worker secret the module reads from ctx.env (again for more)")
    custom.add_argument("--timeout-ms", type=int, help="how long a search may take (default 5000)")
    own = kinds.add_parser("helppuff", help="this knowledge base (the default)")
    own.add_argument("--site", required=True)
    test = sub.add_parser("test", help="print what the site's retriever returns, through the Worker")
    test.add_argument("query", help="the visitor's question")
    test.add_argument("--site", required=True)
    test.add_argument("--url", default=DEFAULT_URL, help=f"the Worker (default {DEFAULT_URL})")
    test.add_argument("--limit", type=int, help="passages to ask for (1-20; default: the site's finalK)")
    test.add_argument("--json", action="store_true", help="print the Worker's JSON answer")
    parser.set_defaults(func=run)


def with_retrieval(stored: str | None, retrieval: dict[str, Any]) -> dict[str, Any]:
    """The stored settings (JSON text, or None) with knowledge.retrieval replaced by `retrieval`."""
    root = json.loads(stored) if stored else {}
    if not isinstance(root, dict):
        raise UsageError("the stored settings are not a JSON object: fix them with `helppuff settings set`")
    knowledge = root.setdefault("knowledge", {})
    if not isinstance(knowledge, dict):
        raise UsageError("the stored settings' knowledge is not an object: fix it with `helppuff settings set`")
    knowledge["retrieval"] = retrieval
    return root


async def _set(settings: Any, site: str, retrieval: dict[str, Any]) -> None:
    from helppuff_crawl.cli.settings import check_settings
    from helppuff_crawl.kb import site_settings
    from helppuff_crawl.kb.database import KnowledgeBase

    async with KnowledgeBase.from_settings(settings) as kb:
        row = await site_settings.get_site_settings(kb, site)
        root = with_retrieval(row["settings"] if row else None, retrieval)
        try:
            checked = check_settings(json.dumps(root))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        await site_settings.set_site_settings(kb, site, json.dumps(checked, ensure_ascii=False, sort_keys=True))


def run(args: argparse.Namespace) -> int:
    from helppuff_crawl.cli import search
    from helppuff_crawl.cli.crawl import project_settings

    if args.rag_command == "test":
        return search.run(argparse.Namespace(query=args.query, site=args.site, url=args.url, limit=args.limit,
                                             mode=None, json=args.json))
    if args.rag_type == "helppuff":
        asyncio.run(_set(project_settings(), args.site, {"type": "helppuff"}))
        print(f"{args.site}: the chat's passages come from this knowledge base")
        return 0
    if args.rag_type == "custom":
        module = Path(os.path.normpath(args.module.absolute()))  # the key the Worker's bundle registers it by
        if not module.is_file():
            raise UsageError(f"{args.module}: no such file")
        retrieval: dict[str, Any] = {"type": "custom", "module": str(module), "secrets": list(dict.fromkeys(args.secret))}
        if args.timeout_ms is not None:
            retrieval["timeoutMs"] = args.timeout_ms
        asyncio.run(_set(project_settings(), args.site, retrieval))
        print(f"{args.site}: the chat's passages come from {module} once it is bundled "
              "(helppuff deploy, or restart helppuff serve)")
        for name in retrieval["secrets"]:
            print(f"Set the Worker secret {name}: helppuff secret set {name} (reads stdin)")
        return 0
    retrieval = {"type": "http", "url": args.url, "tokenEnv": args.token_env}
    if args.timeout_ms is not None:
        retrieval["timeoutMs"] = args.timeout_ms
    settings = project_settings()
    asyncio.run(_set(settings, args.site, retrieval))
    print(f"{args.site}: the chat's passages come from {args.url} (POST, Authorization: Bearer ${args.token_env})")
    for line in token_lines(settings, args.token_env, args.url):
        print(line)
    return 0


def token_lines(settings: Any, name: str, url: str) -> list[str]:
    """Whether the token secret `name` is set, and whether a running `helppuff serve` has it.

    On Cloudflare the deployed Worker's secrets are not read back, so the line says how to set it. On
    the local cloud the secret is set when `helppuff secret set` stored it for serve, or when it is in
    this environment (serve passes a secret a site names from its own environment); and a serve already
    running passes only the secrets it found when it started (helppuff_crawl/devloop/serve_secrets.py), so
    without this one the chat would say "not sure" until it is restarted.
    """
    from helppuff_crawl.kb.database import BackendConfig
    from helppuff_crawl.devloop.worker_secrets import LOCAL_SECRETS_FILE, local_secrets
    from helppuff_crawl.devloop.serve_secrets import running_serve

    ask = f"Set the token as the Worker secret {name}: helppuff secret set {name} (reads stdin)"
    backend = BackendConfig.from_settings(settings)
    if backend.remote:
        return [ask]
    stored = bool(local_secrets(backend.data_dir, environ={}).get(name))
    in_env = bool(os.environ.get(name))
    if stored:
        lines = [f"The Worker secret {name} is set already (kept for helppuff serve in "
                 f"{backend.data_dir / LOCAL_SECRETS_FILE})"]
    elif in_env:
        lines = [f"The Worker secret {name} is set in this environment: helppuff serve passes it when it starts "
                 f"with it there (to keep it for serve: helppuff secret set {name})"]
    else:
        lines = [ask]
    serve = running_serve(backend.data_dir)
    if serve is None:
        return lines
    if serve.secrets is not None and name in serve.secrets:
        lines.append(f"helppuff serve ({serve.url}) passes {name} already: the chat asks {url} from now on")
    else:
        then = "restart it" if stored or in_env else f"helppuff secret set {name}, then restart it"
        lines.append(f"helppuff serve is running ({serve.url}) and passes only the secrets it found when it "
                     f"started: {then} to pass {name}")
    return lines
