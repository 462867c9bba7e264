"""Which network addresses the crawler may connect to. Pure: no Scrapy or Twisted import.

A crawl fetches one public website, so every connection must go to a public (globally routable)
address. `address_kind` names what else an address is: loopback (127.0.0.0/8, ::1), private
(RFC 1918, fc00::/7), link-local (169.254.0.0/16, the cloud metadata endpoint 169.254.169.254
among them; fe80::/10), unspecified, multicast, reserved, shared (100.64.0.0/10, carrier-grade
NAT), or otherwise non-public (documentation, benchmarking and protocol ranges: whatever Python's
`ipaddress` does not call global). An IPv6 address that carries an IPv4 one (IPv4-mapped
::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16) is judged by the IPv4 address it leads to.

`AddressPolicy` is the HELPPUFF_ALLOW_PRIVATE_ADDRESSES setting read: false (only public
addresses), true (any address), or a list of addresses and networks allowed besides the public ones
(e.g. `127.0.0.0/8,::1`, LOOPBACK_NETWORKS, which `helppuff crawl` sets for a start URL on
loopback: `is_loopback_host`).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

SETTING = "HELPPUFF_ALLOW_PRIVATE_ADDRESSES"

#: What `helppuff crawl` allows for a start URL on loopback: the loopback addresses, nothing else.
LOOPBACK_NETWORKS = "127.0.0.0/8,::1"

_PRIVATE = tuple(ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"))
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def parse_address(text: str) -> IPAddress | None:
    """The IP address `text` spells (brackets and an IPv6 zone allowed), else None (a host name)."""
    literal = text.strip().strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(literal)
    except ValueError:
        return None


def _carried_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one leads to (mapped, NAT64, 6to4), else None."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def address_kind(address: IPAddress | str) -> str:
    """"" for a public address, else what it is: "loopback", "private", "link-local", "unspecified",
    "multicast", "reserved", "shared" or "non-public"."""
    ip = parse_address(address) if isinstance(address, str) else address
    if ip is None:
        raise ValueError(f"not an IP address: {address!r}")
    carried = _carried_ipv4(ip)
    if carried is not None:  # the connection ends at that IPv4 address
        return address_kind(carried)
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_multicast:
        return "multicast"
    if any(ip in network for network in _PRIVATE):
        return "private"
    if ip in _SHARED:
        return "shared"
    if ip.is_reserved:
        return "reserved"
    if not ip.is_global:
        return "non-public"
    return ""


def _article(kind: str) -> str:
    return "an" if kind[0] in "aeiou" else "a"


class Refusal(NamedTuple):
    """Why a host is refused: what its address is ("loopback", ...) and the sentence that says so."""

    kind: str
    reason: str


@dataclass(frozen=True)
class AddressPolicy:
    """Public addresses always; others only when allowed (all of them, or those in `networks`)."""

    allow_all: bool = False
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_setting(cls, value: Any) -> AddressPolicy:
        """HELPPUFF_ALLOW_PRIVATE_ADDRESSES: a bool, "true"/"false", or addresses and networks
        (a list, or one string, comma-separated). Raises ValueError naming the setting."""
        if isinstance(value, bool):
            return cls(allow_all=value)
        if value is None:
            return cls()
        items = value.split(",") if isinstance(value, str) else list(value)
        texts = [str(item).strip() for item in items if str(item).strip()]
        if len(texts) <= 1 and (not texts or texts[0].lower() in _TRUE + _FALSE):
            return cls(allow_all=bool(texts) and texts[0].lower() in _TRUE)
        networks = []
        for text in texts:
            try:
                networks.append(ipaddress.ip_network(text.strip("[]"), strict=False))
            except ValueError:
                raise ValueError(
                    f"{SETTING}: expected true, false, or addresses and networks such as "
                    f"{LOOPBACK_NETWORKS!r}, got {text!r}"
                ) from None
        return cls(networks=tuple(networks))

    def allows(self, address: IPAddress | str) -> bool:
        return not self.refusal(address)

    def refusal(self, address: IPAddress | str) -> str:
        """"" when a connection to `address` is allowed, else what it is ("loopback", ...)."""
        ip = parse_address(address) if isinstance(address, str) else address
        if ip is None:
            raise ValueError(f"not an IP address: {address!r}")
        kind = address_kind(ip)
        if not kind or self.allow_all:
            return ""
        candidates = [ip, *([c] if (c := _carried_ipv4(ip)) is not None else [])]
        if any(candidate in network for candidate in candidates for network in self.networks
               if candidate.version == network.version):
            return ""
        return kind

    def host_refusal(self, host: str, addresses: list[str]) -> Refusal | None:
        """Why `host` (an IP literal, or a name that resolves to `addresses`, every one of which is
        checked) is refused, else None. The reason names the address: "127.0.0.2 is a loopback
        address", or "www.acme.test resolves to 10.0.0.5, a private address"."""
        literal = parse_address(host)
        if literal is not None:
            kind = self.refusal(literal)
            return Refusal(kind, f"{literal} is {_article(kind)} {kind} address") if kind else None
        for text in addresses:
            ip = parse_address(text)
            if ip is not None and (kind := self.refusal(ip)):
                return Refusal(kind, f"{host} resolves to {ip}, {_article(kind)} {kind} address")
        return None


def is_loopback_host(host: str) -> bool:
    """True for "localhost" and loopback literals (127.0.0.0/8, ::1): a site on this machine."""
    name = host.strip().rstrip(".").lower()
    if name == "localhost":
        return True
    ip = parse_address(name)
    return ip is not None and address_kind(ip) == "loopback"


def loopback_allowance(start_url: str) -> dict[str, str]:
    """The settings a crawl of `start_url` needs when the site is on this machine (`helppuff crawl`,
    `scrapy crawl site`): the loopback addresses allowed, nothing else; {} for any other site."""
    return {SETTING: LOOPBACK_NETWORKS} if is_loopback_host(urlsplit(start_url).hostname or "") else {}
