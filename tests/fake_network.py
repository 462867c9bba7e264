"""Fakes at the outside edge, between the client and the API: a network that fails some calls.

`FakeFlakyTransport(inner, rate=0.05, seed=7)` wraps the client's transport (LocalTransport or
HttpTransport) and fails a seeded-random share of the requests the way Cloudflare's API and the
network between fail them, in turn:

    500        Cloudflare's envelope with an internal error; the request did nothing
    502, 503   an HTML error page from the edge (as HttpTransport reads a non-JSON body); nothing done
    reset      the connection is reset before the request reaches the API (httpx.ReadError)
    lost       the API did the work and the connection is reset before the answer arrives, so the
               retry repeats a request that already took effect (every write must bear that)

`injected` counts each kind; `requests` counts every request it saw.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import httpx

from helppuff_crawl.cloudflare.client import Response

KINDS = ("500", "502", "503", "reset", "lost")


def _html(status: int, text: str) -> Response:
    page = f"<html><head><title>{status} {text}</title></head><body><center><h1>{status} {text}</h1></center></body></html>"
    return Response(status, {"success": False, "errors": [{"code": status, "message": page[:200]}]},
                    {"content-type": "text/html"})


class FakeFlakyTransport:
    def __init__(self, inner: Any, rate: float = 0.05, seed: int = 7) -> None:
        self.inner = inner
        self.rate = rate
        self._random = random.Random(seed)
        self.injected: Counter[str] = Counter()
        self.requests = 0

    @property
    def failures(self) -> int:
        return sum(self.injected.values())

    async def request(self, method: str, path: str, *, content: bytes = b"", headers: dict[str, str] | None = None
                      ) -> Response:
        self.requests += 1
        if self._random.random() >= self.rate:
            return await self.inner.request(method, path, content=content, headers=headers)
        kind = KINDS[self.failures % len(KINDS)]  # in turn, so that a few failures cover every kind
        self.injected[kind] += 1
        if kind == "500":
            return Response(500, {"success": False, "errors": [{"code": 10001, "message": "Internal server error"}],
                                  "messages": [], "result": None})
        if kind == "502":
            return _html(502, "Bad Gateway")
        if kind == "503":
            return _html(503, "Service Temporarily Unavailable")
        if kind == "lost":
            await self.inner.request(method, path, content=content, headers=headers)
        raise httpx.ReadError("[Errno 104] Connection reset by peer")

    async def aclose(self) -> None:
        await self.inner.aclose()
