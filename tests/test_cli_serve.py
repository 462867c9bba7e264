"""`helppuff search` against a stub Worker on loopback (the real CLI, real HTTP), and the parts of
`helppuff serve` that need no Worker: its wrangler command line and environment, its output
filter, and its refusals. The whole loop runs in tests/test_dev_loop.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.deploy.toolchain import (
    WORKER_DIR,
    DevServerError,
    Toolchain,
    drop_inheritance_warnings,
    find_toolchain,
    wrangler_environment,
)
from helppuff_crawl.devloop.server import DevOptions, wrangler_command
from tests.devloop import free_port

ROOT = Path(__file__).resolve().parent.parent
HELPPUFF = str(Path(sys.executable).parent / "helppuff")

ANSWER = {
    "passages": [
        {"n": 1, "chunkId": "c1", "title": "Pricing | Acme Plumbing",
         "headingPath": ["Pricing | Acme Plumbing", "Call-out fees"],
         "url": "https://acme.com.au/pricing#call-out-fees", "category": "pricing",
         "text": "The call-out fee covers travel.\n\n| Call-out | Fee |\n| --- | --- |\n| Weekdays | $99 |",
         "score": 0.024590163934426229, "band": "closest"},
        {"n": 2, "chunkId": "c2", "title": "Business details", "headingPath": [],
         "url": "helppuff://facts", "category": "contact",
         "text": "- Phone: +61 3 9000 1234 " + "x" * 120, "score": 0.5, "band": "closest"},
    ],
    "degraded": ["reranker-failed: @cf/baai/bge-reranker-base: Workers AI: HTTP 400: 5007: No such model; fused order"],
    "query": "how much is a call-out?",
    "scores": "fused",
    "minScore": None,
}


@dataclass
class StubWorker:
    """A loopback HTTP server answering every POST with (status, body); records what it got."""

    status: int = 200
    body: Any = field(default_factory=lambda: ANSWER)
    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def stub() -> Iterator[StubWorker]:
    state = StubWorker()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            state.requests.append((self.command, self.path, json.loads(self.rfile.read(length) or b"null")))
            data = state.body.encode() if isinstance(state.body, str) else json.dumps(state.body).encode()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()
    thread.join()


def _search(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HELPPUFF, "search", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_search_posts_the_query_and_prints_the_passages(stub: StubWorker) -> None:
    result = _search("how much is a call-out?", "--site", "acme", "--url", stub.url + "/")
    assert result.returncode == 0, result.stderr
    assert stub.requests == [("POST", "/v1/sites/acme/search", {"query": "how much is a call-out?"})]
    assert result.stdout.splitlines() == [
        "1. 0.0246  closest  Pricing | Acme Plumbing › Call-out fees",
        "   https://acme.com.au/pricing#call-out-fees",
        "   The call-out fee covers travel.",
        "   | Call-out | Fee |",
        "   | --- | --- |",
        "2. 0.5000  closest  Business details",
        "   helppuff://facts",
        "   - Phone: +61 3 9000 1234 " + "x" * 74 + "…",
        "(scores: fused)",
        "degraded: reranker-failed: @cf/baai/bge-reranker-base: Workers AI: HTTP 400: 5007: No such model; fused order",
    ]


def test_search_sends_limit_and_mode_and_prints_raw_json(stub: StubWorker) -> None:
    result = _search("hot water", "--site", "acme-2", "--url", stub.url, "--limit", "3", "--mode", "keywords", "--json")
    assert result.returncode == 0, result.stderr
    assert stub.requests == [("POST", "/v1/sites/acme-2/search", {"query": "hot water", "limit": 3, "mode": "keywords"})]
    assert json.loads(result.stdout) == ANSWER


def test_search_with_no_passages_says_so(stub: StubWorker) -> None:
    stub.body = {"passages": [], "degraded": [], "query": "zzz", "scores": "reranker"}
    result = _search("zzz", "--site", "acme", "--url", stub.url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["no passages for 'zzz'", "(scores: reranker)"]


@pytest.mark.parametrize(
    ("status", "body", "line"),
    [
        (400, {"error": "query must be at most 2000 characters (got 2400)"},
         "helppuff search: the Worker answered HTTP 400: query must be at most 2000 characters (got 2400)"),
        (403, {"error": "requests must come from the site's web pages (no Origin header)"},
         ("helppuff search: the Worker answered HTTP 403: requests must come from the site's web pages (no Origin "
          'header) (the command line sends no Origin: give the site "allowNoOrigin": true with '
          "`helppuff settings set helppuff.json --site nope`)")),
        (403, {"error": "origin https://evil.example may not use this site's chat"},
         "helppuff search: the Worker answered HTTP 403: origin https://evil.example may not use this site's chat"),
        (429, {"error": "too many questions: at most 20 a minute; try again in a minute"},
         "helppuff search: the Worker answered HTTP 429: too many questions: at most 20 a minute; try again in a minute"),
        (503, {"error": "the assistant cannot be reached right now"},
         "helppuff search: the Worker answered HTTP 503: the assistant cannot be reached right now"),
        (502, "<html>bad gateway</html>", "helppuff search: the Worker answered HTTP 502: <html>bad gateway</html>"),
    ],
)
def test_search_reports_the_workers_refusal(stub: StubWorker, status: int, body: Any, line: str) -> None:
    stub.status, stub.body = status, body
    result = _search("hi", "--site", "nope", "--url", stub.url)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [line]
    assert result.stdout == ""


def test_search_without_a_worker_is_one_clear_line() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = _search("hi", "--site", "acme", "--url", url)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"no Worker at {url}: start it with `helppuff serve`"]
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["hi", "--site", "acme", "--limit", "0"], "helppuff search: --limit must be from 1 to 20, got 0"),
        (["hi", "--site", "acme", "--limit", "21"], "helppuff search: --limit must be from 1 to 20, got 21"),
        (["  ", "--site", "acme"], "helppuff search: the query must not be empty"),
        (["hi", "--site", "acme", "--url", "127.0.0.1:8787"],
         "helppuff search: --url must start with http:// or https://, got '127.0.0.1:8787'"),
    ],
)
def test_search_bad_input_is_exit_2(args: list[str], message: str) -> None:
    result = _search(*args)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [message]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "0"], "helppuff serve: port must not be 0: the Worker needs a known port"),
        (["--port", "70000"], "helppuff serve: port must be a port number (0-65535), got 70000"),
        (["--cloud-port", "-1"], "helppuff serve: cloud-port must be a port number (0-65535), got -1"),
    ],
)
def test_serve_bad_ports_are_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    result = subprocess.run([HELPPUFF, "serve", "--data-dir", str(tmp_path), *args], cwd=ROOT,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == message


def test_serve_refuses_a_port_in_use(tmp_path: Path) -> None:
    try:
        find_toolchain()
    except DevServerError as exc:
        pytest.skip(str(exc))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run([HELPPUFF, "serve", "--data-dir", str(tmp_path), "--port", str(port)], cwd=ROOT,
                                capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == f"helppuff serve: port {port} on 127.0.0.1 is in use: pass another --port"


def test_a_missing_toolchain_names_the_setup_script(tmp_path: Path) -> None:
    worker = tmp_path / "worker"
    worker.mkdir()
    with pytest.raises(DevServerError) as caught:
        find_toolchain(worker)
    assert str(caught.value) == (
        "the Worker's toolchain is not installed (worker/.node/bin/node, "
        "worker/node_modules/wrangler/bin/wrangler.js missing): run `bash scripts/setup-worker.sh`"
    )


def test_wrangler_runs_local_on_loopback_with_the_token_in_a_file_only() -> None:
    tool = Toolchain(Path("/w/.node/bin/node"), Path("/w/node_modules/wrangler/bin/wrangler.js"))
    options = DevOptions(data_dir=Path("/kb"), port=9787, worker_dir=Path("/w"))
    assert wrangler_command(tool, options, Path("/tmp/x/local-cloud.env"), Path("/tmp/x/state")) == [
        "/w/.node/bin/node", "/w/node_modules/wrangler/bin/wrangler.js", "dev",
        "--config", "/w/wrangler.jsonc",
        "--local", "--env", "local", "--env-file", "/tmp/x/local-cloud.env",
        "--ip", "127.0.0.1", "--port", "9787",
        "--persist-to", "/tmp/x/state",
        "--show-interactive-dev-session=false",
        "--log-level", "info",
    ]


def test_wrangler_gets_no_credentials_and_the_offline_switches() -> None:
    tool = Toolchain(Path("/w/.node/bin/node"), Path("/w/node_modules/wrangler/bin/wrangler.js"))
    base = {"PATH": "/usr/bin", "HOME": "/root", "CLOUDFLARE_API_TOKEN": "t", "CLOUDFLARE_ACCOUNT_ID": "a",
            "CLOUDFLARE_API_KEY": "k", "CLOUDFLARE_EMAIL": "e", "WRANGLER_SEND_METRICS": "true"}
    assert wrangler_environment(tool, base) == {
        "PATH": f"/w/.node/bin{os.pathsep}/usr/bin",
        "HOME": "/root",
        "CLOUDFLARE_CF_FETCH_ENABLED": "false",
        "WRANGLER_SEND_METRICS": "false",
        "WRANGLER_SEND_ERROR_REPORTS": "false",
        "WRANGLER_HIDE_BANNER": "true",
        "WRANGLER_NO_SKILLS_UPDATE_PROMPTS": "true",
        "DO_NOT_TRACK": "1",
        "NO_COLOR": "1",
        "FORCE_COLOR": "0",
    }


def test_the_wrangler_config_has_the_local_env() -> None:
    text = (WORKER_DIR / "wrangler.jsonc").read_text(encoding="utf-8")
    assert '"local": {' in text and '"HELPPUFF_VECTORIZE_INDEX": "helppuff"' in text


_WARNING = [
    "▲ [WARNING] Processing wrangler.jsonc configuration:",
    "",
    '    - "env.local" environment configuration',
    '      - "d1_databases" exists at the top level, but not on "env.local".',
    '        This is not what you probably want, since "d1_databases" is not inherited by environments.',
    '        Please add "d1_databases" to "env.local".',
    '      - There is a vectorize binding with name "VECTORIZE" at the top level, but not on "env.local".',
    '        This is not what you probably want, since "vectorize" configuration is not inherited by environments.',
    '        Please add a binding for "VECTORIZE" to "env.local.vectorize.bindings".',
    '      - "ai" exists at the top level, but not on "env.local".',
    '        This is not what you probably want, since "ai" is not inherited by environments.',
    '        Please add "ai" to "env.local".',
    "",
    "",
]
_OTHER_WARNING = [
    "▲ [WARNING] Processing wrangler.jsonc configuration:",
    '    - "env.local" environment configuration',
    '      - Unexpected fields found in env.local field: "colour"',
]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["⎔ Starting local server...", *_WARNING, "[wrangler:info] Ready on http://127.0.0.1:8787"],
         ["⎔ Starting local server...", "[wrangler:info] Ready on http://127.0.0.1:8787"]),
        ([*_OTHER_WARNING, "[wrangler:info] Ready"], [*_OTHER_WARNING, "[wrangler:info] Ready"]),
        (_WARNING, []),  # at the end of the output
        (["[wrangler:info] POST /v1/sites/acme/search 200 OK (12ms)"],
         ["[wrangler:info] POST /v1/sites/acme/search 200 OK (12ms)"]),
        ([*_WARNING[:1], "✘ [ERROR] something else"], [*_WARNING[:1], "✘ [ERROR] something else"]),
    ],
)
def test_only_the_env_local_inheritance_warning_is_dropped(lines: list[str], expected: list[str]) -> None:
    assert list(drop_inheritance_warnings(lines)) == expected
