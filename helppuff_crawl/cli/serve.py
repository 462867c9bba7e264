"""`helppuff serve`: the Worker in dev mode, answering from the local knowledge base.

Starts the local cloud on 127.0.0.1 (a random bearer token) and `wrangler dev` with the Worker's
dev shims pointed at it (helppuff_crawl.devloop.server), prints the URLs once the Worker answers, and
runs until Ctrl-C (or SIGTERM), then stops both. The Worker reads the same SQLite file and vector
index the crawl wrote. Models the local cloud lacks (the reranker) degrade the answer to fused
order, and each answer says so in `degraded`. Chat answers come from an OpenAI-compatible server
(llama-server, Ollama) when `--chat-url` or HELPPUFF_LOCAL_CHAT_URL names one, and are extractive
otherwise. A site whose retriever (knowledge.retrieval) names a Worker secret serve did not find when it
started gets a line saying so and how to set it (helppuff_crawl/devloop/serve_secrets.py).

A crawl worker (`helppuff worker`, helppuff_crawl/devloop/crawl_worker.py) runs beside them on the same
knowledge base, so the jobs the dashboard and the webhooks ask for run here; `--no-worker` leaves it out
(then the jobs wait on the local queue until a `helppuff worker` runs).

Exit status: 0 after Ctrl-C, 1 when it could not start or wrangler stopped on its own, 2 for bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helppuff_crawl.cli import UsageError

if TYPE_CHECKING:
    from helppuff_crawl.local.cloud import LocalCloud


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("serve", help="run the Worker locally on the local knowledge base")
    parser.add_argument("--port", type=int, default=8787, help="the Worker's port on 127.0.0.1 (default 8787)")
    parser.add_argument("--cloud-port", type=int, default=0, help="the local cloud's port (default: a free one)")
    parser.add_argument("--data-dir", help="the local knowledge base (default: HELPPUFF_DATA_DIR or .helppuff)")
    parser.add_argument("--chat-url", help="an OpenAI-compatible chat server's base URL, e.g. "
                        "http://127.0.0.1:11434/v1 (default: HELPPUFF_LOCAL_CHAT_URL; none: extractive answers)")
    parser.add_argument("--chat-model", help="the model name to ask that server for (default: "
                        "HELPPUFF_LOCAL_CHAT_MODEL, else the Workers AI id the Worker asks for)")
    parser.add_argument("--no-worker", action="store_true",
                        help="do not run a crawl worker beside the Worker (jobs wait until `helppuff worker` runs)")
    parser.set_defaults(func=run)


def _print_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _sites(cloud: LocalCloud, database_id: str) -> list[dict[str, Any]]:
    """Each crawled site with its chunk count and embedding model, from the local cloud's D1."""
    from helppuff_crawl.cloudflare.client import CloudflareClient
    from helppuff_crawl.kb.database import KnowledgeBase
    from helppuff_crawl.kb.status import indexed_sites
    from helppuff_crawl.local.cloud import LOCAL_ACCOUNT_ID, LocalTransport

    kb = KnowledgeBase(CloudflareClient(LocalTransport(cloud), LOCAL_ACCOUNT_ID), database_id)
    return asyncio.run(indexed_sites(kb))


class _Stop(Exception):
    """SIGTERM arrived: stop as Ctrl-C does."""


def dashboard_line(worker_url: str, passed: list[str]) -> str:
    """serve's line for the owner's dashboard (worker/src/admin/): its URL, and whether the Worker has the
    OWNER_TOKEN secret its login asks for."""
    if "OWNER_TOKEN" in passed:
        return f"Dashboard    {worker_url}/admin  (log in with the OWNER_TOKEN secret)"
    return (f"Dashboard    {worker_url}/admin  (off: no OWNER_TOKEN secret; "
            "helppuff secret set OWNER_TOKEN, then restart helppuff serve)")


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Stop()


def run(args: argparse.Namespace) -> int:
    from helppuff_crawl.cli.crawl import project_settings
    from helppuff_crawl.local.chat import ChatServerConfig
    from helppuff_crawl.devloop.server import DevOptions, DevServer
    from helppuff_crawl.deploy.toolchain import DevServerError
    from helppuff_crawl.devloop.crawl_worker import CrawlWorker

    settings = project_settings()
    data_dir = Path(args.data_dir or settings.get("HELPPUFF_DATA_DIR"))
    database = str(settings.get("HELPPUFF_D1_DATABASE"))
    chat_url = str(args.chat_url or settings.get("HELPPUFF_LOCAL_CHAT_URL"))
    chat_model = str(args.chat_model or settings.get("HELPPUFF_LOCAL_CHAT_MODEL"))
    try:
        chat = ChatServerConfig(chat_url, chat_model) if chat_url else None
        options = DevOptions(
            data_dir=data_dir, port=args.port, cloud_port=args.cloud_port, database=database,
            index=str(settings.get("HELPPUFF_VECTORIZE_INDEX")), chat=chat,
            vectorize_delay=float(settings.get("HELPPUFF_LOCAL_VECTORIZE_DELAY")),
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not (data_dir / "d1" / f"{database}.sqlite3").exists():
        print(f"helppuff serve: no knowledge base in {data_dir} yet: crawl a site first (`helppuff crawl URL`)",
              file=sys.stderr)

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    dev = DevServer(options, output=_print_line)
    crawl_worker = None if args.no_worker else CrawlWorker(data_dir, database)
    try:
        dev.start()
        dev.wait_ready()
        assert dev.cloud is not None  # started
        sites = _sites(dev.cloud, dev.database_id)
        print(f"Local cloud  {dev.cloud_url}  (knowledge base: {data_dir})")
        print(f"Worker       {dev.worker_url}  (POST /v1/sites/<site>/search)")
        if chat is not None:
            print(f"Chat model   {chat.url}  ({chat.model or 'the model the Worker asks for'})")
        else:
            print("Chat model   none: extractive answers (--chat-url URL for an OpenAI-compatible server)")
        for site in sites:
            print(f"Site         {site['site']}: {site['chunks']} chunks, {site['model'] or 'no vectors'}")
        for notice in dev.notices:  # a retriever whose secret the Worker lacks: the chat would say "not sure"
            print(f"Warning      {notice}")
        print(dashboard_line(dev.worker_url, dev.passed))
        if crawl_worker is not None:
            print(f"Crawl worker {crawl_worker.start()} (pid): runs the crawl jobs the dashboard and the webhooks ask for")
        else:
            print("Crawl worker none (--no-worker): jobs wait on the queue until `helppuff worker` runs")
        example = sites[0]["site"] if sites else "SITE"
        url = "" if options.port == 8787 else f" --url {dev.worker_url}"
        print(f'Try          helppuff search "how much is a call-out?" --site {example}{url}')
        print("Ready. Ctrl-C stops the Worker and the local cloud.", flush=True)
        status = dev.process.wait() if dev.process is not None else 1
        print(f"helppuff serve: wrangler dev stopped on its own (status {status})", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _Stop):
        print("\nStopping.", file=sys.stderr, flush=True)
        return 0
    except DevServerError as exc:
        print(f"helppuff serve: {exc}", file=sys.stderr)
        return 1
    finally:
        if main_thread:  # a second Ctrl-C must not cut the cleanup short
            interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if crawl_worker is not None:
            crawl_worker.stop()
        dev.stop()
        if main_thread:
            signal.signal(signal.SIGINT, interrupt)
            signal.signal(signal.SIGTERM, previous)
