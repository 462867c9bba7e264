"""`helppuff scaffold rag`: a module retriever to start from (seed 001, "In TypeScript").

    helppuff scaffold rag [--out FILE] [--use] [--site S] [--config helppuff.json] [--force]
                          [--search-url URL] [--secret NAME]

writes FILE (default ./rag.ts): a default export `{id, async search(request, ctx)}` that POSTs the
query to your search (URL, default https://search.example.com/query) with the Worker secret NAME
(default MY_SEARCH_KEY) from ctx.env, typed with the project's `Retriever` (worker/src/sdk.ts, imported
type only by a relative path, so it resolves for the type checker and costs nothing in the bundle). An
existing FILE is never overwritten without --force.

`--use` points the helppuff.json (--config, default ./helppuff.json; made when there is none) at it:
knowledge.retrieval {"type": "custom", "module": "./rag.ts", "secrets": [NAME]}, the whole file checked
against the schema first. With --site the site's stored settings get it too (as `helppuff rag set`
stores a retriever, the rest kept), the module's path made absolute: the key the Worker's bundle
registers it by (helppuff_crawl/deploy/entry.py). The module is bundled at `helppuff deploy` and
`helppuff serve` (restart serve to pick it up).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path

from helppuff_crawl.cli import UsageError

DEFAULT_SEARCH_URL = "https://search.example.com/query"
DEFAULT_SECRET = "MY_SEARCH_KEY"

TEMPLATE = """\
/**
 * The chat's passages from your own search (HelpPuff, seed 001). For each question the Worker calls
 * search(request, ctx) and quotes what it returns to the model, best first, citing the ones the
 * answer uses. A search that throws, or takes longer than knowledge.retrieval.timeoutMs (5 s), is
 * logged and the assistant answers without passages (it says it is not sure and offers a callback).
 *
 *   request: query (the question made to stand alone), question (the visitor's words), limit
 *   ctx:     fetch, env (the secrets knowledge.retrieval.secrets lists, and the Worker's bindings),
 *            log, siteId
 *   return:  [{ title, content, url?, heading?, score? }] (content: up to 4,000 characters are used;
 *            url: http/https only)
 *
 * Set the secret with `helppuff secret set __SECRET__`; `helppuff deploy` (or `helppuff serve`)
 * bundles this file into the Worker; `helppuff rag test "a question" --site S` shows what it finds.
 */
import type { Retriever } from __SDK__;

/** One result of your search service, as it answers. */
interface SearchResult {
  title: string;
  text: string;
  url?: string;
  score?: number;
}

export default {
  id: "my-knowledge",
  async search(request, ctx) {
    const response = await ctx.fetch(__URL__, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${String(ctx.env["__SECRET__"])}` },
      body: JSON.stringify({ query: request.query, limit: request.limit }),
    });
    if (!response.ok) throw new Error(`search ${response.status}`);
    const { results } = (await response.json()) as { results: SearchResult[] };
    return results.map((r) => ({ title: r.title, content: r.text, url: r.url, score: r.score }));
  },
} satisfies Retriever;
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("scaffold", help="write a file to start from (a module retriever)")
    sub = parser.add_subparsers(dest="scaffold_command", required=True)
    rag = sub.add_parser("rag", help="write ./rag.ts, a module retriever: your own search in TypeScript")
    rag.add_argument("--out", type=Path, default=Path("rag.ts"), help="the file to write (default ./rag.ts)")
    rag.add_argument("--force", action="store_true", help="overwrite the file when it exists")
    rag.add_argument("--use", action="store_true", help="point helppuff.json's knowledge.retrieval at it")
    rag.add_argument("--site", help="with --use: the site whose stored settings get it too")
    rag.add_argument("--config", type=Path, default=Path("helppuff.json"),
                     help="with --use: the helppuff.json (default ./helppuff.json; made when there is none)")
    rag.add_argument("--search-url", default=DEFAULT_SEARCH_URL, help=f"your search endpoint (default {DEFAULT_SEARCH_URL})")
    rag.add_argument("--secret", default=DEFAULT_SECRET, metavar="NAME",
                     help=f"the Worker secret with your search's key (default {DEFAULT_SECRET})")
    parser.set_defaults(func=run)


def sdk_import(out: Path) -> str:
    """The import path of worker/src/sdk.ts from the folder of `out`, as the type checker resolves it."""
    from helppuff_crawl.deploy.toolchain import WORKER_DIR

    relative = Path(os.path.relpath(WORKER_DIR / "src" / "sdk", out.absolute().parent)).as_posix()
    return relative if relative.startswith("../") else f"./{relative}"


def module_source(out: Path, search_url: str, secret: str) -> str:
    return (TEMPLATE.replace("__SDK__", json.dumps(sdk_import(out))).replace("__URL__", json.dumps(search_url))
            .replace("__SECRET__", secret))


def use_module(config: Path, out: Path, secret: str) -> tuple[dict[str, object], dict[str, object]]:
    """`config`'s content (none when there is no such file) with knowledge.retrieval pointing at `out`,
    checked against the schema; and that retrieval. Nothing is written."""
    from helppuff_crawl.cli.rag import with_retrieval
    from helppuff_crawl.config.helppuff_json import ConfigError, config_problems

    module = Path(os.path.relpath(out.absolute(), config.absolute().parent)).as_posix()
    retrieval: dict[str, object] = {"type": "custom", "module": module if module.startswith("../") else f"./{module}",
                                    "secrets": [secret]}
    try:
        root = json.loads(config.read_text(encoding="utf-8")) if config.is_file() else {}
    except ValueError as exc:
        raise UsageError(f"{config}: not JSON: {exc}") from None
    root = with_retrieval(json.dumps(root), retrieval)
    problems = config_problems(root)
    if problems:
        raise UsageError(str(ConfigError(str(config), problems)))
    return root, retrieval


def run(args: argparse.Namespace) -> int:
    from helppuff_crawl.devloop.worker_secrets import check_secret

    out: Path = args.out
    if out.suffix not in (".ts", ".js"):
        raise UsageError(f"{out}: a module retriever is a .ts or .js file")
    try:
        check_secret(args.secret, "x")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.site and not args.use:
        raise UsageError("--site goes with --use")
    if out.exists() and not args.force:
        raise UsageError(f"{out} exists: not overwritten (--force to replace it)")
    used = use_module(args.config, out, args.secret) if args.use else None  # refused before anything is written
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(module_source(out, args.search_url, args.secret), encoding="utf-8")
    print(f"{out}: written (a module retriever: edit search() to call your own search)")
    if used is None:
        print(f"Use it: helppuff scaffold rag --use --out {out} --force, or set knowledge.retrieval in helppuff.json")
        return 0
    root, retrieval = used
    args.config.write_text(json.dumps(root, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{args.config}: knowledge.retrieval is now {json.dumps(retrieval)}")
    if args.site:
        from helppuff_crawl.cli.crawl import project_settings
        from helppuff_crawl.cli.rag import _set

        asyncio.run(_set(project_settings(), args.site, {**retrieval, "module": os.path.normpath(out.absolute())}))
        print(f"{args.site}: the chat's passages come from {os.path.normpath(out.absolute())} once it is bundled "
              "(helppuff deploy, or restart helppuff serve)")
    else:
        print(f"Store it for a site: helppuff config apply {args.config} --site SITE")
    print(f"Set your search's key as the Worker secret {args.secret}: helppuff secret set {args.secret} (reads stdin)")
    return 0
