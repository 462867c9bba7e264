"""Rendered pages held to the site and to public addresses (handlers/browser.py).

The SOCKS5 guard is tested first on its own with a hand-written client, then real Chromium renders
pages that try to leave: a script navigating to another host, a frame of another host, an image
whose URL redirects to a private address, a page whose own URL redirects there, WebRTC. The other
host (127.0.0.2) must never be asked for anything. Skipped without Chromium (/usr/bin/chromium)."""

from __future__ import annotations

import asyncio
import shutil
import socket
import struct
import threading
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy.utils.misc import build_from_crawler

from helppuff_crawl.handlers.browser import BrowserGuard, GuardedPlaywrightHandler
from helppuff_crawl.web.addresses import AddressPolicy
from tests.conftest import kb_rows, make_crawler, project_settings, run_async
from tests.crawlers import component_crawler
from tests.guard_sites import SECRET, page, start_pair
from tests.names import mapped_names

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is absent: nothing to render with")
BOTH_LOOPBACKS = pytest.mark.allow_hosts(["127.0.0.1", "127.0.0.2"])


# --- the SOCKS5 guard on its own -------------------------------------------------------------


async def _socks(port: int, host: str, target_port: int) -> tuple[int, asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect through the guard as Chromium does (a host name, unresolved); the reply's code."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"\x05\x01\x00")
    await writer.drain()
    assert await reader.readexactly(2) == b"\x05\x00"
    name = host.encode()
    writer.write(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack("!H", target_port))
    await writer.drain()
    reply = await reader.readexactly(10)
    return reply[1], reader, writer


async def _get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> bytes:
    writer.write(f"GET {path} HTTP/1.0\r\nHost: site.test\r\n\r\n".encode())
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()


@BOTH_LOOPBACKS
@pytest_twisted.ensureDeferred
async def test_the_guard_connects_only_to_allowed_addresses(tmp_path: Path) -> None:
    crawler = component_crawler()
    guard = BrowserGuard(AddressPolicy.from_setting("127.0.0.1"), crawler, connect_timeout=5)

    async def scenario(site: Any, other: Any) -> None:
        await guard.start()
        try:
            code, reader, writer = await _socks(guard.port, "site.test", site.port)
            assert code == 0
            assert b"Services is what" in await _get(reader, writer, "/services")
            for host in ("www.site.test", "127.0.0.2"):  # a name that resolves there, and the literal
                code, reader, writer = await _socks(guard.port, host, other.port)
                assert code == 2  # "connection not allowed by ruleset"
                assert await _get(reader, writer, "/admin") == b""  # nothing reached the host
            code, reader, writer = await _socks(guard.port, "nowhere.test", site.port)
            assert code == 4  # host unreachable: the name does not resolve
            writer.close()
        finally:
            await guard.close()

    with start_pair(tmp_path, lambda port: {"/services": page("Services")}, lambda port: {}) as (site, other), \
            mapped_names({"site.test": "127.0.0.1", "www.site.test": "127.0.0.2"}):
        await run_async(scenario(site, other))
        assert site.requests == ["/services"] and other.requests == []
    assert guard.refused == {"www.site.test": "www.site.test resolves to 127.0.0.2, a loopback address",
                             "127.0.0.2": "127.0.0.2 is a loopback address"}
    assert crawler.stats.get_value("helppuff/guard/refused/loopback") == 2


def test_a_browser_the_guard_cannot_stand_before_is_refused() -> None:
    for setting in ({"PLAYWRIGHT_CDP_URL": "http://127.0.0.1:9222"},
                    {"PLAYWRIGHT_LAUNCH_OPTIONS": {"proxy": {"server": "http://127.0.0.1:3128"}}}):
        with pytest.raises(ValueError, match="bypass the rendered pages' address checks"):
            build_from_crawler(GuardedPlaywrightHandler, component_crawler(HELPPUFF_ALLOW_PRIVATE_ADDRESSES=False,
                                                                          **setting))


# --- rendered pages in Chromium --------------------------------------------------------------


def _pages(port: int) -> dict[str, str]:
    other = f"http://127.0.0.2:{port}"
    paths = ("/script-nav", "/framed", "/hop-image", "/go", "/go-away")
    links = "".join(f'<a href="{path}">{path}</a> ' for path in paths)
    return {
        "/": page("Home", f"<p>{links}</p>"),
        # A script sends the page elsewhere before it has loaded.
        "/script-nav": page("Moving", head=f"<script>location.href = '{other}/admin';</script>"),
        # A frame of another host (the page's load waits for its frames).
        "/framed": page("Map", f'<iframe src="{other}/frame"></iframe>'),
        # An image on the site whose URL redirects to a private address (the load waits for it).
        "/hop-image": page("Prices", '<img src="/hop" alt="">'),
    }


def _routes(port: int) -> dict[str, dict[str, Any]]:
    return {
        "/hop": {"status": 302, "headers": {"Location": f"http://www.site.test:{port}/admin"}},
        "/go": {"status": 302, "headers": {"Location": f"http://www.site.test:{port}/admin"}},
        "/go-away": {"status": 302, "headers": {"Location": f"http://127.0.0.2:{port}/admin"}},
    }


def _rows(tmp_path: Path, origin: str) -> dict[str, dict[str, Any]]:
    return {r["url"].removeprefix(origin): r for r in kb_rows(tmp_path / "kb", "SELECT * FROM pages")}


@needs_chromium
@BOTH_LOOPBACKS
@pytest_twisted.ensureDeferred
async def test_rendered_pages_never_reach_a_private_address(tmp_path: Path) -> None:
    # site.test stands for a public site; www.site.test (the same site) resolves to 127.0.0.2.
    with start_pair(tmp_path, _pages, _routes) as (site, other), \
            mapped_names({"site.test": "127.0.0.1", "www.site.test": "127.0.0.2"}):
        origin = f"http://site.test:{site.port}"
        crawler = make_crawler(project_settings(tmp_path, HELPPUFF_ALLOW_PRIVATE_ADDRESSES="127.0.0.1"))
        await crawler.crawl(url=origin, site="render", render_js="always")
        assert other.requests == []
        assert "/hop" in site.requests and "/go" in site.requests  # the pages were asked for, through the guard
    pages = _rows(tmp_path, origin)
    stats = crawler.stats.get_stats()
    refused = "refused: www.site.test resolves to 127.0.0.2, a loopback address"
    elsewhere = f"redirected to another site: http://127.0.0.2:{site.port}/admin"
    assert pages[""]["status"] == "ok" and pages[""]["rendered"] == 1
    assert (pages["/script-nav"]["status"], pages["/script-nav"]["reason"]) == ("skipped", elsewhere)
    assert (pages["/go"]["status"], pages["/go"]["reason"]) == ("skipped", refused)
    assert (pages["/go-away"]["status"], pages["/go-away"]["reason"]) == ("skipped", elsewhere)
    # A subresource refused leaves the page as it is without it.
    assert pages["/hop-image"]["status"] == "ok" and pages["/hop-image"]["rendered"] == 1
    assert pages["/framed"]["status"] == "ok"
    assert stats["helppuff/guard/refused/loopback"] >= 3  # /hop's and /go's www.site.test, /go-away's 127.0.0.2
    assert stats["helppuff/guard/browser/connections"] >= 5
    assert SECRET not in " ".join(r["text"] for r in kb_rows(tmp_path / "kb", "SELECT text FROM chunks"))


@needs_chromium
@BOTH_LOOPBACKS
@pytest_twisted.ensureDeferred
async def test_a_rendered_page_does_not_load_another_site_s_documents(tmp_path: Path) -> None:
    # Every address allowed: what keeps the browser off the other host is the site rule alone.
    with start_pair(tmp_path, lambda port: {p: h for p, h in _pages(port).items() if p in ("/", "/script-nav", "/framed")},
                    lambda port: {}) as (site, other):
        crawler = make_crawler(project_settings(tmp_path))
        await crawler.crawl(url=site.url, site="render", render_js="always")
        assert other.requests == []
    pages = _rows(tmp_path, site.url)
    assert pages["/script-nav"]["status"] == "skipped"
    assert pages["/script-nav"]["reason"] == f"redirected to another site: http://127.0.0.2:{site.port}/admin"
    assert pages["/framed"]["status"] == "ok" and pages["/framed"]["rendered"] == 1
    assert crawler.stats.get_value("helppuff/guard/browser/offsite_documents") == 2


@needs_chromium
@pytest_twisted.ensureDeferred
async def test_webrtc_sends_nothing_around_the_guard(tmp_path: Path) -> None:
    # WebRTC's UDP (a STUN server on 127.0.0.2 here) would not go through the guard: Chromium is
    # launched with --webrtc-ip-handling-policy=disable_non_proxied_udp (settings.py).
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.2", 0))
        udp.settimeout(0.2)
        received: list[Any] = []
        done = threading.Event()

        def listen() -> None:
            while not done.is_set():
                try:
                    received.append(udp.recvfrom(2048))
                except OSError:
                    continue

        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        stun = f"stun:127.0.0.2:{udp.getsockname()[1]}"
        script = (f"<script>const pc = new RTCPeerConnection({{iceServers: [{{urls: '{stun}'}}]}});"
                  "pc.createDataChannel('x'); pc.createOffer().then(o => pc.setLocalDescription(o));</script>")
        waiting = '<img src="/slow" alt="">'  # the page's load waits 2 s: time for ICE to gather
        with start_pair(tmp_path, lambda port: {"/": page("Home", script + waiting)},
                        lambda port: {"/slow": {"delay": 2.0, "body": ""}}) as (site, _other):
            crawler = make_crawler(project_settings(tmp_path, HELPPUFF_ALLOW_PRIVATE_ADDRESSES="127.0.0.1",
                                                    HELPPUFF_MAX_PAGES=1))
            await crawler.crawl(url=site.url, site="render", render_js="always")
        done.set()
        listener.join()
    assert received == []
