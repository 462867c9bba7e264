"""Whether `helppuff serve`'s Worker has the secrets the sites' retrievers name, said where the operator looks.

The Worker reads a site's retriever from its stored settings on every request, but its secrets only
from the env file `helppuff serve` writes when it starts (helppuff_crawl/devloop/server.py). An HTTP
retriever whose token secret (knowledge.retrieval.tokenEnv) serve was started without is never asked:
the chat says "not sure" and cites nothing, and the reason (`retriever-failed: the Worker secret NAME
is not set`) is only in wrangler's log. So:

- `unset_secret_notices(rows, passed)` is one line per site whose retriever names a secret serve does
  not pass, which serve prints with its start summary (helppuff_crawl/cli/serve.py);
- serve records in the state file, with its Worker URL, its pid and the names (never the values) of the
  secrets it passes (`serve_record`), and `running_serve(data_dir)` reads that back only while that
  serve still runs, so `helppuff rag set http` and `helppuff secret set` can say when a secret set now
  needs serve restarted.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from helppuff_crawl.cloudflare.state import LOCAL_ACCOUNT, DeployState, StateError
from helppuff_crawl.config.helppuff_json import retrieval_of

logger = logging.getLogger(__name__)

#: The state file's "by" for the Worker entry `helppuff serve` records (helppuff status reads it too).
SERVE_BY = "helppuff serve"


def _names(value: Any) -> list[str]:
    return [name for name in (value if isinstance(value, list) else []) if isinstance(name, str) and name]


def _restart(names: list[str]) -> str:
    return "; ".join(f"helppuff secret set {name}" for name in names) + ", then restart helppuff serve"


def unset_secret_notices(rows: Iterable[tuple[str, str | None]], passed: Iterable[str]) -> list[str]:
    """One line per site whose retriever names a Worker secret not in `passed` (the names serve's env
    file gives the Worker), saying what the chat does without it and the two commands that fix it.

    An HTTP retriever without its token is never asked (worker/src/rag.ts refuses before the request);
    a module retriever gets ctx.env without the secret, so its search may fail. Either way the chat
    answers "not sure".
    """
    given = set(passed)
    notices = []
    for site, text in rows:
        retrieval = retrieval_of(text)
        kind = retrieval.get("type")
        if kind == "http":
            token = retrieval.get("tokenEnv")
            if isinstance(token, str) and token and token not in given:
                notices.append(f"site {site}: its search server's token secret {token} is not set, so the chat "
                               f'cannot ask it (it will say "not sure"): {_restart([token])}')
        elif kind == "custom":
            missing = [name for name in dict.fromkeys(_names(retrieval.get("secrets"))) if name not in given]
            if missing:
                which = f"secret {missing[0]} its retriever module reads is" if len(missing) == 1 else \
                    f"secrets {', '.join(missing)} its retriever module reads are"
                notices.append(f"site {site}: the {which} not set, so its search may fail (the chat will say "
                               f'"not sure"): {_restart(missing)}')
    return notices


def serve_record(url: str, passed: Iterable[str]) -> dict[str, Any]:
    """The state file's Worker entry for a serve in this process: its URL, pid and passed secrets' names."""
    return {"url": url, "by": SERVE_BY, "pid": os.getpid(), "secrets": sorted(set(passed))}


@dataclass(frozen=True)
class RunningServe:
    url: str  # the Worker's URL, http://127.0.0.1:PORT
    secrets: frozenset[str] | None  # the names of the secrets it passes; None: not recorded (an older serve)


def running_serve(data_dir: Path, timeout: float = 1.0) -> RunningServe | None:
    """The `helppuff serve` running on this data folder, from its state file entry, or None.

    The entry stays after serve stops (helppuff status reads its URL), so it counts only while its pid
    is alive and the Worker at its URL answers: a stopped serve, or another program now on its port,
    is not taken for it.
    """
    try:
        worker = DeployState(data_dir).account(LOCAL_ACCOUNT).get("worker")
    except StateError:
        return None
    if not isinstance(worker, dict) or worker.get("by") != SERVE_BY or not isinstance(worker.get("url"), str):
        return None
    pid = worker.get("pid")
    if isinstance(pid, int) and not _alive(pid):
        return None
    with httpx.Client(timeout=timeout, trust_env=False) as client:
        if not worker_answers(client, worker["url"]):
            return None
    listed = worker.get("secrets")
    return RunningServe(worker["url"], frozenset(_names(listed)) if isinstance(listed, list) else None)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    except OSError:
        return False
    return True


def worker_answers(client: httpx.Client, url: str) -> bool:
    """True when this project's Worker answers at `url` (its JSON 404 for an unknown path)."""
    try:
        reply = client.get(f"{url.rstrip('/')}/__helppuff/ready")
    except (httpx.HTTPError, httpx.InvalidURL):
        return False
    if reply.status_code != 404 or "json" not in reply.headers.get("content-type", ""):
        return False
    try:
        return "error" in reply.json()
    except ValueError:
        return False
