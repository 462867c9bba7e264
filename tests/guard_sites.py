"""Two hosts on loopback for the guard's tests: the site, and another host with something to hide.

    site, other = start_pair(tmp_path, SITE_PAGES, site_routes)   # both on one port number

`site` serves on 127.0.0.1, `other` on 127.0.0.2 with the same port, so that a made-up name mapped
to 127.0.0.2 (tests/names.py) can be "www." of a name mapped to 127.0.0.1 (one site, by the
project's rule, since the port is the same) while 127.0.0.2 is a private address.
`other` answers /admin (and /intranet, /frame) with SECRET, which no test may ever find learned.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.sitesserver import SiteServer

SECRET = "Staff only: the alarm code is 4321"
_SENTENCES = ("is what our family business has offered the inner suburbs for twenty years",
              "comes with licensed tradespeople, upfront prices and a workmanship guarantee on every job",
              "is booked by phone or online, and we call back within the hour on working days")


def page(title: str, body: str = "", head: str = "") -> str:
    """A page with enough text of its own to be learned (none of it site-wide), `body` after it."""
    text = "".join(f"<p>{title} {sentence}. {title} {sentence}.</p>" for sentence in _SENTENCES)
    return (f"<!DOCTYPE html><html><head><title>{title}</title>{head}</head><body><main><h1>{title}</h1>"
            f"{text}{body}</main></body></html>")


OTHER_ROUTES = {path: {"body": page("Staff area", f"<p>{SECRET}</p>")} for path in ("/admin", "/intranet", "/frame")}


def _write(folder: Path, pages: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for path, html in pages.items():
        name = "index" if path == "/" else path.strip("/")
        (folder / f"{name}.html").write_text(html, encoding="utf-8")
    return folder


@contextlib.contextmanager
def start_pair(tmp_path: Path, pages: Callable[[int], dict[str, str]],
               routes: Callable[[int], dict[str, dict[str, Any]]],
               other_routes: dict[str, dict[str, Any]] | None = None) -> Iterator[tuple[SiteServer, SiteServer]]:
    """The site (127.0.0.1:P, `pages(P)` and `routes(P)`) and the other host (127.0.0.2:P, with
    `other_routes` too), stopped after."""
    for _ in range(20):
        with socket.socket() as probe:
            probe.bind(("127.0.0.2", 0))
            port = probe.getsockname()[1]
        try:
            other = SiteServer(_write(tmp_path / "other", {}), port=port, host="127.0.0.2",
                               routes={**OTHER_ROUTES, **(other_routes or {})})
        except OSError:
            continue
        try:
            site = SiteServer(_write(tmp_path / "site", pages(port)), port=port, routes=routes(port))
        except OSError:
            other.httpd.server_close()
            continue
        break
    else:  # pragma: no cover - twenty taken ports in a row
        raise RuntimeError("no port free on both 127.0.0.1 and 127.0.0.2")
    with site, other:
        yield site, other
