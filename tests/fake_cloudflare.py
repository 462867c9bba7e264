"""A fake Cloudflare API on a real loopback HTTP server, for contract tests of the client.

It records every request as it arrived (method, raw path with its query, headers, body bytes) and
answers with canned Cloudflare-shaped responses, programmed per (method, path):

    with FakeCloudflare() as fake:
        fake.on("POST", "/accounts/acc/ai/run/@cf/baai/bge-m3",
                Canned(429, errors=[(3040, "Out of capacity")], headers={"Retry-After": "0"}),
                Canned(200, result={"shape": [1, 3], "data": [[0.1, 0.2, 0.3]]}))
        client = CloudflareClient(HttpTransport("token", fake.url), "acc")
        ...
        fake.requests[0].path  # "/client/v4/accounts/acc/ai/run/@cf/baai/bge-m3"

Paths given to `on` are under /client/v4 and matched without the query string, against the raw
request target (not unescaped, so an escaped `%40cf%2F...` does not match `@cf/...`). The answers
of a route are used in turn; the last one repeats. Unprogrammed routes answer 404, code 7003.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

PREFIX = "/client/v4"


@dataclass
class Canned:
    status: int = 200
    result: Any = None
    errors: list[tuple[int, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # a body sent as is, instead of the envelope

    def body(self) -> bytes:
        if self.raw is not None:
            return self.raw
        ok = self.status < 400 and not self.errors
        envelope = {
            "success": ok,
            "errors": [{"code": code, "message": message} for code, message in self.errors],
            "messages": [],
            "result": self.result if ok else None,
        }
        return json.dumps(envelope).encode("utf-8")


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str  # raw request target, with the query string
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def route(self) -> str:
        return self.path.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.path.partition("?")[2]

    def json(self) -> Any:
        return json.loads(self.body)

    def ndjson(self) -> list[Any]:
        return [json.loads(line) for line in self.body.decode("utf-8").splitlines() if line.strip()]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        fake = self.server.fake
        fake._record(Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        canned = fake._next(self.command, self.path.split("?", 1)[0])
        data = canned.body()
        self.send_response(canned.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in canned.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeCloudflare) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


class FakeCloudflare:
    """The fake API; use as a context manager (starts and stops the server)."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._routes: dict[tuple[str, str], list[Canned]] = {}
        self._lock = threading.Lock()
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{PREFIX}"

    def on(self, method: str, path: str, *answers: Canned) -> None:
        """Program the answers of one route (path under /client/v4, without query)."""
        if not answers:
            raise ValueError("give at least one answer")
        with self._lock:
            self._routes[(method, PREFIX + path)] = list(answers)

    def _record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def _next(self, method: str, route: str) -> Canned:
        with self._lock:
            answers = self._routes.get((method, route))
            if not answers:
                return Canned(404, errors=[(7003, f"Could not route to {route}")])
            return answers.pop(0) if len(answers) > 1 else answers[0]

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
