"""The slice of Cloudflare's REST API the project uses, behind one small client.

`CloudflareClient` is the project's one way to D1, Vectorize and Workers AI. Most calls go through
Cloudflare's own Python SDK (`cloudflare`, `AsyncCloudflare`), a few are written by hand where the
SDK is known to send the wrong request. Either way every request ends in one place, `_send`, which
paces, retries and counts it, and hands it to a transport: `HttpTransport` to api.cloudflare.com (or
any base URL, e.g. `helppuff serve`'s local cloud), `LocalTransport` (helppuff_crawl.local.cloud) to
the embedded local cloud in this process. So the SDK's real requests (method, path with its query,
body, content type and the SDK's own headers) reach the strict local cloud in every local crawl and
every test, as they reach Cloudflare.

Through the SDK (its request builders, its envelope parsing, its errors), with the REST paths
Cloudflare documents (developers.cloudflare.com/api/resources/...):

- D1: query and batch (`POST /accounts/{a}/d1/database/{id}/query`, `{sql, params}` or
  `{batch: [...]}`), create, and list databases (paged: every page is read). Params are sent as
  strings (the documented type); None is sent as JSON null.
- Vectorize v2 (`/accounts/{a}/vectorize/v2/indexes/...`): create/get/list/delete an index, its
  info, its metadata indexes (create, list), get and delete vectors by ids.

Written by hand (`_send`), each for a reason a test shows (tests/test_cloudflare_sdk.py):

- Workers AI `POST /accounts/{a}/ai/run/{model}`: the SDK escapes the `/` of the model name
  (`@cf/baai/bge-m3` goes out as `@cf%2Fbaai%2Fbge-m3`), a path Cloudflare does not route (HTTP
  400, 7000 "No route for that URI"); here the model's `/` stay literal. `embed()` is built on it.
- Vectorize query: the SDK's typed `query()` has no `namespace`. Each site is a namespace of one
  index, so a query without one searches every site's passages.
- Vectorize upsert: NDJSON sent as `application/x-ndjson`. The SDK's `upsert()` labels the same
  bytes `application/json`, which Vectorize refuses, through a form its client deprecates.

Results are plain dicts under Cloudflare's JSON names (the SDK's models turned back with their API
names; their timestamps are ISO strings).

Limits are checked before sending (ValueError): D1 statements at most 100 bound parameters and
100,000 bytes of SQL, vector ids and namespaces at most 64 bytes, topK at most 100 (50 with values
or all metadata), at most 100 texts per embedding call. Callers size their batches from these
constants rather than from numbers of their own.

Pace and retries (helppuff_crawl.cloudflare.pacing): calls are paced under the account's rate limit
(Cloudflare's global 1,200 requests per 5 minutes by default). A 429 is waited out for as long as its
Retry-After says, up to the whole window (300 s), and no other call of the client starts meanwhile
(a 429 without Retry-After, such as Workers AI out of capacity, is retried with backoff); up to
`max_rate_limited` of them per call. 5xx answers and transport failures (connection refused or
reset, timeouts) are retried with exponential backoff and equal jitter (a 5xx's Retry-After honoured,
capped at `max_delay`), up to `max_attempts` tries; other 4xx answers are final. The SDK's own
retries are off (`max_retries=0`), so a request is never retried twice over. `counts` says what was
sent, per service, with the retries and the waits.

Errors: one `CloudflareError` whose message names the resource and Cloudflare's reason, e.g.
"Vectorize index helppuff-acme: HTTP 404: 3000: vectorize.index.not_found ..."; the SDK's
APIStatusError and APIConnectionError are turned into it, with Cloudflare's codes and messages.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import math
import random
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

import httpx
from cloudflare import APIConnectionError, APIStatusError, AsyncCloudflare, BaseModel, omit

from helppuff_crawl.cloudflare.pacing import CLOUDFLARE_RATE, RATE_LIMIT_WINDOW, CallCounts, Pacer, Rate

logger = logging.getLogger(__name__)

API_BASE = "https://api.cloudflare.com/client/v4"

# D1 (developers.cloudflare.com/d1/platform/limits/): per statement, and per string, BLOB or row.
D1_MAX_PARAMS = 100
D1_MAX_STATEMENT_BYTES = 100_000
D1_MAX_ROW_BYTES = 2_000_000
MAX_VECTOR_ID_BYTES = 64
MAX_METADATA_BYTES = 10 * 1024  # per vector
MAX_NAMESPACE_BYTES = 64
MAX_TOP_K = 100  # without values and with at most indexed metadata
MAX_TOP_K_WITH_VALUES = 50  # with returnValues or returnMetadata "all"
MAX_UPSERT_VECTORS = 5000  # per HTTP API call
NDJSON = "application/x-ndjson"
MAX_EMBED_TEXTS = 100  # the most any embedding model takes per call (bge-m3's maxItems); each model's own in models.json
D1_LIST_PER_PAGE = 1000  # databases a page when listing (the API takes 10 to 10,000)
RETURN_METADATA = ("none", "indexed", "all")
METRICS = ("cosine", "euclidean", "dot-product")
METADATA_INDEX_TYPES = ("string", "number", "boolean")

# No answer came: what a retry can mend (httpx's connect/read/write errors and timeouts, a reset or
# a dropped connection; the same from a transport that is not httpx).
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (httpx.TransportError, ConnectionError, TimeoutError)

# What the SDK's requests carry that is not forwarded: the transport owns the connection and the
# credentials (the SDK is given a placeholder token, and would add any CLOUDFLARE_API_KEY or
# CLOUDFLARE_EMAIL it finds in the environment).
_NOT_FORWARDED = frozenset({
    "host", "content-length", "connection", "accept-encoding", "transfer-encoding",
    "authorization", "x-auth-email", "x-auth-key", "x-auth-user-service-key",
})
# What an answer's headers say about a body that is handed back re-encoded.
_NOT_RETURNED = frozenset({"content-length", "content-encoding", "transfer-encoding", "content-type"})
_SDK_BASE = API_BASE  # the SDK builds URLs on it; only their path and query are used
_SDK_PREFIX = httpx.URL(_SDK_BASE).raw_path.decode("ascii").rstrip("/")  # "/client/v4"
_SDK_TOKEN = "set-by-the-transport"

_SERVICE = re.compile(r"^/accounts/[^/]+/(?P<service>[a-z0-9_-]+)/")
_SEGMENT = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_MODEL = re.compile(r"^@?[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")


@dataclass
class Response:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names


class Transport(Protocol):
    async def request(
        self, method: str, path: str, *, content: bytes = b"", headers: dict[str, str] | None = None
    ) -> Response: ...

    async def aclose(self) -> None: ...


class CloudflareError(Exception):
    """A Cloudflare API call failed; the message names the resource and Cloudflare's reason.

    `status` is the HTTP status of the last answer, or 0 when no answer came (transport failure).
    """

    def __init__(
        self, resource: str, status: int, errors: list[dict[str, Any]], attempts: int = 1
    ) -> None:
        detail = "; ".join(f"{e.get('code')}: {e.get('message')}" for e in errors) or "no detail"
        where = f"HTTP {status}" if status else "no answer"
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        super().__init__(f"{resource}: {where}: {detail}{tries}")
        self.resource = resource
        self.status = status
        self.errors = errors
        self.attempts = attempts

    @property
    def codes(self) -> list[Any]:
        return [e.get("code") for e in self.errors]


class HttpTransport:
    """Requests over HTTP with an API token (httpx)."""

    def __init__(self, api_token: str, base_url: str = API_BASE, timeout: float = 30.0) -> None:
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_token}"},
            timeout=timeout,
        )

    async def request(
        self, method: str, path: str, *, content: bytes = b"", headers: dict[str, str] | None = None
    ) -> Response:
        reply = await self._client.request(method, path, content=content or None, headers=headers)
        try:
            body = reply.json()
        except ValueError:
            body = {"success": False, "errors": [{"code": reply.status_code, "message": reply.text[:200]}]}
        if not isinstance(body, dict):
            body = {"success": False, "errors": [{"code": reply.status_code, "message": str(body)[:200]}]}
        return Response(reply.status_code, body, {k.lower(): v for k, v in reply.headers.items()})

    async def aclose(self) -> None:
        await self._client.aclose()


def _param(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _statement(sql: str, params: Sequence[Any]) -> dict[str, Any]:
    """A D1 statement as the API takes it; ValueError past D1's per-statement limits."""
    if len(params) > D1_MAX_PARAMS:
        raise ValueError(f"a D1 statement binds at most {D1_MAX_PARAMS} parameters, this one {len(params)}: "
                         f"{sql[:60]}...")
    size = len(sql.encode("utf-8"))
    if size > D1_MAX_STATEMENT_BYTES:
        raise ValueError(f"a D1 statement is at most {D1_MAX_STATEMENT_BYTES:,} bytes of SQL, this one {size:,}")
    return {"sql": sql, "params": [_param(p) for p in params]}


def _json(payload: Any) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def _segment(kind: str, value: str) -> str:
    """A name that goes into a path as one segment, as is: no escaping, so nothing to escape."""
    if not isinstance(value, str) or not _SEGMENT.match(value) or value in (".", ".."):
        raise ValueError(f"{kind} must be 1-64 characters of A-Z a-z 0-9 _ . -, got {value!r}")
    return value


def _model_path(model: str) -> str:
    """The model id as a path: `@cf/baai/bge-m3` stays `@cf/baai/bge-m3` (never `%40cf%2F...`)."""
    if not isinstance(model, str) or not _MODEL.match(model) or ".." in model.split("/"):
        raise ValueError(f"model must look like @cf/author/name, got {model!r}")
    return model


def _check_id(kind: str, value: Any, limit: int) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{kind} must be a non-empty string, got {value!r}")
    size = len(value.encode("utf-8"))
    if size > limit:
        raise ValueError(f"{kind} {value[:20]!r}... is {size} bytes; Vectorize allows at most {limit}")
    return value


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: rare from Cloudflare; fall back to our own backoff
    return max(0.0, seconds) if math.isfinite(seconds) else None


T = TypeVar("T")


@dataclass
class _Call:
    """One client method's SDK call: the resource its errors name, and what its requests got back."""

    resource: str
    attempts: int = 1
    refused: tuple[Response, int] | None = None  # a 2xx answer whose envelope says it failed


_CALL: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("helppuff_cloudflare_call", default=None)


class _SDKTransport(httpx.AsyncBaseTransport):
    """The SDK's HTTP layer: each request the SDK builds is sent by the client's `_send` (paced,
    retried, counted) over the client's transport, and its answer handed back to the SDK."""

    def __init__(self, client: CloudflareClient) -> None:
        self._client = client

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.raw_path.decode("ascii").removeprefix(_SDK_PREFIX)  # as sent: escapes kept
        headers = {k.lower(): v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED}
        call = _CALL.get() or _Call(f"Cloudflare API {request.method} {path.partition('?')[0]}")
        reply, attempts = await self._client._send(
            call.resource, request.method, path, await request.aread(), headers=headers
        )
        call.attempts = attempts
        if reply.status < 400 and not reply.body.get("success", False):
            call.refused = (reply, attempts)
        answer = {k: v for k, v in reply.headers.items() if k.lower() not in _NOT_RETURNED}
        answer["content-type"] = "application/json"
        return httpx.Response(reply.status, headers=answer, content=json.dumps(reply.body).encode("utf-8"),
                              request=request)


def _plain(value: Any) -> Any:
    """An SDK model as the dict Cloudflare's JSON gave (API names, only the fields it sent)."""
    if isinstance(value, BaseModel):
        return value.to_dict(mode="json")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _rows(results: list[object] | None) -> list[dict[str, Any]]:
    """A D1 statement's rows: the SDK types them `object`, D1 sends one JSON object a row."""
    return cast(list[dict[str, Any]], list(results or []))


def _sdk_errors(body: object) -> list[dict[str, Any]]:
    """Cloudflare's errors from the body of an SDK APIStatusError (the envelope, parsed)."""
    if isinstance(body, dict):
        errors = body.get("errors") or []
        return [e if isinstance(e, dict) else {"code": None, "message": str(e)} for e in errors]
    return [{"code": None, "message": str(body)[:200]}] if body else []


@dataclass(frozen=True)
class Embeddings:
    """What an embedding call gave back: one vector per text, and the token count when reported."""

    vectors: list[list[float]]
    shape: list[int]
    prompt_tokens: int | None


class CloudflareClient:
    """D1, Vectorize and Workers AI for one account, through one transport."""

    def __init__(
        self,
        transport: Transport,
        account_id: str,
        *,
        max_attempts: int = 8,
        backoff: float = 0.5,
        max_delay: float = 30.0,
        rate_limit: Rate | str | None = CLOUDFLARE_RATE,
        max_retry_after: float = RATE_LIMIT_WINDOW,
        max_rate_limited: int = 10,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """`max_attempts` tries for 5xx answers and transport failures, backoff doubling from `backoff`
        seconds up to `max_delay`; `rate_limit` the pace (a Rate or "requests/seconds"; None: unpaced);
        429s waited out up to `max_rate_limited` times per call, each at most `max_retry_after` seconds.
        `sleep` and `clock` (monotonic seconds) are the pacer's and the retries' (a test's own)."""
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        if backoff < 0 or max_delay < 0 or max_retry_after < 0 or max_rate_limited < 0:
            raise ValueError("backoff, max_delay, max_retry_after and max_rate_limited must be >= 0")
        self.transport = transport
        self.account_id = account_id
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.max_delay = max_delay
        self.max_retry_after = max_retry_after
        self.max_rate_limited = max_rate_limited
        self._sleep = sleep or asyncio.sleep
        rate = Rate.parse(rate_limit, "rate_limit")
        self.pacer = Pacer(rate, clock, self._sleep) if rate is not None else None
        self.counts = CallCounts()
        # Cloudflare's SDK, its requests sent through `_send`: never retried by the SDK itself.
        self.sdk = AsyncCloudflare(
            api_token=_SDK_TOKEN, base_url=_SDK_BASE, max_retries=0,
            http_client=httpx.AsyncClient(transport=_SDKTransport(self)),
        )
        # The SDK looks the OS up on a worker thread before its first request, for a header of its
        # own; set now, so that no request waits on a thread (the client's calls run on one loop).
        self.sdk._platform = "Unknown"

    # --- sending ------------------------------------------------------------------------

    def _backoff(self, failures: int) -> float:
        """Seconds before the next try after `failures` failures: doubling, capped, equal jitter."""
        base = min(self.max_delay, self.backoff * (2 ** (failures - 1)))
        return base / 2 + random.uniform(0, base / 2)

    async def _wait(self, delay: float) -> None:
        self.counts.retry_wait += delay
        await self._sleep(delay)

    async def _send(
        self, resource: str, method: str, path: str, content: bytes = b"", content_type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[Response, int]:
        """Send with pacing and retries; returns the last answer (any status) and the requests it took.

        Every request goes through here: the SDK's (with the SDK's headers) and the hand-written ones.
        Raises CloudflareError only when no answer came at all.
        """
        headers = dict(headers or {})
        if content_type:
            headers["content-type"] = content_type
        headers = headers or None
        service = match["service"] if (match := _SERVICE.match(path)) else "other"
        failures = limited = 0
        while True:
            if self.pacer is not None:
                waited = await self.pacer.acquire()
                if waited > 0:
                    self.counts.paced += 1
                    self.counts.pace_wait += waited
            sent = failures + limited + 1
            self.counts.calls[service] = self.counts.calls.get(service, 0) + 1
            if sent > 1:
                self.counts.retries += 1
            reply: Response | None = None
            delay = 0.0
            try:
                reply = await self.transport.request(method, path, content=content, headers=headers)
            except TRANSPORT_ERRORS as exc:
                failures += 1
                if failures >= self.max_attempts:
                    self.counts.gave_up += 1
                    raise CloudflareError(
                        resource, 0, [{"code": None, "message": f"{type(exc).__name__}: {exc}"}], sent
                    ) from exc
                delay = self._backoff(failures)
                logger.warning("%s: %s (try %d of %d), retrying in %.2fs", resource, type(exc).__name__,
                               failures, self.max_attempts, delay)
            finally:
                if self.pacer is not None:
                    self.pacer.release()
            if reply is None:
                await self._wait(delay)
                continue
            if reply.status == 429:
                limited += 1
                if limited > self.max_rate_limited:
                    self.counts.gave_up += 1
                    return reply, sent
                after = _retry_after(reply.headers)
                delay = min(after, self.max_retry_after) if after is not None else self._backoff(limited)
                self.counts.rate_limited += 1
                if self.pacer is not None and after is not None:  # the account is blocked: every call waits
                    self.pacer.hold(delay)
                logger.warning("%s: HTTP 429, rate limited (%d of %d), waiting %.2fs", resource, limited,
                               self.max_rate_limited, delay)
                await self._wait(delay)
                continue
            if reply.status >= 500:
                failures += 1
                if failures >= self.max_attempts:
                    self.counts.gave_up += 1
                    return reply, sent
                after = _retry_after(reply.headers)
                delay = min(after, self.max_delay) if after is not None else self._backoff(failures)
                logger.warning("%s: HTTP %d (try %d of %d), retrying in %.2fs", resource, reply.status,
                               failures, self.max_attempts, delay)
                await self._wait(delay)
                continue
            return reply, sent

    @staticmethod
    def _check(resource: str, reply: Response, attempts: int = 1) -> Any:
        if reply.status >= 400 or not reply.body.get("success", False):
            raise CloudflareError(resource, reply.status, reply.body.get("errors") or [], attempts)
        return reply.body.get("result")

    async def _sdk_call(self, resource: str, call: Callable[[], Awaitable[T]]) -> T:
        """Run an SDK call; its failures as CloudflareError naming `resource`, with Cloudflare's codes."""
        state = _Call(resource)
        token = _CALL.set(state)
        try:
            result = await call()
        except APIStatusError as exc:
            raise CloudflareError(resource, exc.status_code, _sdk_errors(exc.body), state.attempts) from exc
        except APIConnectionError as exc:
            if isinstance(exc.__cause__, CloudflareError):  # no answer after every try (_send)
                raise exc.__cause__ from exc
            raise CloudflareError(
                resource, 0, [{"code": None, "message": f"{type(exc).__name__}: {exc}"}], state.attempts
            ) from exc
        finally:
            _CALL.reset(token)
        if state.refused is not None:
            self._check(resource, *state.refused)
        return result

    async def _call(self, resource: str, method: str, path: str, payload: Any = None) -> Any:
        """A hand-written call: JSON in, the envelope's result out (CloudflareError on failure)."""
        if payload is None:
            reply, attempts = await self._send(resource, method, path)
        else:
            reply, attempts = await self._send(resource, method, path, _json(payload), "application/json")
        return self._check(resource, reply, attempts)

    # --- D1 (through the SDK) -----------------------------------------------------------

    async def d1_batch(self, database_id: str, statements: list[tuple[str, list[Any]]]) -> list[list[dict[str, Any]]]:
        """Run statements as one D1 batch (one transaction); returns each statement's rows."""
        batch: list[Any] = [_statement(sql, params) for sql, params in statements]
        page = await self._sdk_call(f"D1 database {database_id}", lambda: self.sdk.d1.database.query(
            database_id, account_id=self.account_id, batch=batch))
        return [_rows(item.results) for item in page.result or []]

    async def d1_query(self, database_id: str, sql: str, params: list[Any] | tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """Run one statement; returns its rows as dicts."""
        statement = _statement(sql, params)
        page = await self._sdk_call(f"D1 database {database_id}", lambda: self.sdk.d1.database.query(
            database_id, account_id=self.account_id, sql=statement["sql"], params=statement["params"]))
        return _rows(page.result[-1].results) if page.result else []

    async def d1_create_database(self, name: str) -> dict[str, Any]:
        """Create a D1 database; returns it ({"uuid", "name", "created_at", ...})."""
        created = await self._sdk_call(f"D1 database {name}", lambda: self.sdk.d1.database.create(
            account_id=self.account_id, name=name))
        return _plain(created)

    async def d1_list_databases(self, name: str | None = None) -> list[dict[str, Any]]:
        """The account's D1 databases, or those whose name matches `name`: every page of them."""

        async def every_page() -> list[Any]:
            page = await self.sdk.d1.database.list(
                account_id=self.account_id, name=name or omit, per_page=D1_LIST_PER_PAGE)
            found = list(page.result or [])
            while len(page.result or []) >= D1_LIST_PER_PAGE:  # a full page: there may be more
                page = await page.get_next_page()
                found.extend(page.result or [])
            return found

        return [_plain(db) for db in await self._sdk_call("D1 databases", every_page)]

    # --- Vectorize (through the SDK, but upsert and query) ------------------------------

    def _index_path(self, name: str, tail: str = "") -> str:
        return f"/accounts/{self.account_id}/vectorize/v2/indexes/{_segment('index name', name)}{tail}"

    async def vectorize_create_index(
        self, name: str, dimensions: int, metric: str = "cosine", description: str = ""
    ) -> dict[str, Any]:
        """Create an index; returns it ({"name", "config": {"dimensions", "metric"}, ...})."""
        _segment("index name", name)
        if not 1 <= int(dimensions) <= 1536:
            raise ValueError(f"dimensions must be 1-1536, got {dimensions}")
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
        config: Any = {"dimensions": int(dimensions), "metric": metric}
        created = await self._sdk_call(f"Vectorize index {name}", lambda: self.sdk.vectorize.indexes.create(
            account_id=self.account_id, name=name, config=config, description=description or omit))
        return _plain(created) or {}

    async def vectorize_get_index(self, name: str) -> dict[str, Any] | None:
        """The index ({"name", "config", ...}), or None when it does not exist."""
        _segment("index name", name)
        try:
            index = await self._sdk_call(f"Vectorize index {name}", lambda: self.sdk.vectorize.indexes.get(
                name, account_id=self.account_id))
        except CloudflareError as exc:
            if exc.status == 404 or (0 < exc.status < 500 and _index_not_found(exc.errors)):
                return None
            raise
        return _plain(index)

    async def vectorize_list_indexes(self) -> list[dict[str, Any]]:
        page = await self._sdk_call("Vectorize indexes", lambda: self.sdk.vectorize.indexes.list(
            account_id=self.account_id))
        return [_plain(index) for index in page.result or []]

    async def vectorize_delete_index(self, name: str) -> None:
        _segment("index name", name)
        await self._sdk_call(f"Vectorize index {name}", lambda: self.sdk.vectorize.indexes.delete(
            name, account_id=self.account_id))

    async def vectorize_index_info(self, name: str) -> dict[str, Any]:
        """{"dimensions", "vectorCount", "processedUpToMutation", "processedUpToDatetime"}."""
        _segment("index name", name)
        info = await self._sdk_call(f"Vectorize index {name}", lambda: self.sdk.vectorize.indexes.info(
            name, account_id=self.account_id))
        return _plain(info) or {}

    async def vectorize_create_metadata_index(self, name: str, property_name: str, index_type: str) -> str | None:
        """Index a metadata property so that queries can filter on it; returns the mutation id."""
        if index_type not in METADATA_INDEX_TYPES:
            raise ValueError(f"index_type must be one of {', '.join(METADATA_INDEX_TYPES)}, got {index_type!r}")
        if not property_name:
            raise ValueError("property_name must not be empty")
        _segment("index name", name)
        created = await self._sdk_call(
            f"Vectorize index {name}", lambda: self.sdk.vectorize.indexes.metadata_index.create(
                name, account_id=self.account_id, property_name=property_name,
                index_type=index_type))  # type: ignore[arg-type]  # checked above
        return created.mutation_id if created is not None else None

    async def vectorize_list_metadata_indexes(self, name: str) -> list[dict[str, Any]]:
        """[{"propertyName", "indexType"}, ...]."""
        _segment("index name", name)
        listed = await self._sdk_call(f"Vectorize index {name}", lambda: self.sdk.vectorize.indexes.metadata_index.list(
            name, account_id=self.account_id))
        return [_plain(m) for m in (listed.metadata_indexes if listed is not None else None) or []]

    async def vectorize_upsert(self, name: str, vectors: Sequence[Mapping[str, Any]]) -> str | None:
        """Insert or replace vectors ({"id", "values", "namespace"?, "metadata"?}); returns the mutation id.

        The body is NDJSON, one vector per line, sent as `application/x-ndjson`. Written by hand: the
        SDK's `upsert()` labels the NDJSON `application/json`, which Vectorize refuses, and passes it
        on through a form its own client deprecates (raw bytes as a JSON body; tests/test_cloudflare_sdk.py).
        """
        if not vectors:
            raise ValueError("vectorize_upsert needs at least one vector")
        if len(vectors) > MAX_UPSERT_VECTORS:
            raise ValueError(f"at most {MAX_UPSERT_VECTORS} vectors per upsert, got {len(vectors)}")
        _segment("index name", name)
        lines = []
        for vector in vectors:
            item: dict[str, Any] = {
                "id": _check_id("vector id", vector.get("id"), MAX_VECTOR_ID_BYTES),
                "values": [float(v) for v in vector["values"]],
            }
            if vector.get("namespace") is not None:
                item["namespace"] = _check_id("namespace", vector["namespace"], MAX_NAMESPACE_BYTES)
            if vector.get("metadata") is not None:
                item["metadata"] = dict(vector["metadata"])
                size = len(_json(item["metadata"]))
                if size > MAX_METADATA_BYTES:
                    raise ValueError(f"vector {item['id']!r}: metadata is {size} bytes; Vectorize allows at most "
                                     f"{MAX_METADATA_BYTES} (10 KiB)")
            lines.append(_json(item))
        body = b"\n".join(lines) + b"\n"
        resource = f"Vectorize index {name}"
        reply, attempts = await self._send(resource, "POST", self._index_path(name, "/upsert"), body, NDJSON)
        return (self._check(resource, reply, attempts) or {}).get("mutationId")

    async def vectorize_query(
        self,
        name: str,
        vector: Sequence[float],
        top_k: int = 20,
        namespace: str | None = None,
        return_metadata: str = "none",
        return_values: bool = False,
        filter: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """The nearest vectors: [{"id", "score", "metadata"?, "values"?, "namespace"?}, ...], best first.

        Written by hand: the SDK's typed `query()` has no `namespace`, and each site is a namespace of
        the index, so the SDK's query would search every site's passages (tests/test_cloudflare_sdk.py).
        """
        if return_metadata not in RETURN_METADATA:
            raise ValueError(f"return_metadata must be one of {', '.join(RETURN_METADATA)}, got {return_metadata!r}")
        limit = MAX_TOP_K_WITH_VALUES if return_values or return_metadata == "all" else MAX_TOP_K
        if not 1 <= top_k <= limit:
            raise ValueError(
                f"top_k must be 1-{limit} (Vectorize allows {MAX_TOP_K_WITH_VALUES} with values or all "
                f"metadata, {MAX_TOP_K} without), got {top_k}"
            )
        body: dict[str, Any] = {
            "vector": [float(v) for v in vector],
            "topK": top_k,
            "returnMetadata": return_metadata,
            "returnValues": bool(return_values),
        }
        if namespace is not None:
            body["namespace"] = _check_id("namespace", namespace, MAX_NAMESPACE_BYTES)
        if filter:
            body["filter"] = dict(filter)
        result = await self._call(f"Vectorize index {name}", "POST", self._index_path(name, "/query"), body)
        return list((result or {}).get("matches") or [])

    async def vectorize_get_by_ids(self, name: str, ids: Sequence[str]) -> list[dict[str, Any]]:
        """The stored vectors with these ids ({"id", "values", "metadata", "namespace"}); absent ids are left out."""
        _segment("index name", name)
        wanted = [_check_id("vector id", i, MAX_VECTOR_ID_BYTES) for i in ids]
        found = await self._sdk_call(f"Vectorize index {name}", lambda: self.sdk.vectorize.indexes.get_by_ids(
            name, account_id=self.account_id, ids=wanted))
        return list(found or [])  # type: ignore[call-overload]  # the SDK types it `object`: the JSON list

    async def vectorize_delete_by_ids(self, name: str, ids: Sequence[str]) -> str | None:
        """Delete vectors by id (absent ids are fine); returns the mutation id."""
        _segment("index name", name)
        doomed = [_check_id("vector id", i, MAX_VECTOR_ID_BYTES) for i in ids]
        deleted = await self._sdk_call(f"Vectorize index {name}", lambda: self.sdk.vectorize.indexes.delete_by_ids(
            name, account_id=self.account_id, ids=doomed))
        return deleted.mutation_id if deleted is not None else None

    # --- Workers AI ---------------------------------------------------------------------

    async def ai_run(self, model: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Run a model; returns its `result`. The path keeps the model's `/` as they are.

        Written by hand: the SDK's `ai.run` escapes the `/` of the model name (`@cf%2Fbaai%2Fbge-m3`),
        a path Cloudflare does not route (HTTP 400, 7000 "No route for that URI"; tests/test_cloudflare_sdk.py).
        """
        path = f"/accounts/{self.account_id}/ai/run/{_model_path(model)}"
        result = await self._call(f"Workers AI model {model}", "POST", path, dict(payload))
        return result if isinstance(result, dict) else {"result": result}

    async def ai_embed(self, model: str, texts: Sequence[str], *, field: str = "text") -> Embeddings:
        """Embed up to 100 texts with one call, sent as `{field: texts}`; the vectors come back in order.

        The field is the model's input form (helppuff_crawl/embed/models.py reads it from the shared
        contract: "text" for bge-m3 and the local models, "documents" or "queries" for qwen3-embedding).
        Every embedding model answers {"shape", "data"}.
        """
        texts = list(texts)
        if len(texts) > MAX_EMBED_TEXTS:
            raise ValueError(f"at most {MAX_EMBED_TEXTS} texts per embedding call, got {len(texts)}")
        if not texts:
            return Embeddings([], [0, 0], 0)
        if not all(isinstance(t, str) for t in texts):
            raise ValueError("texts must be strings")
        result = await self.ai_run(model, {field: texts})
        data = result.get("data")
        if not isinstance(data, list) or len(data) != len(texts):
            got = len(data) if isinstance(data, list) else type(data).__name__
            raise CloudflareError(
                f"Workers AI model {model}", 200,
                [{"code": None, "message": f"expected {len(texts)} embeddings in result.data, got {got}"}],
            )
        usage = result.get("usage") or {}
        tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        shape = result.get("shape") or [len(data), len(data[0]) if data else 0]
        return Embeddings([[float(x) for x in row] for row in data], list(shape), tokens)

    async def embed(self, model: str, texts: Sequence[str], *, field: str = "text") -> list[list[float]]:
        """Embed up to 100 texts with one call; one vector per text, in order."""
        return (await self.ai_embed(model, texts, field=field)).vectors

    # --- Workers (through the SDK): the deployed Worker's secrets, by name ----------------

    async def worker_secrets(self, script_name: str) -> list[dict[str, Any]]:
        """The deployed Worker's secrets ({"name", "type"}; Cloudflare never returns their values)."""

        async def every() -> list[Any]:
            return [secret async for secret in self.sdk.workers.scripts.secrets.list(
                script_name, account_id=self.account_id)]

        return [_plain(secret) for secret in await self._sdk_call(f"Worker {script_name}'s secrets", every)]

    # --- Queues (through the SDK): a producer and an HTTP pull consumer -------------------

    async def queues_list(self) -> list[dict[str, Any]]:
        """The account's queues ({"queue_id", "queue_name", "consumers", ...})."""

        async def every() -> list[Any]:
            return [queue async for queue in self.sdk.queues.list(account_id=self.account_id)]

        return [_plain(queue) for queue in await self._sdk_call("Queues", every)]

    async def queue_create(self, name: str) -> dict[str, Any]:
        created = await self._sdk_call(f"queue {name}", lambda: self.sdk.queues.create(
            account_id=self.account_id, queue_name=name))
        return _plain(created)

    async def queue_consumers(self, queue_id: str) -> list[dict[str, Any]]:
        async def every() -> list[Any]:
            return [c async for c in self.sdk.queues.consumers.list(queue_id, account_id=self.account_id)]

        return [_plain(c) for c in await self._sdk_call(f"queue {queue_id} consumers", every)]

    async def queue_create_pull_consumer(self, queue_id: str, settings: Mapping[str, Any],
                                         dead_letter_queue: str | None = None) -> dict[str, Any]:
        """Attach an HTTP pull consumer (`settings`: batch_size, max_retries, retry_delay, visibility_timeout_ms)."""
        created = await self._sdk_call(f"queue {queue_id} consumers", lambda: self.sdk.queues.consumers.create(
            queue_id, account_id=self.account_id, type="http_pull", settings=dict(settings),  # type: ignore[arg-type]
            dead_letter_queue=dead_letter_queue or omit))
        return _plain(created)

    async def queue_send(self, queue_id: str, body: str, delay_seconds: float = 0) -> None:
        """Send one message as text (a pull consumer reads a text body as sent, a JSON one as base64)."""
        await self._sdk_call(f"queue {queue_id}", lambda: self.sdk.queues.messages.push(
            queue_id, account_id=self.account_id, body=body, content_type="text",
            delay_seconds=delay_seconds if delay_seconds > 0 else omit))

    async def queue_pull(self, queue_id: str, batch_size: int, visibility_timeout_ms: int) -> tuple[list[dict[str, Any]], int]:
        """Lease up to `batch_size` messages; (the messages, the queue's backlog count)."""
        pulled = await self._sdk_call(f"queue {queue_id}", lambda: self.sdk.queues.messages.pull(
            queue_id, account_id=self.account_id, batch_size=batch_size, visibility_timeout_ms=visibility_timeout_ms))
        found = _plain(pulled) or {}
        return list(found.get("messages") or []), int(found.get("message_backlog_count") or 0)

    async def queue_ack(self, queue_id: str, acks: Sequence[str] = (),
                        retries: Sequence[tuple[str, float]] = ()) -> dict[str, Any]:
        """Acknowledge leases, and put others back after a delay in seconds."""
        done = await self._sdk_call(f"queue {queue_id}", lambda: self.sdk.queues.messages.ack(
            queue_id, account_id=self.account_id, acks=[{"lease_id": lease} for lease in acks],
            retries=[{"lease_id": lease, "delay_seconds": delay} for lease, delay in retries]))
        return _plain(done) or {}

    async def aclose(self) -> None:
        """Close the transport. The SDK's HTTP layer (_SDKTransport) holds no connection of its own,
        so it is left open: as before, a transport that reopens (the local cloud's) keeps working."""
        await self.transport.aclose()


def _index_not_found(errors: Sequence[Any]) -> bool:
    """Vectorize reports a missing index as error 3000 `vectorize.index.not_found`, not always with 404."""
    return any(
        isinstance(e, dict) and "not_found" in str(e.get("message", "")) and e.get("code") == 3000
        for e in errors or []
    )
