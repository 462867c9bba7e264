"""Rendered pages held to the same rules as fetched ones: the site, and public addresses only.

Enable (requests with meta ``playwright=True`` are rendered in Chromium; the others go through
Scrapy's own HTTP handler, as with scrapy-playwright's handler, which this one extends)::

    DOWNLOAD_HANDLERS = {"http": "helppuff_crawl.handlers.browser.GuardedPlaywrightHandler",
                         "https": "helppuff_crawl.handlers.browser.GuardedPlaywrightHandler"}

A rendered page makes requests of its own (scripts, styles, XHR, frames, navigations, redirects
of any of them), which the downloader middlewares never see. Two guards hold them:

- Addresses: Chromium is launched with :class:`BrowserGuard`, a SOCKS5 proxy on 127.0.0.1, as its
  only way out. Chromium sends it host names unresolved (Playwright maps every local lookup to
  "not found" for a SOCKS proxy), so every connection the browser makes (every redirect hop,
  subresource, WebSocket) is resolved here, through the reactor's name resolver as Scrapy's own
  connections are, every address checked (``web.addresses``, HELPPUFF_ALLOW_PRIVATE_ADDRESSES),
  and made to the address checked: DNS rebinding cannot slip another address in between. A refused
  connection is answered "not allowed by ruleset" and nothing is sent to the host.
- The site: a document (a navigation of the page or of a frame) of another site than the crawl's
  (HELPPUFF_START_URL; ``web.urls.same_site``) is aborted in the page's route handler, after any
  PLAYWRIGHT_ABORT_REQUEST predicate. Chromium follows redirects without asking the route handler,
  so every navigation of the main frame is also watched: a page whose main frame went to another
  site, or to a refused address, is not the page. Its download raises
  :class:`~helppuff_crawl.middlewares.guard.OffsiteRedirect` (``redirected to another site: URL``)
  or :class:`~helppuff_crawl.middlewares.guard.AddressRefused` (``refused: ...``), which the
  spider records as the page's reason.

A page is read once its network has been idle for 500 ms, at most 3 s after its load event (and
after a request's `playwright_page_methods`): scripts often fetch the content after the load event.

Service workers are blocked in every context (they fetch outside the page's routes), and WebRTC
sends no UDP (PLAYWRIGHT_LAUNCH_OPTIONS in settings.py: --webrtc-ip-handling-policy). A remote
browser (PLAYWRIGHT_CDP_URL, PLAYWRIGHT_CONNECT_URL) or a proxy of one's own cannot be guarded and
is refused unless HELPPUFF_ALLOW_PRIVATE_ADDRESSES is true.

Stats: helppuff/guard/browser/{connections,offsite_documents}, helppuff/guard/refused/<kind>.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import struct
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from helppuff_crawl.middlewares.guard import (
    AddressRefused,
    OffsiteRedirect,
    resolve,
)
from helppuff_crawl.web.addresses import AddressPolicy, parse_address
from helppuff_crawl.web.page_status import OFFSITE
from helppuff_crawl.web.urls import same_site

if TYPE_CHECKING:
    from playwright.async_api import Page
    from playwright.async_api import Request as PlaywrightRequest
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

logger = logging.getLogger(__name__)

# SOCKS5 (RFC 1928): the replies this proxy gives.
_SUCCEEDED, _FAILURE, _NOT_ALLOWED, _HOST_UNREACHABLE, _REFUSED, _BAD_COMMAND, _BAD_ADDRESS = 0, 1, 2, 4, 5, 7, 8
_HANDSHAKE_TIMEOUT = 10.0
_BUFFER = 64 * 1024
# A page's scripts often fetch its content after the load event (a menu read from ./menu.json):
# the page is read once its network has been idle for 500 ms ("networkidle"), or after this long.
_SETTLE_MS = 3_000


class BrowserGuard:
    """A SOCKS5 proxy on 127.0.0.1 that connects only to the addresses `policy` allows."""

    def __init__(self, policy: AddressPolicy, crawler: Crawler, connect_timeout: float) -> None:
        self.policy = policy
        self.crawler = crawler
        self.stats = crawler.stats
        self.connect_timeout = connect_timeout
        self.refused: dict[str, str] = {}  # host -> why it was refused (the first time)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def proxy(self) -> dict[str, str]:
        """Playwright's `proxy` option for this guard."""
        return {"server": f"socks5://127.0.0.1:{self.port}"}

    async def start(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        upstream: asyncio.StreamWriter | None = None
        try:
            try:
                host, port = await asyncio.wait_for(self._handshake(reader, writer), _HANDSHAKE_TIMEOUT)
            except (TimeoutError, _SocksError, asyncio.IncompleteReadError, ConnectionError) as exc:
                if isinstance(exc, _SocksError):
                    await _reply(writer, exc.code)
                return
            connected = await self._connect(host, port, writer)
            if connected is None:
                return
            up_reader, upstream = connected
            await _reply(writer, _SUCCEEDED)
            await asyncio.gather(_pipe(reader, upstream), _pipe(up_reader, writer))
        except (ConnectionError, OSError):
            pass
        except Exception:
            logger.debug("Browser proxy connection failed", exc_info=True)
        finally:
            for stream in (upstream, writer):
                if stream is not None:
                    stream.close()
            if task is not None:
                self._tasks.discard(task)

    async def _handshake(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> tuple[str, int]:
        version, count = await reader.readexactly(2)
        methods = await reader.readexactly(count)
        if version != 5 or 0 not in methods:  # SOCKS5 with "no authentication", or nothing
            writer.write(b"\x05\xff")
            await writer.drain()
            raise ConnectionError("not a SOCKS5 client")
        writer.write(b"\x05\x00")
        await writer.drain()
        version, command, _, kind = await reader.readexactly(4)
        if version != 5:
            raise _SocksError(_FAILURE)
        if kind == 1:
            host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
        elif kind == 3:
            name = (await reader.readexactly((await reader.readexactly(1))[0])).decode("ascii", "replace")
            literal = parse_address(name)
            host = str(literal) if literal is not None else name.rstrip(".").lower()
        elif kind == 4:
            host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
        else:
            raise _SocksError(_BAD_ADDRESS)
        (port,) = struct.unpack("!H", await reader.readexactly(2))
        if command != 1:  # CONNECT only: no BIND, no UDP ASSOCIATE
            raise _SocksError(_BAD_COMMAND)
        return host, port

    async def _connect(
        self, host: str, port: int, client: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        self.stats.inc_value("helppuff/guard/browser/connections")
        literal = parse_address(host)
        addresses = [str(literal)] if literal is not None else await resolve(host, port)
        if not addresses:
            await _reply(client, _HOST_UNREACHABLE)
            return None
        if not self.policy.allow_all and (refusal := self.policy.host_refusal(host, addresses)) is not None:
            self.refused.setdefault(host, refusal.reason)
            self.stats.inc_value(f"helppuff/guard/refused/{refusal.kind}")
            logger.warning("Refused a rendered page's connection to %s:%d: %s", host, port, refusal.reason,
                           extra={"spider": self.crawler.spider})
            await _reply(client, _NOT_ALLOWED)
            return None
        for address in addresses:  # to the addresses checked, never a fresh lookup
            try:
                return await asyncio.wait_for(asyncio.open_connection(address, port), self.connect_timeout)
            except Exception as exc:  # noqa: BLE001 - any failure to connect: the next address, else "refused"
                logger.debug("Browser proxy: %s:%d (%s) unreachable: %r", host, port, address, exc)
        await _reply(client, _REFUSED)
        return None


class _SocksError(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


async def _reply(writer: asyncio.StreamWriter, code: int) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        writer.write(bytes([5, code, 0, 1]) + bytes(6))  # bound address 0.0.0.0:0
        await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then half-close; a broken side closes both."""
    try:
        while data := await reader.read(_BUFFER):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.close()


class _MainFrameNavigations:
    """The URLs the page's main frame asked for, redirect hops included, in order."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def __call__(self, request: PlaywrightRequest) -> None:
        try:
            main = request.is_navigation_request() and request.frame.parent_frame is None
        except Exception:  # noqa: BLE001 - a service worker's request has no frame
            return
        if main and request.url.startswith(("http://", "https://")):
            self.urls.append(request.url)


class GuardedPlaywrightHandler(ScrapyPlaywrightDownloadHandler):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        policy = AddressPolicy.from_setting(settings.get("HELPPUFF_ALLOW_PRIVATE_ADDRESSES"))
        if not policy.allow_all and (self.config.cdp_url or self.config.connect_url
                                     or self.config.launch_options.get("proxy")):
            raise ValueError("PLAYWRIGHT_CDP_URL, PLAYWRIGHT_CONNECT_URL and a proxy in PLAYWRIGHT_LAUNCH_OPTIONS "
                             "bypass the rendered pages' address checks: use them only with "
                             "HELPPUFF_ALLOW_PRIVATE_ADDRESSES=true")
        self.site = settings.get("HELPPUFF_START_URL") or ""  # "" outside the site spider: no site rule
        self.guard = BrowserGuard(policy, crawler, settings.getfloat("DOWNLOAD_TIMEOUT"))
        self._abort_first: Any = self.abort_request  # PLAYWRIGHT_ABORT_REQUEST, if any
        self.abort_request = self._abort_request

    async def _launch(self) -> None:
        await self.guard.start()
        if not self.config.cdp_url and not self.config.connect_url:
            self.config.launch_options["proxy"] = self.guard.proxy
        await super()._launch()

    async def _close(self) -> None:
        try:
            await super()._close()
        finally:
            await self.guard.close()

    async def _create_browser_context(self, name: str, context_kwargs: dict | None,
                                      spider: Spider | None = None) -> Any:
        kwargs = {**(context_kwargs or {}), "service_workers": "block"}
        if kwargs.get("user_data_dir") or kwargs.get("proxy"):
            # A persistent context is launched on its own, and a context may name its own proxy.
            kwargs["proxy"] = self.guard.proxy
        return await super()._create_browser_context(name, kwargs, spider)

    async def _abort_request(self, request: PlaywrightRequest) -> bool:
        if self._abort_first is not None:
            verdict = self._abort_first(request)
            if asyncio.iscoroutine(verdict):
                verdict = await verdict
            if verdict:
                return True
        if (self.site and request.resource_type == "document" and request.url.startswith(("http://", "https://"))
                and not same_site(request.url, self.site)):
            self.stats.inc_value("helppuff/guard/browser/offsite_documents")
            logger.info("Aborted a rendered page's navigation to %s: another site", request.url)
            return True
        return False

    async def _download_request_with_page(self, request: Request, page: Page, spider: Spider) -> Response:
        navigations = _MainFrameNavigations()
        page.on("request", navigations)
        try:
            response = await super()._download_request_with_page(request, page, spider)
        except Exception as exc:
            if (refusal := self._left(navigations.urls)) is not None:
                raise refusal from exc
            raise
        finally:
            page.remove_listener("request", navigations)
        if (refusal := self._left(navigations.urls)) is not None:
            raise refusal
        return response

    async def _apply_page_methods(self, page: Page, request: Request, spider: Spider) -> None:
        await super()._apply_page_methods(page, request, spider)
        with contextlib.suppress(PlaywrightTimeoutError):  # a page that keeps polling is read as it is
            await page.wait_for_load_state("networkidle", timeout=_SETTLE_MS)

    def _left(self, urls: list[str]) -> OffsiteRedirect | AddressRefused | None:
        """Why the main frame's navigations are not the page: another site, a refused address."""
        for url in urls:
            if self.site and not same_site(url, self.site):
                return OffsiteRedirect(f"{OFFSITE}: {url}")
            host = (urlsplit(url).hostname or "").lower()
            if host in self.guard.refused:
                return AddressRefused(f"refused: {self.guard.refused[host]}")
        return None
