"""The local cloud over HTTP on loopback: what `helppuff serve` exposes to the Worker's dev mode.

    server, url = serve_local_cloud(LocalCloud(Path(".helppuff")), token="s3cret")
    client = CloudflareClient(HttpTransport("s3cret", url), LOCAL_ACCOUNT_ID)
    ...
    server.close()

`url` is the API base (`http://127.0.0.1:PORT/client/v4`), so `HttpTransport` works against it
unchanged. Every request must carry `Authorization: Bearer <token>` (the token given at start,
or a random one read from `server.token`); others get HTTP 401 with Cloudflare's code 10000.
The server binds a loopback address only, and serves each request on its own thread
(ThreadingHTTPServer), in a daemon thread of its own.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import secrets
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from helppuff_crawl.local.cloud import LocalCloud

logger = logging.getLogger(__name__)

API_PREFIX = "/client/v4"
MAX_BODY = 100 * 1024 * 1024  # Vectorize's upload limit


class LocalCloudServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer that hands each request to a LocalCloud."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], cloud: LocalCloud, token: str) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, _Handler)
        self.cloud = cloud
        self.token = token
        self._thread: threading.Thread | None = None

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (wrangler reloading the Worker) is not an error of ours.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            logger.debug("Client %s went away", client_address)
            return
        super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}{API_PREFIX}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.serve_forever, args=(0.1,), name="helppuff-local-cloud", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving and release the port (the LocalCloud stays open: its owner closes it)."""
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join()


class _Handler(BaseHTTPRequestHandler):
    server: LocalCloudServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: without TCP_NODELAY each answer waits ~40 ms
    # for the delayed ACK (measured: ~44 ms a call, ~1 ms with it).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s %s", self.address_string(), format % args)

    def _reply(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            if name.lower() not in ("content-type", "content-length"):
                self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, code: int, message: str) -> None:
        self._reply(status, {"success": False, "errors": [{"code": code, "message": message}],
                             "messages": [], "result": None})

    def _authorised(self) -> bool:
        given = self.headers.get("Authorization", "")
        expected = f"Bearer {self.server.token}"
        return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._error(413, 3006, "Request is too large")
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        if not self._authorised():
            self._error(401, 10000, "Authentication error")
            return
        if not self.path.startswith(API_PREFIX + "/"):
            self._error(404, 7000, f"No route for that URI: {self.path.split('?', 1)[0]}")
            return
        reply = self.server.cloud.serve(self.command, self.path, body, dict(self.headers.items()))
        self._reply(reply.status, reply.body, reply.headers)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


def serve_local_cloud(
    cloud: LocalCloud, host: str = "127.0.0.1", port: int = 0, *, token: str | None = None
) -> tuple[LocalCloudServer, str]:
    """Serve `cloud` over HTTP on a loopback address; returns the running server and its API base URL."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(f"the local cloud serves loopback addresses only (127.0.0.1, ::1, localhost), got {host!r}")
    if token is not None and not token:
        raise ValueError("token must not be empty")
    server = LocalCloudServer((host, port), cloud, token or secrets.token_urlsafe(24))
    server.start()
    logger.info("Local cloud serving %s on %s", cloud.data_dir, server.url)
    return server, server.url
