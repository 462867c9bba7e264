"""The local cloud's optional API rate limit (local/ratelimit.py): Cloudflare's 429 (status, error 971
and its message, Retry-After, Ratelimit headers), a sliding window, the block for the next window,
every route counted; the setting that turns it on; and the production client waiting it out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_twisted

from helppuff_crawl.cloudflare.client import CloudflareClient, HttpTransport, Response
from helppuff_crawl.cloudflare.pacing import Rate
from helppuff_crawl.kb.database import BackendConfig, open_client
from helppuff_crawl.local.cloud import LOCAL_ACCOUNT_ID, LocalCloud
from helppuff_crawl.local.ratelimit import RateLimiter
from helppuff_crawl.local.server import serve_local_cloud
from tests.conftest import run_async
from tests.crawlers import project_defaults

_BODY_429 = {"success": False, "errors": [{"code": 971, "message": "Please wait and consider throttling your "
                                                                   "request speed"}], "messages": [], "result": None}


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _accepted(limiter: RateLimiter) -> bool:
    return limiter.refuse() is None


def test_past_the_limit_every_request_is_refused_for_the_next_window() -> None:
    clock = _Clock()
    limiter = RateLimiter(Rate(3, 10.0), clock=clock)
    assert [_accepted(limiter) for _ in range(3)] == [True, True, True]
    refused = limiter.refuse()
    assert refused is not None and refused.status == 429 and refused.body == _BODY_429
    assert refused.headers == {"retry-after": "10", "ratelimit": '"default";r=0;t=10',
                               "ratelimit-policy": '"default";q=3;w=10'}
    clock.now = 102.5
    during = limiter.refuse()
    assert during is not None and during.headers["retry-after"] == "8"  # seconds left, rounded up
    clock.now = 109.9
    last = limiter.refuse()  # 0.1 s of the block left: still refused
    assert last is not None and last.headers["retry-after"] == "1"
    clock.now = 110.0
    assert [_accepted(limiter) for _ in range(4)] == [True, True, True, False]  # a fresh window, then again
    assert limiter.refused == 4


def test_the_window_slides() -> None:
    clock = _Clock()
    limiter = RateLimiter(Rate(3, 10.0), clock=clock)
    for at in (100.0, 106.0, 109.0):
        clock.now = at
        assert _accepted(limiter)
    clock.now = 110.5  # the request at 100 has left the window
    assert _accepted(limiter)
    clock.now = 111.0  # 106, 109 and 110.5 are within the last 10 s: a fixed window from 110 would allow it
    assert not _accepted(limiter)


def test_the_local_cloud_answers_every_route_with_the_429_once_past_the_limit(tmp_path: Path) -> None:
    cloud = LocalCloud(tmp_path)
    clock = _Clock()
    cloud.rate_limiter = RateLimiter(Rate(2, 20.0), clock=clock)
    indexes = "/client/v4/accounts/local/vectorize/v2/indexes"
    assert cloud.handle("GET", indexes).status == 200
    assert cloud.handle("GET", "/client/v4/accounts/local/no/such/route").status == 404  # counted too
    for method, path in [("GET", indexes), ("POST", "/client/v4/accounts/local/ai/run/@cf/baai/bge-m3"),
                         ("POST", "/client/v4/accounts/local/d1/database/any/query")]:
        reply = cloud.handle(method, path, b"{}")
        assert (reply.status, reply.body, reply.headers["retry-after"]) == (429, _BODY_429, "20")
    clock.now += 20.0
    assert cloud.handle("GET", indexes).status == 200
    cloud.close()


def test_without_the_setting_there_is_no_limit(tmp_path: Path) -> None:
    cloud = LocalCloud(tmp_path)
    assert cloud.rate_limiter is None
    assert {cloud.handle("GET", "/client/v4/accounts/local/vectorize/v2/indexes").status for _ in range(50)} == {200}
    cloud.close()


# --- the settings ---------------------------------------------------------------------------


def _config(tmp_path: Path, **settings: Any) -> BackendConfig:
    return BackendConfig.from_settings({**project_defaults(), "HELPPUFF_DATA_DIR": str(tmp_path), **settings})


@pytest_twisted.inlineCallbacks
def test_the_settings_set_the_local_limit_and_the_clients_pace(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_settings(tmp_path))


async def _settings(tmp_path: Path) -> None:
    default = open_client(_config(tmp_path))
    assert default.transport.cloud.rate_limiter is None  # type: ignore[attr-defined]
    assert default.pacer is not None and default.pacer.rate == Rate(1200, 300.0)
    await default.aclose()
    tight = open_client(_config(tmp_path, HELPPUFF_LOCAL_RATE_LIMIT="60/20", HELPPUFF_CLOUDFLARE_RATE_LIMIT="50/20"))
    assert tight.transport.cloud.rate_limiter.rate == Rate(60, 20.0)  # type: ignore[attr-defined]
    assert tight.pacer is not None and tight.pacer.rate == Rate(50, 20.0)
    await tight.aclose()
    unpaced = open_client(_config(tmp_path, HELPPUFF_CLOUDFLARE_RATE_LIMIT=""))
    assert unpaced.pacer is None
    await unpaced.aclose()


@pytest.mark.parametrize("name", ["HELPPUFF_LOCAL_RATE_LIMIT", "HELPPUFF_CLOUDFLARE_RATE_LIMIT"])
def test_a_bad_rate_setting_is_refused_by_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name} must be REQUESTS/SECONDS"):
        _config(tmp_path, **{name: "sixty a minute"})


# --- the production client against it, over HTTP --------------------------------------------


def test_the_429_goes_out_over_http_with_its_headers(tmp_path: Path) -> None:
    cloud = LocalCloud(tmp_path)
    cloud.rate_limiter = RateLimiter(Rate(1, 30.0))
    server, url = serve_local_cloud(cloud, token="t")
    try:
        replies = [httpx.get(f"{url}/accounts/local/vectorize/v2/indexes", headers={"Authorization": "Bearer t"})
                   for _ in range(2)]
    finally:
        server.close()
        cloud.close()
    assert replies[0].status_code == 200
    refused = replies[1]
    assert refused.status_code == 429 and refused.json() == _BODY_429
    assert refused.headers["retry-after"] == "30"
    assert refused.headers["ratelimit-policy"] == '"default";q=1;w=30'


class _Recording:
    """Records the answers the client got (a window on the client's transport, nothing changed)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.statuses: list[int] = []

    async def request(self, method: str, path: str, **kwargs: Any) -> Response:
        reply = await self.inner.request(method, path, **kwargs)
        self.statuses.append(reply.status)
        return reply

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest_twisted.inlineCallbacks
def test_an_unpaced_client_waits_out_the_429s_and_every_call_succeeds(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_waits_out(tmp_path))


async def _waits_out(tmp_path: Path) -> None:
    cloud = LocalCloud(tmp_path)
    cloud.rate_limiter = RateLimiter(Rate(4, 1.0))
    server, url = serve_local_cloud(cloud, token="t")
    seen = _Recording(HttpTransport("t", url))
    client = CloudflareClient(seen, LOCAL_ACCOUNT_ID, rate_limit=None)  # no pace: it meets the limit
    try:
        for _ in range(10):
            assert await client.vectorize_list_indexes() == []
    finally:
        await client.aclose()
        server.close()
        cloud.close()
    assert seen.statuses.count(200) == 10
    assert seen.statuses.count(429) >= 2  # 10 calls at 4 a second: at least two blocks
    assert client.counts.rate_limited == seen.statuses.count(429) == cloud.rate_limiter.refused
    assert client.counts.retry_wait >= client.counts.rate_limited * 1.0  # Retry-After: 1 s each
    assert client.counts.gave_up == 0
