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

A real site's folder can be served as its host serves it (tests/realsites.py names the options of
each shared site):

    SiteServer(root, domains=("eagleeyebackflow.ca",), fallback="index.html")

- `domains`: the site's production hosts. In .html, .xml, .txt, .json and .js files, absolute
  links to them (`https://eagleeyebackflow.ca/x`, `http://...`, `//eagleeyebackflow.ca/x`) are
  rewritten to the server's own origin, so sitemaps, canonical links and nav links point here.
- pretty URLs, as static hosts have them: `/about` serves about.html, `/x/` and `/x` x/index.html.
- `fallback`: a single-page app's host (Netlify's `/* /index.html 200`): an extension-less path
  with no file is answered 200 with that file.
- a path with no file answers the folder's own 404.html with status 404 when it has one (as GitHub
  Pages and Netlify do), else the stdlib's 404; a folder without index.html is never listed then.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import threading
import time
from collections.abc import Sequence
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_TEMPLATED = (".html", ".xml", ".txt")  # files whose `http://SITE_ORIGIN` is the server's origin
_REWRITTEN = (*_TEMPLATED, ".json", ".js")  # files whose links to the site's domains are rewritten


def domain_pattern(domains: Sequence[str]) -> re.Pattern[bytes] | None:
    """Absolute links to `domains` (any scheme or none: `https://d`, `http://d`, `//d`), not a longer
    host that starts with one (`d.example`), nor a subdomain of one (`cdn.d`)."""
    if not domains:
        return None
    hosts = b"|".join(re.escape(d.lower().encode()) for d in sorted(domains, key=len, reverse=True))
    return re.compile(rb"(?<![\w.-])(?:https?:)?//(?:" + hosts + rb")(?![\w.-])", re.IGNORECASE)


class _Handler(SimpleHTTPRequestHandler):
    routes: dict[str, dict[str, Any]] = {}

    def __init__(self, *args: Any, routes: dict[str, dict[str, Any]], seen: list[str],
                 domains: re.Pattern[bytes] | None = None, fallback: str | None = None, **kwargs: Any) -> None:
        self.routes = routes
        self.seen = seen
        self.domains = domains
        self.fallback = fallback
        super().__init__(*args, **kwargs)

    @property
    def origin(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def _file_bytes(self, path: Path) -> bytes:
        data = path.read_bytes()
        if path.suffix in _TEMPLATED:
            data = data.replace(b"http://SITE_ORIGIN", self.origin.encode())
        if self.domains is not None and path.suffix in _REWRITTEN:
            data = self.domains.sub(self.origin.encode(), data)
        return data

    def _rewrites(self, path: Path) -> bool:
        return path.suffix in _TEMPLATED or (self.domains is not None and path.suffix in _REWRITTEN)

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
        if not self._canned():
            self._serve()

    def do_HEAD(self) -> None:
        self.seen.append(self.path)
        if not self._canned():
            self._serve()

    def _serve(self) -> None:
        fs_path = self._page_path()
        status = 200
        if not fs_path.is_file() and self._hosted():
            fs_path, status = self._missing()
            if fs_path is None:
                self.send_error(404, "File not found")
                return
        if fs_path.is_file() and (self._rewrites(fs_path) or status != 200):
            # Templated text files (with the origin filled in) and error pages: served whole.
            data = self._file_bytes(fs_path)
            self.send_response(status)
            self.send_header("Content-Type", self.guess_type(str(fs_path)))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            return
        if self.command == "HEAD":
            super().do_HEAD()
        else:
            super().do_GET()

    def _hosted(self) -> bool:
        """Whether a missing file is answered as a host would (any host option given, or a 404.html)."""
        return self.domains is not None or self.fallback is not None or (Path(self.directory) / "404.html").is_file()

    def _missing(self) -> tuple[Path | None, int]:
        """What a host answers for a path with no file: the single-page app's page for an
        extension-less path (with `fallback`), else the site's 404.html, else nothing (stdlib 404)."""
        root = Path(self.directory)
        last = self.path.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        if self.fallback is not None and "." not in last and (root / self.fallback).is_file():
            return root / self.fallback, 200
        page = root / "404.html"
        return (page, 404) if page.is_file() else (None, 404)

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


class _Server(ThreadingHTTPServer):
    """A client that hangs up mid-answer (a browser cancelling a request it no longer needs) is not
    an error of the site's: a host logs nothing for it, and neither does this server."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class SiteServer:
    """Serve one folder on 127.0.0.1 (or `host`) in a daemon thread; `url` is its root without a
    trailing slash; `requests` the paths asked for."""

    def __init__(self, root: Path, port: int = 0, *, host: str = "127.0.0.1",
                 routes: dict[str, dict[str, Any]] | None = None, domains: Sequence[str] = (),
                 fallback: str | None = None) -> None:
        routes_file = root / "_routes.json"
        canned = json.loads(routes_file.read_text()) if routes_file.exists() else {}
        self.requests: list[str] = []
        handler = partial(_Handler, directory=str(root), routes={**canned, **(routes or {})}, seen=self.requests,
                          domains=domain_pattern(domains), fallback=fallback)
        self.httpd = _Server((host, port), handler)
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
