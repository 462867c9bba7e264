"""The client's pace and its 429 waits, on a virtual clock: the pacer (cloudflare/pacing.py), the
rate setting, and CloudflareClient waiting out Retry-After, retrying 5xx and resets, and counting.

Time here is a `VirtualClock`: the client and the pacer sleep on it, and it moves to the next wake-up
once everything that can run has run, so minutes of waiting take no time and every wait is exact.
"""

from __future__ import annotations

import asyncio
import heapq
import random
import socket
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import httpx
import pytest
import pytest_twisted

from helppuff_crawl.cloudflare.client import CloudflareClient, CloudflareError, HttpTransport, Response
from helppuff_crawl.cloudflare.pacing import CallCounts, Pacer, Rate
from helppuff_crawl.local.ratelimit import RateLimiter
from tests.conftest import run_async


class VirtualClock:
    """A clock and a sleep for the code under test; `run` drives them."""

    def __init__(self) -> None:
        self.now = 0.0
        self._timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = 0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._timers, (self.now + max(0.0, delay), self._seq, future))
        self._seq += 1
        await future

    async def run(self, *coros: Coroutine[Any, Any, Any]) -> list[Any]:
        tasks = [asyncio.ensure_future(c) for c in coros]
        while not all(t.done() for t in tasks):
            for _ in range(30):  # let everything that can run, run
                await asyncio.sleep(0)
            if all(t.done() for t in tasks):
                break
            if not self._timers:
                for task in tasks:
                    task.cancel()
                raise AssertionError("deadlock: every task waits, and no timer is set")
            when, _, future = heapq.heappop(self._timers)
            self.now = max(self.now, when)
            future.set_result(None)
        return [t.result() for t in tasks]


class FakeAPI:
    """A transport standing in for Cloudflare's API: answers in turn from `answers` (then 200 OK),
    after `latency` virtual seconds, and records when each request was sent."""

    def __init__(self, vc: VirtualClock, answers: list[Response | BaseException] | None = None,
                 latency: float = 0.0) -> None:
        self.vc = vc
        self.answers = list(answers or [])
        self.latency = latency
        self.sent: list[tuple[float, str]] = []

    async def request(self, method: str, path: str, *, content: bytes = b"", headers: Any = None) -> Response:
        self.sent.append((self.vc.now, path))
        if self.latency:
            await self.vc.sleep(self.latency)
        answer = self.answers.pop(0) if self.answers else _ok()
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def aclose(self) -> None:
        pass


def _ok() -> Response:
    return Response(200, {"success": True, "errors": [], "messages": [], "result": [{"results": [{"n": 1}]}]})


def _rate_limited(retry_after: str | None) -> Response:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return Response(429, {"success": False, "errors": [{"code": 971, "message": "Please wait and consider "
                                                        "throttling your request speed"}]}, headers)


def _server_error(status: int) -> Response:
    return Response(status, {"success": False, "errors": [{"code": 10001, "message": "Internal server error"}]})


def _client(vc: VirtualClock, api: FakeAPI, **kwargs: Any) -> CloudflareClient:
    return CloudflareClient(api, "acc", sleep=vc.sleep, clock=vc.clock, **kwargs)


def _virtual(test: Callable[[VirtualClock], Coroutine[Any, Any, None]]) -> Any:
    """A Deferred running `test(vc)` under a fresh VirtualClock."""
    vc = VirtualClock()
    return run_async(vc.run(test(vc)))


# --- the setting --------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "rate"), [
    ("1200/300", Rate(1200, 300.0)), ("60/20", Rate(60, 20.0)), (" 5 / 0.5 ", Rate(5, 0.5)),
    ("", None), ("  ", None), (None, None),
])
def test_a_rate_is_requests_per_seconds(text: Any, rate: Rate | None) -> None:
    assert Rate.parse(text) == rate


@pytest.mark.parametrize("text", ["1200", "1200/", "/300", "0/300", "10/0", "ten/60", "-1/60", "5/1/2", "1e3/300"])
def test_a_bad_rate_is_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match=r"^HELPPUFF_X must be REQUESTS/SECONDS|^HELPPUFF_X needs at least"):
        Rate.parse(text, "HELPPUFF_X")


def test_the_default_pace_is_cloudflares_global_limit() -> None:
    from helppuff_crawl import settings

    assert Rate.parse(settings.HELPPUFF_CLOUDFLARE_RATE_LIMIT) == Rate(1200, 300.0)
    client = CloudflareClient(FakeAPI(VirtualClock()), "acc")
    assert client.pacer is not None and client.pacer.rate == Rate(1200, 300.0)
    assert client.max_retry_after == 300.0  # a 429 is waited out for up to the whole window
    assert client.max_attempts > 3  # 5xx and resets: more tries than the three there used to be
    assert CloudflareClient(FakeAPI(VirtualClock()), "acc", rate_limit=None).pacer is None


# --- the pacer ----------------------------------------------------------------------------


@pytest_twisted.inlineCallbacks
def test_the_pacer_counts_a_call_until_a_window_after_its_answer():  # type: ignore[no-untyped-def]
    async def scenario(vc: VirtualClock) -> None:
        pacer = Pacer(Rate(3, 10.0), vc.clock, vc.sleep)
        assert [await pacer.acquire() for _ in range(3)] == [0.0, 0.0, 0.0]
        for _ in range(3):  # answers at 1, 2 and 3
            await vc.sleep(1.0)
            pacer.release()
        assert vc.now == 3.0
        assert await pacer.acquire() == 8.0  # the first slot frees at 1 + 10 = 11
        assert vc.now == 11.0
        pacer.release()
        assert await pacer.acquire() == 1.0  # the second at 12
        assert await pacer.acquire() == 1.0  # the third at 13
        pacer.release()
        pacer.release()
        assert await pacer.acquire() == 8.0  # then 11 + 10 = 21

    yield _virtual(scenario)


@pytest_twisted.inlineCallbacks
def test_calls_still_waiting_for_their_answer_hold_their_slots():  # type: ignore[no-untyped-def]
    async def scenario(vc: VirtualClock) -> None:
        pacer = Pacer(Rate(2, 5.0), vc.clock, vc.sleep)
        await pacer.acquire()
        await pacer.acquire()

        async def slow_answers() -> None:
            await vc.sleep(30.0)  # two calls in flight for 30 s
            pacer.release()
            pacer.release()

        waited, _ = await asyncio.gather(pacer.acquire(), slow_answers())
        assert waited == 35.0 and vc.now == 35.0  # answered at 30, free a window later

    yield _virtual(scenario)


@pytest_twisted.inlineCallbacks
def test_hold_stops_every_call_for_a_while():  # type: ignore[no-untyped-def]
    async def scenario(vc: VirtualClock) -> None:
        pacer = Pacer(Rate(100, 10.0), vc.clock, vc.sleep)
        await vc.sleep(2.0)
        pacer.hold(42.0)
        pacer.hold(5.0)  # a shorter hold does not shorten the first
        assert await asyncio.gather(pacer.acquire(), pacer.acquire()) == [42.0, 42.0]

    yield _virtual(scenario)


async def _simulate(vc: VirtualClock, count_from_start: bool, seed: int) -> tuple[int, int]:
    """Four workers make 60 calls through a 5-per-10-s pacer to a 5-per-10-s RateLimiter, over a
    network with random delays both ways; returns (requests refused, requests made)."""
    rate = Rate(5, 10.0)
    pacer = Pacer(rate, vc.clock, vc.sleep)
    limiter = RateLimiter(rate, clock=vc.clock)
    rng = random.Random(seed)
    made = 0

    async def worker(calls: int) -> None:
        nonlocal made
        for _ in range(calls):
            await pacer.acquire()
            if count_from_start:
                pacer.release()
            await vc.sleep(rng.uniform(0, 3))  # on the way
            limiter.refuse()  # the server counts it as it arrives
            made += 1
            await vc.sleep(rng.uniform(0, 3))  # the answer on its way back
            if not count_from_start:
                pacer.release()

    await asyncio.gather(*(worker(15) for _ in range(4)))
    return limiter.refused, made


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest_twisted.inlineCallbacks
def test_a_client_paced_at_the_servers_limit_is_never_refused_whatever_the_network(seed: int):  # type: ignore[no-untyped-def]
    async def scenario(vc: VirtualClock) -> None:
        refused, made = await _simulate(vc, count_from_start=False, seed=seed)
        assert made == 60 and refused == 0

    yield _virtual(scenario)


@pytest_twisted.inlineCallbacks
def test_counting_a_call_only_from_its_start_would_be_refused():  # type: ignore[no-untyped-def]
    # The same simulation with each slot counted from the call's start: the network bunches arrivals
    # and the server refuses some, which is why the pacer counts until a window after the answer.
    async def scenario(vc: VirtualClock) -> None:
        refused = [(await _simulate(vc, count_from_start=True, seed=seed))[0] for seed in (1, 2, 3)]
        assert sum(refused) > 0

    yield _virtual(scenario)


# --- the client: pace, 429s, retries, counts ---------------------------------------------


@pytest_twisted.inlineCallbacks
def test_the_client_paces_its_calls():  # type: ignore[no-untyped-def]
    async def scenario(vc: VirtualClock) -> None:
        api = FakeAPI(vc, latency=0.5)
        client = _client(vc, api, rate_limit="3/10")
        for _ in range(7):
            await client.d1_query("db", "SELECT 1")
        # Three at once, then each as a slot frees: 10 s after the answer of the call it replaces.
        assert [t for t, _ in api.sent] == [0.0, 0.5, 1.0, 10.5, 11.0, 11.5, 21.0]
        assert client.counts.paced == 2 and client.counts.pace_wait == 18.0  # the 4th and the 7th, 9 s each
        assert client.counts.calls == {"d1": 7, "vectorize": 0, "ai": 0}
        assert client.counts.retries == 0 and client.counts.rate_limited == 0

    yield _virtual(scenario)


@pytest_twisted.inlineCallbacks
def test_a_429_is_waited_out_as_long_as_retry_after_says():  # type: ignore[no-untyped-def]
    async def scenario(vc: VirtualClock) -> None:
        api = FakeAPI(vc, [_rate_limited("173")])
        client = _client(vc, api, rate_limit="1200/300")
        assert await client.d1_query("db", "SELECT 1") == [{"n": 1}]
        assert [t for t, _ in api.sent] == [0.0, 173.0]  # 173 s: more than max_delay's 30 s
        assert client.counts.rate_limited == 1 and client.counts.retries == 1
        assert client.counts.retry_wait == 173.0 and client.counts.calls["d1"] == 2

    yield _virtual(scenario)


@pytest_twisted.inlineCallbacks
def test_a_429_waits_at_most_the_whole_window():  # type: ignore[no-untyped-def]
    async def scenario(vc: VirtualClock) -> None:
        api = FakeAPI(vc, [_rate_limited("3600"), _rate_limited(None)])
        client = _client(vc, api, backoff=0.5)
        await client.d1_query("db", "SELECT 1")
        first, second = api.sent[1][0], api.sent[2][0] - api.sent[1][0]
        assert first == 300.0  # capped at the window
        assert 0.5 <= second <= 1.0  # no Retry-After: our own backoff (the second 429: 1 s, equal jitter)

    yield _virtual(scenario)


@pytest_twisted.inlineCallbacks
def test_while_a_429_is_waited_out_no_other_call_is_sent():  # type: ignore[no-untyped-def]
    async def scenario(vc: VirtualClock) -> None:
        api = FakeAPI(vc, [_rate_limited("60")], latency=1.0)
        client = _client(vc, api)

        async def later(delay: float, service_path: str) -> None:
            await vc.sleep(delay)
            if service_path == "vectorize":
                await client.vectorize_get_by_ids("ix", ["a"])
            else:
                await client.ai_run("@cf/baai/bge-m3", {"text": ["x"]})

        await asyncio.gather(client.d1_query("db", "SELECT 1"), later(5.0, "vectorize"), later(30.0, "ai"))
        # The 429 came back at 1 s: nothing is sent until 1 + 60 = 61 s.
        times = sorted(t for t, _ in api.sent)
        assert times[0] == 0.0 and all(t >= 61.0 for t in times[1:]) and len(times) == 4
        assert client.counts.rate_limited == 1 and client.counts.paced == 2
        assert client.counts.calls == {"d1": 2, "vectorize": 1, "ai": 1}

    yield _virtual(scenario)


@pytest_twisted.inlineCallbacks
def test_a_429_without_retry_after_delays_only_its_own_call():  # type: ignore[no-untyped-def]
    async def scenario(vc: VirtualClock) -> None:
        busy = Response(429, {"success": False, "errors": [{"code": 3040, "message": "Out of capacity"}]})
        api = FakeAPI(vc, [busy], latency=1.0)
        client = _client(vc, api, backoff=8.0)

        async def later() -> None:
            await vc.sleep(2.0)
            await client.d1_query("db", "SELECT 1")

        await asyncio.gather(client.ai_run("@cf/baai/bge-m3", {"text": ["x"]}), later())
        sent = {path.rsplit("/", 1)[-1]: t for t, path in api.sent}
        assert sent["query"] == 2.0  # not held: Workers AI being busy says nothing of the account
        assert 5.0 <= sorted(t for t, _ in api.sent)[-1] <= 9.0  # the AI call again after 4-8 s of backoff

    yield _virtual(scenario)


@pytest_twisted.inlineCallbacks
def test_429s_past_max_rate_limited_are_the_error():  # type: ignore[no-untyped-def]
    async def scenario(vc: VirtualClock) -> None:
        api = FakeAPI(vc, [_rate_limited("300")] * 5)
        client = _client(vc, api, max_rate_limited=4)
        with pytest.raises(CloudflareError) as caught:
            await client.d1_query("db", "SELECT 1")
        assert str(caught.value) == ("D1 database db: HTTP 429: 971: Please wait and consider throttling your "
                                     "request speed (after 5 attempts)")
        assert vc.now == 1200.0 and client.counts.gave_up == 1 and client.counts.rate_limited == 4

    yield _virtual(scenario)


@pytest_twisted.inlineCallbacks
def test_5xx_and_resets_are_retried_with_backoff_and_jitter():  # type: ignore[no-untyped-def]
    async def scenario(vc: VirtualClock) -> None:
        answers: list[Response | BaseException] = [
            _server_error(500), _server_error(502), httpx.ReadError("Connection reset by peer"),
            _server_error(503), httpx.ReadTimeout("timed out"), ConnectionResetError(104, "reset"),
        ]
        api = FakeAPI(vc, answers)
        client = _client(vc, api, backoff=0.5, max_delay=30.0)
        assert await client.vectorize_get_by_ids("ix", ["a"]) is not None
        assert len(api.sent) == 7  # six failures, then the answer
        waits = [b - a for (a, _), (b, _) in zip(api.sent, api.sent[1:], strict=False)]
        for wait, base in zip(waits, (0.5, 1, 2, 4, 8, 16), strict=True):
            assert base / 2 <= wait <= base, (wait, base)
        assert client.counts.retries == 6 and client.counts.calls["vectorize"] == 7
        assert client.counts.retry_wait == pytest.approx(sum(waits))

    yield _virtual(scenario)


@pytest_twisted.inlineCallbacks
def test_a_4xx_other_than_429_is_not_retried():  # type: ignore[no-untyped-def]
    async def scenario(vc: VirtualClock) -> None:
        api = FakeAPI(vc, [Response(400, {"success": False, "errors": [{"code": 7400, "message": "bad"}]})])
        client = _client(vc, api)
        with pytest.raises(CloudflareError, match="^D1 database db: HTTP 400: 7400: bad$"):
            await client.d1_query("db", "SELECT 1")
        assert len(api.sent) == 1 and client.counts.retries == 0 and client.counts.gave_up == 0

    yield _virtual(scenario)


def test_the_counts_as_stats() -> None:
    counts = CallCounts()
    counts.calls["d1"] += 3
    counts.calls["ai"] += 1
    counts.retries, counts.rate_limited, counts.retry_wait = 2, 1, 20.0004
    counts.paced, counts.pace_wait = 4, 1.23456
    assert counts.stats() == {
        "helppuff/cloudflare/calls/d1": 3, "helppuff/cloudflare/calls/vectorize": 0,
        "helppuff/cloudflare/calls/ai": 1, "helppuff/cloudflare/calls": 4, "helppuff/cloudflare/retries": 2,
        "helppuff/cloudflare/rate_limited": 1, "helppuff/cloudflare/retry_wait_seconds": 20.0,
        "helppuff/cloudflare/paced": 4, "helppuff/cloudflare/pace_wait_seconds": 1.235,
        "helppuff/cloudflare/gave_up": 0,
    }


# --- a real reset on loopback --------------------------------------------------------------


@pytest_twisted.inlineCallbacks
def test_a_connection_reset_over_http_is_retried():  # type: ignore[no-untyped-def]
    yield run_async(_reset_then_answer())


async def _reset_then_answer() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    body = b'{"success":true,"errors":[],"messages":[],"result":[{"results":[{"n":1}]}]}'

    def serve() -> None:
        for number in range(2):
            conn, _ = server.accept()
            conn.recv(65536)
            if number == 0:  # the first: a TCP reset instead of an answer
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    sleeps: list[float] = []

    async def no_wait(delay: float) -> None:
        sleeps.append(delay)

    client = CloudflareClient(HttpTransport("t", f"http://127.0.0.1:{port}/client/v4"), "acc", sleep=no_wait,
                              rate_limit=None)
    try:
        assert await client.d1_query("db", "SELECT 1") == [{"n": 1}]
        assert client.counts.retries == 1 and len(sleeps) == 1
    finally:
        await client.aclose()
        thread.join(5)
        server.close()
