"""A real HTTP server for the fixture sites: stdlib ThreadingHTTPServer on 127.0.0.1, port 0.

Each site gets its own server (its own port, so its own /robots.txt); another loopback address
(`host="127.0.0.2"`) is another host. Every request's path is kept in `requests`, in order.
In .html, .xml and .txt files, the text `http://SITE_ORIGIN` is replaced by the server's own origin, so sitemaps and
robots.txt can name absolute URLs. Beyond static files, a site folder may hold `_routes.json`,
a map from path to a canned answer, for what files cannot express:

    {"/old": {"status": 301, "headers": {"Location": "/new"}},
     "/blocked": {"status": 403, "body": "Forbidden"},
     "/slow": {"status": 200, "delay": 2.0, "body": "..."},
     "/sitemap-pages.xml.gz": {"file": "sitemap-pages.xml", "gzip": true}}

or given to the server (`routes=`, over the file's), for answers that name another server.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class _Handler(SimpleHTTPRequestHandler):
    routes: dict[str, dict[str, Any]] = {}

    def __init__(self, *args: Any, routes: dict[str, dict[str, Any]], seen: list[str], **kwargs: Any) -> None:
        self.routes = routes
        self.seen = seen
        super().__init__(*args, **kwargs)

    @property
    def origin(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def _file_bytes(self, path: Path) -> bytes:
        data = path.read_bytes()
        if path.suffix in (".html", ".xml", ".txt"):
            data = data.replace(b"http://SITE_ORIGIN", self.origin.encode())
        return data

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _canned(self) -> bool:
        path = self.path.split("?", 1)[0]
        route = self.routes.get(self.path) or self.routes.get(path)
        if route is None:
            return False
        if route.get("delay"):
            time.sleep(float(route["delay"]))
        if "file" in route:
            data = self._file_bytes(Path(self.directory) / route["file"])
        else:
            body = route.get("body", "")
            data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
        if route.get("gzip"):
            data = gzip.compress(data, mtime=0)
        if "repeat" in route:
            data = data * int(route["repeat"])
        self.send_response(int(route.get("status", 200)))
        headers = {"Content-Type": "text/html; charset=utf-8", **route.get("headers", {})}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        return True

    def do_GET(self) -> None:
        self.seen.append(self.path)
        if self._canned():
            return
        fs_path = self._page_path()
        if fs_path.is_file() and fs_path.suffix in (".html", ".xml", ".txt"):
            # Templated text files: served whole, with the origin filled in.
            data = self._file_bytes(fs_path)
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(str(fs_path)))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        super().do_GET()

    def do_HEAD(self) -> None:
        self.seen.append(self.path)
        if not self._canned():
            super().do_HEAD()

    def guess_type(self, path: str | Any) -> str:
        name = str(path)
        if name.endswith(".gz"):
            return "application/gzip"
        if name.endswith((".html", ".htm")) or "." not in Path(name).name:
            return "text/html; charset=utf-8"
        return super().guess_type(path)

    def _page_path(self) -> Path:
        """Extension-less paths are pages, as on static hosts: /about and /about/ serve about.html."""
        fs_path = Path(self.translate_path(self.path))
        if fs_path.is_file():
            return fs_path
        page = Path(str(fs_path).rstrip("/") + ".html")
        if page.is_file():
            return page
        index = fs_path / "index.html"
        return index if index.is_file() else fs_path


class SiteServer:
    """Serve one folder on 127.0.0.1 (or `host`) in a daemon thread; `url` is its root without a
    trailing slash; `requests` the paths asked for."""

    def __init__(self, root: Path, port: int = 0, *, host: str = "127.0.0.1",
                 routes: dict[str, dict[str, Any]] | None = None) -> None:
        routes_file = root / "_routes.json"
        canned = json.loads(routes_file.read_text()) if routes_file.exists() else {}
        self.requests: list[str] = []
        handler = partial(_Handler, directory=str(root), routes={**canned, **(routes or {})}, seen=self.requests)
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> SiteServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main() -> None:
    """`python -m tests.sitesserver FOLDER --port N`: serve a fixture site until interrupted."""
    import argparse

    parser = argparse.ArgumentParser(description="serve a fixture site on 127.0.0.1")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = SiteServer(args.folder.resolve(), port=args.port)
    print(f"serving {args.folder} at {server.url}", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()


if __name__ == "__main__":
    main()
