"""The client's pace under Cloudflare's global API rate limit, and the counts of its calls.

Cloudflare allows 1,200 requests per five minutes per user, whatever the endpoint; past it, every
call is refused for the next five minutes with HTTP 429 and a `Retry-After` header, the seconds
(rounded up) until capacity is back (developers.cloudflare.com/fundamentals/api/reference/limits).
A refused call is lost time, and a burst of them can keep the account blocked, so the client paces
itself below the limit instead of finding it.

`Pacer` lets at most `rate.requests` calls start within any `rate.seconds`, and it counts each
call from its start until `rate.seconds` after its answer came back. Counting to the answer, not to
the start, is what keeps a server that counts on arrival (and so sees calls later than they left,
bunched by the network or a queue) from ever seeing more than the limit in any window, sliding or
fixed: of `requests + 1` calls arriving within one window, the last to start would have found the
others holding their slots, each still waiting for its answer or answered after it arrived, less
than a window before. `hold(seconds)` stops every call from starting for a while: the client
calls it when a 429 says how long the account is blocked, so that no other call is wasted on it.

`CallCounts` is what a client did: requests sent per service (d1, vectorize, ai), retries, 429s
waited out, and the seconds spent waiting for retries and for the pacer. A crawl puts them in its
Scrapy stats (helppuff_crawl/extensions/run.py).
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

# Cloudflare's documented global limit: 1,200 requests per 5 minutes per user.
CLOUDFLARE_RATE = "1200/300"
# The longest a 429 makes us wait: the whole window, as the documented block lasts.
RATE_LIMIT_WINDOW = 300.0
SERVICES = ("d1", "vectorize", "ai")

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d+(?:\.\d+)?)\s*$")


@dataclass(frozen=True)
class Rate:
    """At most `requests` requests per `seconds`."""

    requests: int
    seconds: float

    @classmethod
    def parse(cls, text: Any, name: str = "rate limit") -> Rate | None:
        """`"1200/300"` (requests/seconds) as a Rate; `""` is none. ValueError names `name`."""
        if text is None or (isinstance(text, str) and not text.strip()):
            return None
        if isinstance(text, Rate):
            return text
        match = _RATE.match(str(text))
        if not match:
            raise ValueError(f"{name} must be REQUESTS/SECONDS (e.g. 1200/300) or empty for none, got {text!r}")
        requests, seconds = int(match[1]), float(match[2])
        if requests < 1 or not seconds > 0 or not math.isfinite(seconds):
            raise ValueError(f"{name} needs at least 1 request in more than 0 seconds, got {text!r}")
        return cls(requests, seconds)

    def __str__(self) -> str:
        return f"{self.requests}/{self.seconds:g}"


class Pacer:
    """At most `rate.requests` calls in any `rate.seconds`, each counted from its start to
    `rate.seconds` after its answer; `acquire()` before a call, `release()` once its answer is in.

    For one event loop (the client's); `clock` and `sleep` can be a test's own.
    """

    def __init__(self, rate: Rate, clock: Callable[[], float] | None = None,
                 sleep: Callable[[float], Awaitable[Any]] | None = None) -> None:
        self.rate = rate
        self._clock = clock or time.monotonic
        self._sleep = sleep or asyncio.sleep
        self._in_flight = 0
        self._frees: deque[float] = deque()  # when the slots of answered calls free up, in order
        self._held_until = 0.0
        self._released: asyncio.Event | None = None

    def _held(self, now: float) -> int:
        while self._frees and self._frees[0] <= now:
            self._frees.popleft()
        return self._in_flight + len(self._frees)

    async def acquire(self) -> float:
        """Wait for a slot; returns the seconds waited."""
        started = now = self._clock()
        while True:
            if now < self._held_until:
                await self._sleep(self._held_until - now)
            elif self._held(now) < self.rate.requests:
                self._in_flight += 1
                return now - started
            elif self._frees:
                await self._sleep(self._frees[0] - now)
            else:  # every slot is a call still waiting for its answer
                if self._released is None:
                    self._released = asyncio.Event()
                await self._released.wait()
            now = self._clock()

    def release(self) -> None:
        """The call's answer is in (or it failed): its slot frees `rate.seconds` from now."""
        self._in_flight -= 1
        self._frees.append(self._clock() + self.rate.seconds)
        if self._released is not None:
            self._released.set()
            self._released = None

    def hold(self, seconds: float) -> None:
        """No call starts for `seconds` from now (Cloudflare said the account is blocked that long)."""
        self._held_until = max(self._held_until, self._clock() + max(0.0, seconds))


@dataclass
class CallCounts:
    """What a client did: every request sent counts (retries too), as Cloudflare counts them."""

    calls: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SERVICES, 0))
    retries: int = 0  # requests sent again after a 429, a 5xx or no answer
    rate_limited: int = 0  # 429 answers waited out
    retry_wait: float = 0.0  # seconds slept before retries (Retry-After and backoff)
    paced: int = 0  # calls the pacer held back
    pace_wait: float = 0.0  # seconds those calls waited, added up (waits overlap when calls do)
    gave_up: int = 0  # calls given up after their retries (the error went to the caller)

    def stats(self, prefix: str = "helppuff/cloudflare/") -> dict[str, int | float]:
        out: dict[str, int | float] = {f"{prefix}calls/{service}": n for service, n in self.calls.items()}
        out.update({
            f"{prefix}calls": sum(self.calls.values()),
            f"{prefix}retries": self.retries,
            f"{prefix}rate_limited": self.rate_limited,
            f"{prefix}retry_wait_seconds": round(self.retry_wait, 3),
            f"{prefix}paced": self.paced,
            f"{prefix}pace_wait_seconds": round(self.pace_wait, 3),
            f"{prefix}gave_up": self.gave_up,
        })
        return out
