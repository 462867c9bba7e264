"""Made-up host names for tests, answered on the reactor, as a site's DNS would answer them.

    with mapped_names({"site.test": "127.0.0.1", "www.site.test": "127.0.0.2"}):
        ...  # Scrapy's connections, the crawl's address checks and the browser's proxy all resolve
             # through reactor.nameResolver, so all of them see these answers

Names outside the map do not resolve (no lookup leaves the machine); IP literals resolve to
themselves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import (
    IHostnameResolver,
    IHostResolution,
    IResolutionReceiver,
)
from zope.interface import implementer

from helppuff_crawl.web.addresses import parse_address


@implementer(IHostResolution)
class _Resolution:
    def __init__(self, name: str) -> None:
        self.name = name

    def cancel(self) -> None:
        pass


@implementer(IHostnameResolver)
class MappedNames:
    def __init__(self, names: dict[str, str]) -> None:
        self.names = {name.lower(): address for name, address in names.items()}
        self.asked: list[str] = []

    def resolveHostName(self, resolutionReceiver: IResolutionReceiver, hostName: str, portNumber: int = 0,
                        addressTypes: object = None, transportSemantics: str = "TCP") -> IHostResolution:
        self.asked.append(hostName)
        resolution = _Resolution(hostName)
        resolutionReceiver.resolutionBegan(resolution)
        text = self.names.get(hostName.lower().rstrip("."), hostName)
        address = parse_address(text)
        if address is not None:
            kind = IPv4Address if address.version == 4 else IPv6Address
            resolutionReceiver.addressResolved(kind("TCP", str(address), portNumber))
        resolutionReceiver.resolutionComplete()
        return resolution


@contextlib.contextmanager
def mapped_names(names: dict[str, str]) -> Iterator[MappedNames]:
    """Install a MappedNames on the reactor for the block; the previous resolver comes back after."""
    from twisted.internet import reactor

    mapped = MappedNames(names)
    previous = reactor.installNameResolver(mapped)  # type: ignore[attr-defined]
    try:
        yield mapped
    finally:
        reactor.installNameResolver(previous)  # type: ignore[attr-defined]
