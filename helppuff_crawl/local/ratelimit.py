"""The local cloud's optional API rate limit, answered as Cloudflare answers its global one.

Cloudflare allows 1,200 requests per five minutes per user across the whole API; "if you exceed
this limit, all API calls for the next five minutes will be blocked, receiving a HTTP 429 response"
(developers.cloudflare.com/fundamentals/api/reference/limits). The 429 carries `Retry-After`, the
seconds until capacity is back, rounded up, and the `Ratelimit` and `Ratelimit-Policy` headers;
its body is the API's envelope with error 971, "Please wait and consider throttling your request
speed".

`RateLimiter(Rate(60, 20))` does the same at any rate: at most 60 requests within any 20 seconds
(a sliding window, the stricter reading: a client that keeps under it keeps under a fixed window
too). The request past it starts the block: it and every request for the next 20 seconds are
refused, and after the block the count starts afresh. Refused requests do not count. Requests are
counted as they arrive (`refuse()` is called first thing in LocalCloud.handle), on every route.
One limiter per LocalCloud: the "user" is whoever holds it. Thread-safe.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

from helppuff_crawl.cloudflare.client import Response
from helppuff_crawl.cloudflare.pacing import Rate

RATE_LIMITED_CODE = 971
RATE_LIMITED_MESSAGE = "Please wait and consider throttling your request speed"


class RateLimiter:
    def __init__(self, rate: Rate, clock: Callable[[], float] | None = None) -> None:
        self.rate = rate
        self._clock = clock or time.monotonic
        self._accepted: deque[float] = deque()  # arrival times within the window
        self._blocked_until = 0.0
        self._lock = threading.Lock()
        self.refused = 0

    def refuse(self) -> Response | None:
        """Count a request; the 429 to answer it with when it is over the limit, else None."""
        with self._lock:
            now = self._clock()
            if now < self._blocked_until:
                return self._too_many(self._blocked_until - now)
            while self._accepted and self._accepted[0] <= now - self.rate.seconds:
                self._accepted.popleft()
            if len(self._accepted) >= self.rate.requests:
                self._blocked_until = now + self.rate.seconds
                self._accepted.clear()
                return self._too_many(self.rate.seconds)
            self._accepted.append(now)
            return None

    def _too_many(self, seconds: float) -> Response:
        self.refused += 1
        wait = max(1, math.ceil(seconds))
        window = f"{self.rate.seconds:g}"
        headers = {  # lower-case names, as Response keeps them
            "retry-after": str(wait),
            "ratelimit": f'"default";r=0;t={wait}',
            "ratelimit-policy": f'"default";q={self.rate.requests};w={window}',
        }
        body = {"success": False, "errors": [{"code": RATE_LIMITED_CODE, "message": RATE_LIMITED_MESSAGE}],
                "messages": [], "result": None}
        return Response(429, body, headers)
