"""The crawler stays on the site, and on the public internet.

Enable (before the robots middleware, so that nothing is fetched for a refused request, not even
robots.txt)::

    DOWNLOADER_MIDDLEWARES = {"helppuff_crawl.middlewares.guard.SiteGuardMiddleware": 40}

Every request that reaches the downloader is checked here, redirected ones too (Scrapy's redirect
and meta-refresh middlewares send the request they build through the whole chain again):

- A redirect to another site is not followed: a request carrying ``redirect_urls`` whose URL is not
  on the site of the first of them (``web.urls.same_site``: the host without ``www.``, and the
  port) raises :class:`OffsiteRedirect`, whose message is the page's reason
  (``redirected to another site: URL``). http -> https and www. <-> the apex stay on the site.
  A request with meta ``allow_offsite`` (robots.txt, which RFC 9309 lets redirect anywhere, up to
  five times) is not held to this rule; it is still held to the next one.
- Only http(s) to public addresses: the host, an IP literal or a name resolved through the
  reactor's name resolver (the one Scrapy's connections use, so with Scrapy's DNS cache the address
  checked is the address connected to), must be public, every address it resolves to
  (``web.addresses``). Otherwise :class:`AddressRefused`, e.g. ``refused: 127.0.0.2 is a
  loopback address``, and nothing is sent. HELPPUFF_ALLOW_PRIVATE_ADDRESSES allows non-public
  addresses (all, or those listed). A name that does not resolve is left to the download, which
  fails as unreachable.
- After the download, the address the response came from (``Response.ip_address``) is checked
  again: a name that resolved to a public address here and to another one at connection time (DNS
  rebinding, with the DNS cache off or its entry evicted) gives a refused page, never a learned
  one. Rendered pages are checked by the browser's own guard (``handlers/browser.py``), and
  responses through an HTTP proxy come from the proxy's address, so neither is checked here.

Settings: HELPPUFF_ALLOW_PRIVATE_ADDRESSES. Stats: helppuff/guard/offsite_redirects,
helppuff/guard/refused/<kind> (loopback, private, link-local, ...), helppuff/guard/refused/scheme.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Self

from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IResolutionReceiver
from zope.interface import implementer

from helppuff_crawl.web.addresses import AddressPolicy, parse_address
from helppuff_crawl.web.page_status import OFFSITE
from helppuff_crawl.web.urls import same_site

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

logger = logging.getLogger(__name__)

_SCHEMES = ("http", "https", "data")


class OffsiteRedirect(IgnoreRequest):
    """A redirect to another site, not followed; the message is the page's reason."""


class AddressRefused(IgnoreRequest):
    """A request to a non-public address, not sent; the message is the page's reason."""


async def resolve(host: str, port: int = 0) -> list[str]:
    """Every address `host` resolves to through the reactor's name resolver (what Scrapy's
    connections use: HostnameEndpoint asks it too); [] when it does not resolve."""
    from twisted.internet import reactor

    done: Deferred[list[str]] = Deferred()
    addresses: list[str] = []

    @implementer(IResolutionReceiver)
    class _Receiver:
        def resolutionBegan(self, resolution: object) -> None:
            pass

        def addressResolved(self, address: object) -> None:
            host_text = getattr(address, "host", None)
            if isinstance(host_text, str):
                addresses.append(host_text)

        def resolutionComplete(self) -> None:
            done.callback(addresses)

    reactor.nameResolver.resolveHostName(_Receiver(), host, portNumber=port)  # type: ignore[attr-defined]
    return await maybe_deferred_to_future(done)


def offsite_redirect(request: Request) -> str:
    """The reason a redirected request leaves the site it started on, "" when it does not."""
    chain = request.meta.get("redirect_urls") or []
    if not chain or request.meta.get("allow_offsite") or same_site(request.url, chain[0]):
        return ""
    return f"{OFFSITE}: {request.url}"


class SiteGuardMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.policy = AddressPolicy.from_setting(crawler.settings.get("HELPPUFF_ALLOW_PRIVATE_ADDRESSES"))
        self.crawler = crawler
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        if why := offsite_redirect(request):
            self.stats.inc_value("helppuff/guard/offsite_redirects")
            logger.info("Not following %s from %s: another site", request.url, request.meta["redirect_urls"][0],
                        extra={"spider": self.crawler.spider})
            raise OffsiteRedirect(why)
        url = urlparse_cached(request)
        if url.scheme not in _SCHEMES:
            self.stats.inc_value("helppuff/guard/refused/scheme")
            raise AddressRefused(f"refused: {url.scheme}: is not fetched (only http and https)")
        if url.scheme == "data" or self.policy.allow_all:
            return
        host = url.hostname or ""
        addresses = [] if parse_address(host) is not None else await resolve(host, url.port or 0)
        self._check(request, host, addresses)

    def process_response(self, request: Request, response: Response) -> Response:
        peer = response.ip_address
        if (peer is None or self.policy.allow_all or "playwright" in response.flags
                or request.meta.get("proxy")):
            return response
        self._check(request, urlparse_cached(request).hostname or "", [str(peer)])
        return response

    def _check(self, request: Request, host: str, addresses: list[str]) -> None:
        refusal = self.policy.host_refusal(host, addresses)
        if refusal is None:
            return
        self.stats.inc_value(f"helppuff/guard/refused/{refusal.kind}")
        logger.warning("Refused %s: %s", request.url, refusal.reason, extra={"spider": self.crawler.spider})
        raise AddressRefused(f"refused: {refusal.reason}")
