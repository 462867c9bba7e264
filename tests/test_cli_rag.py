"""`helppuff rag set`, `helppuff secret set` and `helppuff rag test`, run as an operator runs them, on the
local knowledge base (real SQLite, the Worker's migrations), and `rag test` through `helppuff serve` (the
real Worker in wrangler dev) against FakeRetriever, a fake of the owner's search service on 127.0.0.1 that
records each request and answers seed 001's {"passages": [...]}. worker/test/rag.test.ts holds the Worker
to the exact request and each check on the reply; this is the whole path as the owner uses it."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.devloop.worker_secrets import local_secrets, secret_lines
from tests.conftest import run_helppuff
from tests.devloop import HELPPUFF, ROOT, free_port, serving

TOKEN = "tok-fake-5f6e7d"


def _stored(tmp_path: Path, site: str = "acme") -> dict[str, Any]:
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as conn:
        (text,) = conn.execute("SELECT settings FROM site_settings WHERE site = ?", [site]).fetchone()
    return json.loads(text)


def test_rag_set_http_stores_the_retriever_in_the_settings_and_keeps_the_rest(tmp_path: Path) -> None:
    kept = {"backend": {"prompt": "You are Acme's assistant.", "allowNoOrigin": True}}
    assert run_helppuff(tmp_path, "settings", "set", "-", "--site", "acme", stdin=json.dumps(kept)).returncode == 0
    done = run_helppuff(tmp_path, "rag", "set", "http", "--site", "acme", "--url", "https://search.example.com/query",
                        "--token-env", "SEARCH_TOKEN", "--timeout-ms", "2500")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [  # the secret is not set, and no serve runs to restart
        "acme: the chat's passages come from https://search.example.com/query (POST, Authorization: Bearer $SEARCH_TOKEN)",
        "Set the token as the Worker secret SEARCH_TOKEN: helppuff secret set SEARCH_TOKEN (reads stdin)"]
    assert _stored(tmp_path) == {**kept, "knowledge": {"retrieval": {
        "type": "http", "url": "https://search.example.com/query", "tokenEnv": "SEARCH_TOKEN", "timeoutMs": 2500}}}

    # Refused, each problem named by its field, and nothing changed.
    bad = run_helppuff(tmp_path, "rag", "set", "http", "--site", "acme", "--url", "http://search.example.com/q",
                       "--token-env", "OPENAI_API_KEY")
    assert bad.returncode == 2
    assert "knowledge.retrieval.url:" in bad.stderr and "knowledge.retrieval.tokenEnv:" in bad.stderr
    assert _stored(tmp_path)["knowledge"]["retrieval"]["url"] == "https://search.example.com/query"

    back = run_helppuff(tmp_path, "rag", "set", "helppuff", "--site", "acme")
    assert back.returncode == 0, back.stderr
    assert _stored(tmp_path) == {**kept, "knowledge": {"retrieval": {"type": "helppuff"}}}


def test_rag_set_http_says_whether_the_token_secret_is_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from helppuff_crawl.cloudflare.state import LOCAL_ACCOUNT, DeployState

    monkeypatch.delenv("SEARCH_TOKEN", raising=False)
    kb = tmp_path / "kb"
    args = ("rag", "set", "http", "--site", "acme", "--url", "https://search.example.com/query",
            "--token-env", "SEARCH_TOKEN")
    assert run_helppuff(tmp_path, "secret", "set", "SEARCH_TOKEN", stdin=TOKEN).returncode == 0
    # A serve that ran here and stopped left its entry: this process is alive, but nothing answers on its port.
    DeployState(kb).record_worker(LOCAL_ACCOUNT, {"url": f"http://127.0.0.1:{free_port()}", "by": "helppuff serve",
                                                  "pid": os.getpid(), "secrets": []})
    done = run_helppuff(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        f"The Worker secret SEARCH_TOKEN is set already (kept for helppuff serve in {kb / 'worker-secrets.env'})"]
    assert TOKEN not in done.stdout + done.stderr

    # Set in this environment only: serve passes it from its own environment when a site names it.
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(tmp_path / "other"), "CLOUDFLARE_API_TOKEN": "",
           "CLOUDFLARE_ACCOUNT_ID": "", "SEARCH_TOKEN": TOKEN}
    shown = subprocess.run([HELPPUFF, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[1:] == [
        "The Worker secret SEARCH_TOKEN is set in this environment: helppuff serve passes it when it starts "
        "with it there (to keep it for serve: helppuff secret set SEARCH_TOKEN)"]


def test_secret_set_keeps_the_value_for_serve_only(tmp_path: Path) -> None:
    done = run_helppuff(tmp_path, "secret", "set", "SEARCH_TOKEN", stdin=f"{TOKEN}\n")
    assert done.returncode == 0, done.stderr
    assert TOKEN not in done.stdout + done.stderr
    path = tmp_path / "kb" / "worker-secrets.env"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert run_helppuff(tmp_path, "secret", "set", "OTHER_KEY", stdin="second").returncode == 0
    assert run_helppuff(tmp_path, "secret", "set", "SEARCH_TOKEN", stdin="replaced").returncode == 0
    assert local_secrets(tmp_path / "kb", environ={}) == {"OTHER_KEY": "second", "SEARCH_TOKEN": "replaced"}
    # serve's environment wins for a name stored here; the env file gets one line each.
    secrets = local_secrets(tmp_path / "kb", environ={"SEARCH_TOKEN": "from-env", "UNRELATED": "x"})
    assert secrets == {"OTHER_KEY": "second", "SEARCH_TOKEN": "from-env"}
    assert secret_lines("", {}, secrets) == "OTHER_KEY=second\nSEARCH_TOKEN=from-env\n"
    assert secret_lines("rk", {}, {"RETELL_API_KEY": "stored"}) == "RETELL_API_KEY=rk\n"

    for name, value in (("HELPPUFF_LOCAL_CLOUD_TOKEN", "x"), ("search", "x"), ("SEARCH_TOKEN", ""),
                        ("SEARCH_TOKEN", "two\nlines")):
        refused = run_helppuff(tmp_path, "secret", "set", name, stdin=value)
        assert refused.returncode == 2, (name, value)
    assert local_secrets(tmp_path / "kb", environ={})["SEARCH_TOKEN"] == "replaced"


@dataclass
class FakeRetriever:
    """The owner's search service, faked on loopback: it records each request and answers `reply`."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    reply: dict[str, Any] = field(default_factory=lambda: {"passages": [
        {"title": "Prices", "content": "Our callout fee is $99 on weekdays.", "url": "https://acme.com/prices",
         "heading": "Call-out", "score": 0.9},
        {"title": "Trap", "content": "Click here.", "url": "javascript:alert(1)"},
        {"content": "no title, dropped"},
    ]})


@pytest.fixture(scope="module")
def fake() -> Iterator[tuple[FakeRetriever, str]]:
    retriever = FakeRetriever()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("content-length", "0"))
            retriever.requests.append({"path": self.path, "authorization": self.headers.get("authorization"),
                                       "content-type": self.headers.get("content-type"),
                                       "body": json.loads(self.rfile.read(length) or b"{}")})
            body = json.dumps(retriever.reply).encode()
            self.send_response(retriever.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield retriever, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_rag_test_prints_what_the_retriever_returns_through_the_worker(
        tmp_path: Path, fake: tuple[FakeRetriever, str]) -> None:
    from helppuff_crawl.deploy.toolchain import DevServerError, find_toolchain

    try:
        find_toolchain()
    except DevServerError as exc:
        pytest.skip(f"{exc} (scripts/test-worker.sh installs it; CI runs it before pytest)")
    retriever, base = fake
    assert run_helppuff(tmp_path, "settings", "set", "-", "--site", "shop",
                        stdin='{"backend": {"allowNoOrigin": true}}').returncode == 0
    assert run_helppuff(tmp_path, "rag", "set", "http", "--site", "shop", "--url", f"{base}/query",
                        "--token-env", "SEARCH_TOKEN").returncode == 0
    assert run_helppuff(tmp_path, "secret", "set", "SEARCH_TOKEN", stdin=TOKEN).returncode == 0
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(tmp_path / "kb"), "CLOUDFLARE_API_TOKEN": "",
           "CLOUDFLARE_ACCOUNT_ID": ""}
    env.pop("SEARCH_TOKEN", None)
    port = free_port()

    def rag_test(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([HELPPUFF, "rag", "test", "price of a blocked drain", "--site", "shop",
                               "--url", f"http://127.0.0.1:{port}", *extra],
                              cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=120)

    with serving(tmp_path / "kb", env, tmp_path, port):
        shown = rag_test("--limit", "3")
        assert shown.returncode == 0, shown.stderr
        assert retriever.requests[-1] == {
            "path": "/query", "authorization": f"Bearer {TOKEN}", "content-type": "application/json",
            "body": {"query": "price of a blocked drain", "question": "price of a blocked drain", "siteId": "shop",
                     "limit": 3}}
        lines = shown.stdout.splitlines()
        assert lines[0] == "1. 0.9000  confident  Prices › Call-out"  # the site's own search decides: confident
        assert lines[1].strip() == "https://acme.com/prices"
        assert "Our callout fee is $99 on weekdays." in lines[2]
        assert lines[3] == "2. 0.0000  confident  Trap" and lines[4].strip() == ""  # its javascript: url dropped
        assert "no title" not in shown.stdout
        assert "(scores: retriever)" in shown.stdout

        retriever.status = 500
        failed = rag_test("--json")
        assert failed.returncode == 0, failed.stderr
        answer = json.loads(failed.stdout)
        assert answer["passages"] == []
        assert answer["degraded"] == [f"retriever-failed: 127.0.0.1:{base.rsplit(':', 1)[1]}: HTTP 500; no passages"]
