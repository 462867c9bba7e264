"""A generated small-business-like site of N pages, served from memory on 127.0.0.1.

Pages /p/<i> (about 4 KB of text each) link to the home page and to a few other pages; the
home page links to the first 40; /sitemap.xml lists every page; /robots.txt names it.
"""

from __future__ import annotations

import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_WORDS = ("plumbing hot water repair drain blocked leak tap install service price quote call "
          "emergency licensed local team family guarantee Richmond Carlton Fitzroy gas heater "
          "bathroom kitchen renovation inspection camera roots pipe burst toilet cistern").split()


def _page(i: int, n: int, rng: random.Random) -> bytes:
    title = f"Service page {i} | Example Plumbing"
    paragraphs = "".join(
        "<p>" + " ".join(rng.choice(_WORDS) for _ in range(60)) + ".</p>\n" for _ in range(8)
    )
    links = "".join(f'<li><a href="/p/{rng.randrange(n)}">Page</a></li>' for _ in range(5))
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body>"
        f'<header><nav><a href="/">Home</a> <a href="/p/0">First</a></nav></header>'
        f"<main><h1>{title}</h1>{paragraphs}<ul>{links}</ul></main>"
        f"<footer>Example Plumbing, 03 9000 0000</footer></body></html>"
    ).encode()


def build_site(n: int, seed: int = 7) -> dict[str, tuple[str, bytes]]:
    rng = random.Random(seed)
    files: dict[str, tuple[str, bytes]] = {}
    for i in range(n):
        files[f"/p/{i}"] = ("text/html; charset=utf-8", _page(i, n, rng))
    home_links = "".join(f'<li><a href="/p/{i}">Page {i}</a></li>' for i in range(min(n, 40)))
    files["/"] = ("text/html; charset=utf-8",
                  f"<html><head><title>Example Plumbing</title></head><body><main><h1>Welcome</h1>"
                  f"<p>{' '.join(_WORDS)}</p><ul>{home_links}</ul></main></body></html>".encode())
    return files


class GeneratedSite:
    def __init__(self, n: int, delay: float = 0.0) -> None:
        files = build_site(n)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                origin = f"http://127.0.0.1:{self.server.server_address[1]}"
                path = self.path.split("?", 1)[0]
                if path == "/robots.txt":
                    ctype, body = "text/plain", f"User-agent: *\nAllow: /\nSitemap: {origin}/sitemap.xml\n".encode()
                elif path == "/sitemap.xml":
                    locs = "".join(f"<url><loc>{origin}{p}</loc></url>" for p in files if p != "/")
                    ctype = "application/xml"
                    body = ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                            f"{locs}</urlset>").encode()
                elif path in files:
                    ctype, body = files[path]
                    if delay:
                        time.sleep(delay)
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.paths = [p for p in files if p != "/"]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
