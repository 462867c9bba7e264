"""Contract tests of CloudflareClient against a fake Cloudflare API on loopback (real HTTP).

Each test pins what the client sends (method, exact path, headers, body) to what Cloudflare's API
reference documents, the page cited beside it, and how it reads the answers, errors and retries.
The requests of D1 and of Vectorize's indexes, metadata indexes and vectors by id are built by
Cloudflare's SDK, and the tests pin them as the SDK sends them (its User-Agent says which);
Workers AI, Vectorize upsert and query are the client's own (tests/test_cloudflare_sdk.py says why).
An optional smoke test at the end runs against a real account when credentials are set.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted

from helppuff_crawl.cloudflare.client import CloudflareClient, CloudflareError, HttpTransport
from tests.conftest import run_async
from tests.fake_cloudflare import Canned, FakeCloudflare

TOKEN = "tok-123"
ACC = "acc"
BASE = "/client/v4/accounts/acc"


@pytest.fixture
def fake() -> Iterator[FakeCloudflare]:
    with FakeCloudflare() as server:
        yield server


class _Sleeps:
    """Records the client's waits instead of waiting, on a clock of its own that they move on."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.now = 1000.0

    def clock(self) -> float:
        return self.now

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        self.now += delay


def _client(fake: FakeCloudflare, sleeps: _Sleeps | None = None, **kwargs: Any) -> CloudflareClient:
    sleeps = sleeps or _Sleeps()
    return CloudflareClient(HttpTransport(TOKEN, fake.url), ACC, sleep=sleeps, clock=sleeps.clock, **kwargs)


def _only(fake: FakeCloudflare) -> Any:
    assert len(fake.requests) == 1, [r.path for r in fake.requests]
    request = fake.requests[0]
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    return request


def _by_sdk(*requests: Any) -> None:
    """Built by Cloudflare's SDK, and sent with the transport's token (never the SDK's placeholder)."""
    for request in requests:
        assert request.headers["user-agent"].startswith("AsyncCloudflare/Python "), request.path
        assert request.headers["authorization"] == f"Bearer {TOKEN}"


def _by_hand(*requests: Any) -> None:
    for request in requests:
        assert not request.headers["user-agent"].startswith("AsyncCloudflare/"), request.path
        assert request.headers["authorization"] == f"Bearer {TOKEN}"


# --- D1 ---------------------------------------------------------------------------------


@pytest_twisted.inlineCallbacks
def test_d1_query_sends_sql_and_params_as_strings(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_d1_query(fake))


async def _d1_query(fake: FakeCloudflare) -> None:
    # https://developers.cloudflare.com/api/resources/d1/subresources/database/methods/query/
    fake.on("POST", "/accounts/acc/d1/database/db-1/query",
            Canned(result=[{"results": [{"n": 1}], "success": True, "meta": {}}]))
    client = _client(fake)
    rows = await client.d1_query("db-1", "SELECT ? AS a, ? AS b, ? AS c, ? AS d, ? AS e", [1, "x", None, True, 2.5])
    assert rows == [{"n": 1}]
    request = _only(fake)
    _by_sdk(request)
    assert (request.method, request.path) == ("POST", f"{BASE}/d1/database/db-1/query")
    assert request.headers["content-type"] == "application/json"
    assert request.json() == {"sql": "SELECT ? AS a, ? AS b, ? AS c, ? AS d, ? AS e",
                              "params": ["1", "x", None, "1", "2.5"]}
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_d1_batch_sends_one_request_with_every_statement(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_d1_batch(fake))


async def _d1_batch(fake: FakeCloudflare) -> None:
    # The same endpoint, with `batch` (the SDK's second form of query): one transaction.
    fake.on("POST", "/accounts/acc/d1/database/db-1/query",
            Canned(result=[{"results": [], "success": True, "meta": {"changes": 1}},
                           {"results": [{"n": 2}], "success": True, "meta": {}}]))
    client = _client(fake)
    rows = await client.d1_batch("db-1", [("INSERT INTO t VALUES (?)", [7]), ("SELECT count(*) AS n FROM t", [])])
    assert rows == [[], [{"n": 2}]]
    request = _only(fake)
    _by_sdk(request)
    assert (request.method, request.path) == ("POST", f"{BASE}/d1/database/db-1/query")
    assert request.json() == {"batch": [{"sql": "INSERT INTO t VALUES (?)", "params": ["7"]},
                                        {"sql": "SELECT count(*) AS n FROM t", "params": []}]}
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_d1_create_and_list_databases(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_d1_databases(fake))


async def _d1_databases(fake: FakeCloudflare) -> None:
    # https://developers.cloudflare.com/api/resources/d1/subresources/database/methods/create/
    # https://developers.cloudflare.com/api/resources/d1/subresources/database/methods/list/
    created = {"uuid": "7b16-...", "name": "helppuff kb", "version": "production",
               "created_at": "2026-10-04T00:00:00Z"}
    fake.on("POST", "/accounts/acc/d1/database", Canned(result=created))
    fake.on("GET", "/accounts/acc/d1/database", Canned(result=[created]))
    client = _client(fake)
    assert await client.d1_create_database("helppuff kb") == created
    assert await client.d1_list_databases("helppuff kb") == [created]
    create, listing = fake.requests
    _by_sdk(create, listing)
    assert (create.method, create.path, create.json()) == ("POST", f"{BASE}/d1/database", {"name": "helppuff kb"})
    assert (listing.method, listing.path) == ("GET", f"{BASE}/d1/database?name=helppuff+kb&per_page=1000")
    assert listing.body == b"" and "content-type" not in listing.headers
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_d1_list_reads_every_page(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_d1_pages(fake))


async def _d1_pages(fake: FakeCloudflare) -> None:
    # The list is paged (page from 1, per_page 10 to 10,000, result_info): a full page asks for the
    # next one, a short page is the last.
    first = [{"uuid": f"u-{i}", "name": f"db-{i}"} for i in range(1000)]
    fake.on("GET", "/accounts/acc/d1/database",
            Canned(result=first), Canned(result=[{"uuid": "u-last", "name": "db-last"}]))
    client = _client(fake)
    found = await client.d1_list_databases()
    assert [db["uuid"] for db in found] == [f"u-{i}" for i in range(1000)] + ["u-last"]
    assert [r.path for r in fake.requests] == [f"{BASE}/d1/database?per_page=1000",
                                               f"{BASE}/d1/database?per_page=1000&page=2"]
    _by_sdk(*fake.requests)
    await client.aclose()


# --- Vectorize --------------------------------------------------------------------------

_INDEX = {"name": "helppuff-acme", "config": {"dimensions": 1024, "metric": "cosine"},
          "created_on": "2026-10-04T00:00:00Z", "modified_on": "2026-10-04T00:00:00Z", "description": ""}


@pytest_twisted.inlineCallbacks
def test_vectorize_index_and_metadata_index_requests(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_vectorize_indexes(fake))


async def _vectorize_indexes(fake: FakeCloudflare) -> None:
    # https://developers.cloudflare.com/api/resources/vectorize/subresources/indexes/methods/create/
    fake.on("POST", "/accounts/acc/vectorize/v2/indexes", Canned(result=_INDEX))
    # https://developers.cloudflare.com/api/resources/vectorize/subresources/indexes/methods/get/
    fake.on("GET", "/accounts/acc/vectorize/v2/indexes/helppuff-acme", Canned(result=_INDEX))
    # https://developers.cloudflare.com/api/resources/vectorize/subresources/indexes/subresources/metadata_index/methods/create/
    fake.on("POST", "/accounts/acc/vectorize/v2/indexes/helppuff-acme/metadata_index/create",
            Canned(result={"mutationId": "m-1"}))
    # .../metadata_index/methods/list/
    fake.on("GET", "/accounts/acc/vectorize/v2/indexes/helppuff-acme/metadata_index/list",
            Canned(result={"metadataIndexes": [{"propertyName": "category", "indexType": "string"}]}))
    # .../indexes/methods/info/, .../methods/list/, .../methods/delete/
    info = {"dimensions": 1024, "vectorCount": 7, "processedUpToMutation": "m-0",
            "processedUpToDatetime": "2026-10-04T00:00:01Z"}
    fake.on("GET", "/accounts/acc/vectorize/v2/indexes/helppuff-acme/info", Canned(result=info))
    fake.on("GET", "/accounts/acc/vectorize/v2/indexes", Canned(result=[_INDEX]))
    fake.on("DELETE", "/accounts/acc/vectorize/v2/indexes/helppuff-acme", Canned(result=None))
    client = _client(fake)
    assert await client.vectorize_create_index("helppuff-acme", 1024, "cosine") == _INDEX
    assert await client.vectorize_get_index("helppuff-acme") == _INDEX
    assert await client.vectorize_create_metadata_index("helppuff-acme", "category", "string") == "m-1"
    assert await client.vectorize_list_metadata_indexes("helppuff-acme") == [
        {"propertyName": "category", "indexType": "string"}
    ]
    assert await client.vectorize_index_info("helppuff-acme") == info
    assert await client.vectorize_list_indexes() == [_INDEX]
    assert await client.vectorize_delete_index("helppuff-acme") is None
    create, get, meta, listing, info_request, indexes, delete = fake.requests
    _by_sdk(*fake.requests)
    assert (create.method, create.path) == ("POST", f"{BASE}/vectorize/v2/indexes")
    assert create.json() == {"name": "helppuff-acme", "config": {"dimensions": 1024, "metric": "cosine"}}
    assert (get.method, get.path, get.body) == ("GET", f"{BASE}/vectorize/v2/indexes/helppuff-acme", b"")
    assert meta.path == f"{BASE}/vectorize/v2/indexes/helppuff-acme/metadata_index/create"
    assert meta.json() == {"propertyName": "category", "indexType": "string"}
    assert (listing.method, listing.path) == ("GET", f"{BASE}/vectorize/v2/indexes/helppuff-acme/metadata_index/list")
    assert (info_request.method, info_request.path) == ("GET", f"{BASE}/vectorize/v2/indexes/helppuff-acme/info")
    assert (indexes.method, indexes.path, indexes.body) == ("GET", f"{BASE}/vectorize/v2/indexes", b"")
    assert (delete.method, delete.path, delete.body) == ("DELETE", f"{BASE}/vectorize/v2/indexes/helppuff-acme", b"")
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_upsert_is_ndjson_with_its_content_type(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_upsert(fake))


async def _upsert(fake: FakeCloudflare) -> None:
    # https://developers.cloudflare.com/api/resources/vectorize/subresources/indexes/methods/upsert/
    # "body: ndjson file containing vectors to upsert" (the SDK sends it otherwise: the trap).
    fake.on("POST", "/accounts/acc/vectorize/v2/indexes/helppuff-acme/upsert", Canned(result={"mutationId": "m-2"}))
    client = _client(fake)
    vectors = [
        {"id": "a" * 40, "values": [0.5, -1, 2], "namespace": "acme",
         "metadata": {"category": "pricing", "url": "https://acme.com.au/prices"}},
        {"id": "b" * 40, "values": [1.0, 0.0, 0.0]},
    ]
    assert await client.vectorize_upsert("helppuff-acme", vectors) == "m-2"
    request = _only(fake)
    _by_hand(request)
    assert (request.method, request.path) == ("POST", f"{BASE}/vectorize/v2/indexes/helppuff-acme/upsert")
    assert request.headers["content-type"] == "application/x-ndjson"
    assert not request.body.startswith(b"[") and request.body.endswith(b"\n")
    assert request.body.count(b"\n") == 2
    assert request.ndjson() == [
        {"id": "a" * 40, "values": [0.5, -1.0, 2.0], "namespace": "acme",
         "metadata": {"category": "pricing", "url": "https://acme.com.au/prices"}},
        {"id": "b" * 40, "values": [1.0, 0.0, 0.0]},
    ]
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_query_get_and_delete_by_ids(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_query(fake))


async def _query(fake: FakeCloudflare) -> None:
    # https://developers.cloudflare.com/api/resources/vectorize/subresources/indexes/methods/query/
    matches = [{"id": "a", "score": 0.91, "metadata": {"category": "pricing"}, "namespace": "acme"}]
    fake.on("POST", "/accounts/acc/vectorize/v2/indexes/helppuff-acme/query",
            Canned(result={"count": 1, "matches": matches}))
    # https://developers.cloudflare.com/api/resources/vectorize/subresources/indexes/methods/get_by_ids/
    fake.on("POST", "/accounts/acc/vectorize/v2/indexes/helppuff-acme/get_by_ids",
            Canned(result=[{"id": "a", "values": [1.0, 0.0], "namespace": "acme"}]))
    # https://developers.cloudflare.com/api/resources/vectorize/subresources/indexes/methods/delete_by_ids/
    fake.on("POST", "/accounts/acc/vectorize/v2/indexes/helppuff-acme/delete_by_ids",
            Canned(result={"mutationId": "m-3"}))
    client = _client(fake)
    found = await client.vectorize_query("helppuff-acme", [0.1, 0.2], top_k=20, namespace="acme",
                                         return_metadata="indexed", filter={"category": {"$in": ["pricing"]}})
    assert found == matches
    assert await client.vectorize_get_by_ids("helppuff-acme", ["a", "zz"]) == [
        {"id": "a", "values": [1.0, 0.0], "namespace": "acme"}
    ]
    assert await client.vectorize_delete_by_ids("helppuff-acme", ["a"]) == "m-3"
    query, get, delete = fake.requests
    _by_hand(query)  # the SDK's typed query() has no namespace
    _by_sdk(get, delete)
    assert query.headers["content-type"] == "application/json"
    assert query.json() == {"vector": [0.1, 0.2], "topK": 20, "returnMetadata": "indexed", "returnValues": False,
                            "namespace": "acme", "filter": {"category": {"$in": ["pricing"]}}}
    assert (get.path, get.json()) == (f"{BASE}/vectorize/v2/indexes/helppuff-acme/get_by_ids", {"ids": ["a", "zz"]})
    assert (delete.path, delete.json()) == (f"{BASE}/vectorize/v2/indexes/helppuff-acme/delete_by_ids", {"ids": ["a"]})
    await client.aclose()


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (Canned(404, errors=[(3000, 'vectorize.index.not_found - Index name "helppuff-acme"')]), None),
        # Vectorize also answers a missing index with HTTP 400 and code 3000.
        (Canned(400, errors=[(3000, 'vectorize.index.not_found - Index name "helppuff-acme"')]), None),
        (Canned(200, result=_INDEX), _INDEX),
    ],
)
@pytest_twisted.inlineCallbacks
def test_get_index_is_none_when_missing(fake: FakeCloudflare, answer: Canned, expected: Any):  # type: ignore[no-untyped-def]
    yield run_async(_get_index(fake, answer, expected))


async def _get_index(fake: FakeCloudflare, answer: Canned, expected: Any) -> None:
    fake.on("GET", "/accounts/acc/vectorize/v2/indexes/helppuff-acme", answer)
    client = _client(fake)
    assert await client.vectorize_get_index("helppuff-acme") == expected
    await client.aclose()


# --- Workers AI -------------------------------------------------------------------------


@pytest_twisted.inlineCallbacks
def test_ai_run_keeps_the_model_path_unescaped(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_ai_run(fake))


async def _ai_run(fake: FakeCloudflare) -> None:
    # https://developers.cloudflare.com/api/resources/ai/methods/run/ and
    # https://developers.cloudflare.com/workers-ai/models/bge-m3/ ({text: string[]} -> {shape, data})
    fake.on("POST", "/accounts/acc/ai/run/@cf/baai/bge-m3",
            Canned(result={"shape": [2, 3], "data": [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], "pooling": "cls"}))
    client = _client(fake)
    vectors = await client.embed("@cf/baai/bge-m3", ["hot water", "blocked drain"])
    assert vectors == [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]
    request = _only(fake)
    _by_hand(request)
    assert request.path == "/client/v4/accounts/acc/ai/run/@cf/baai/bge-m3"  # not the SDK's @cf%2Fbaai%2Fbge-m3
    assert request.headers["content-type"] == "application/json"
    assert request.json() == {"text": ["hot water", "blocked drain"]}
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_embedding_inputs_go_in_the_field_given(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_field(fake))


async def _field(fake: FakeCloudflare) -> None:
    fake.on("POST", "/accounts/acc/ai/run/@cf/qwen/qwen3-embedding-0.6b",
            Canned(result={"data": [[1.0, 0.0]], "shape": [1, 2]}))
    client = _client(fake)
    await client.embed("@cf/qwen/qwen3-embedding-0.6b", ["how much is a tap?"], field="queries")
    assert _only(fake).json() == {"queries": ["how much is a tap?"]}
    await client.aclose()


# --- validation before sending ----------------------------------------------------------

_VALIDATION = [
    ("upsert id over 64 bytes", "vectorize_upsert", ("ix", [{"id": "é" * 33, "values": [1.0]}]), {}, "66 bytes"),
    ("upsert of nothing", "vectorize_upsert", ("ix", []), {}, "at least one"),
    ("upsert NaN", "vectorize_upsert", ("ix", [{"id": "a", "values": [float("nan")]}]), {}, "not JSON compliant"),
    ("namespace over 64 bytes", "vectorize_upsert", ("ix", [{"id": "a", "values": [1.0], "namespace": "n" * 65}]),
     {}, "65 bytes"),
    ("topK 51 with values", "vectorize_query", ("ix", [1.0]), {"top_k": 51, "return_values": True}, "1-50"),
    ("topK 51 with all metadata", "vectorize_query", ("ix", [1.0]), {"top_k": 51, "return_metadata": "all"}, "1-50"),
    ("topK 101", "vectorize_query", ("ix", [1.0]), {"top_k": 101}, "1-100"),
    ("topK 0", "vectorize_query", ("ix", [1.0]), {"top_k": 0}, "1-100"),
    ("returnMetadata yes", "vectorize_query", ("ix", [1.0]), {"return_metadata": "yes"}, "none, indexed, all"),
    ("101 texts", "embed", ("@cf/baai/bge-m3", ["t"] * 101), {}, "at most 100"),
    ("model with ..", "ai_run", ("@cf/../../d1", {}), {}, "model must look like"),
    ("model with ?", "ai_run", ("@cf/x?y=1", {}), {}, "model must look like"),
    ("index name with /", "vectorize_get_index", ("a/b",), {}, "index name"),
    ("metric", "vectorize_create_index", ("ix", 8, "manhattan"), {}, "metric"),
    ("dimensions", "vectorize_create_index", ("ix", 2048), {}, "1-1536"),
    ("metadata index type", "vectorize_create_metadata_index", ("ix", "price", "float"), {}, "index_type"),
]


@pytest.mark.parametrize(("case", "method", "args", "kwargs", "message"), _VALIDATION, ids=[c[0] for c in _VALIDATION])
@pytest_twisted.inlineCallbacks
def test_limits_are_checked_before_sending(  # type: ignore[no-untyped-def]
    fake: FakeCloudflare, case: str, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], message: str
):
    yield run_async(_validation(fake, method, args, kwargs, message))


async def _validation(fake: FakeCloudflare, method: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                      message: str) -> None:
    client = _client(fake)
    with pytest.raises(ValueError, match=message.replace("?", r"\?").replace("(", r"\(")):
        await getattr(client, method)(*args, **kwargs)
    assert fake.requests == []
    await client.aclose()


# --- errors and retries -----------------------------------------------------------------

_ERRORS = [
    ("401", "POST", "/accounts/acc/d1/database/kb/query", Canned(401, errors=[(10000, "Authentication error")]),
     "d1", "D1 database kb: HTTP 401: 10000: Authentication error", 1),
    ("403", "POST", "/accounts/acc/vectorize/v2/indexes/helppuff-acme/query",
     Canned(403, errors=[(10000, "Authentication error")]), "query",
     "Vectorize index helppuff-acme: HTTP 403: 10000: Authentication error", 1),
    ("404 index", "POST", "/accounts/acc/vectorize/v2/indexes/helppuff-acme/upsert",
     Canned(404, errors=[(3000, 'vectorize.index.not_found - Index name "helppuff-acme"')]), "upsert",
     'Vectorize index helppuff-acme: HTTP 404: 3000: vectorize.index.not_found - Index name "helppuff-acme"', 1),
    ("404 index, by the SDK", "POST", "/accounts/acc/vectorize/v2/indexes/helppuff-acme/get_by_ids",
     Canned(404, errors=[(3000, 'vectorize.index.not_found - Index name "helppuff-acme"')]), "get_by_ids",
     'Vectorize index helppuff-acme: HTTP 404: 3000: vectorize.index.not_found - Index name "helppuff-acme"', 1),
    ("unknown database, by the SDK", "POST", "/accounts/acc/d1/database/kb/query",
     Canned(404, errors=[(7404, "The database kb could not be found")]), "d1",
     "D1 database kb: HTTP 404: 7404: The database kb could not be found", 1),
    ("dimension mismatch", "POST", "/accounts/acc/vectorize/v2/indexes/helppuff-acme/upsert",
     Canned(400, errors=[(40012, 'invalid vector for id="a", expected 1024 dimensions, and got 384 dimensions')]),
     "upsert", ("Vectorize index helppuff-acme: HTTP 400: 40012: invalid vector for id=\"a\", expected 1024 "
                "dimensions, and got 384 dimensions"), 1),
    ("unknown model", "POST", "/accounts/acc/ai/run/@cf/baai/bge-m3",
     Canned(400, errors=[(5007, "No such model @cf/baai/bge-m3 or task")]), "embed",
     "Workers AI model @cf/baai/bge-m3: HTTP 400: 5007: No such model @cf/baai/bge-m3 or task", 1),
    ("429 exhausted", "POST", "/accounts/acc/ai/run/@cf/baai/bge-m3",
     Canned(429, errors=[(3040, "No more data centers to forward the request to")]), "embed",
     ("Workers AI model @cf/baai/bge-m3: HTTP 429: 3040: No more data centers to forward the request to "
      "(after 11 attempts)"), 11),  # ten 429s waited out (max_rate_limited), the eleventh is final
    ("5xx exhausted", "POST", "/accounts/acc/d1/database/kb/query", Canned(503, raw=b"<html>busy</html>"), "d1",
     "D1 database kb: HTTP 503: 503: <html>busy</html> (after 8 attempts)", 8),  # max_attempts
]

_CALLS = {
    "d1": lambda c: c.d1_query("kb", "SELECT 1"),
    "query": lambda c: c.vectorize_query("helppuff-acme", [1.0, 0.0]),
    "upsert": lambda c: c.vectorize_upsert("helppuff-acme", [{"id": "a", "values": [1.0] * 384}]),
    "get_by_ids": lambda c: c.vectorize_get_by_ids("helppuff-acme", ["a"]),
    "embed": lambda c: c.embed("@cf/baai/bge-m3", ["hello"]),
}


@pytest.mark.parametrize(("case", "method", "path", "answer", "call", "message", "requests"), _ERRORS,
                         ids=[e[0] for e in _ERRORS])
@pytest_twisted.inlineCallbacks
def test_errors_name_the_resource(  # type: ignore[no-untyped-def]
    fake: FakeCloudflare, case: str, method: str, path: str, answer: Canned, call: str, message: str, requests: int
):
    yield run_async(_error(fake, method, path, answer, call, message, requests))


async def _error(fake: FakeCloudflare, method: str, path: str, answer: Canned, call: str, message: str,
                 requests: int) -> None:
    fake.on(method, path, answer)
    client = _client(fake, backoff=0.001)
    with pytest.raises(CloudflareError) as caught:
        await _CALLS[call](client)
    assert str(caught.value) == message
    assert caught.value.status == answer.status
    assert len(fake.requests) == requests  # 4xx other than 429: never retried
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_429_and_5xx_are_retried_with_backoff_and_retry_after(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_retries(fake))


async def _retries(fake: FakeCloudflare) -> None:
    fake.on("POST", "/accounts/acc/vectorize/v2/indexes/ix/query",
            Canned(429, errors=[(10000, "rate limited")], headers={"Retry-After": "7"}),
            Canned(502, raw=b"bad gateway"),
            Canned(429, errors=[(10000, "rate limited")], headers={"Retry-After": "3600"}),
            Canned(result={"count": 0, "matches": []}))
    sleeps = _Sleeps()
    client = _client(fake, sleeps, max_attempts=4, backoff=0.5, max_delay=30.0)
    assert await client.vectorize_query("ix", [1.0]) == []
    assert len(fake.requests) == 4
    assert {r.body for r in fake.requests} == {fake.requests[0].body}  # the same request each time
    first, second, third = sleeps.delays
    assert first == 7.0  # Retry-After honoured
    assert 0.25 <= second <= 0.5  # the first failure: backoff 0.5, with equal jitter: [0.25, 0.5]
    assert third == 300.0  # a 429's Retry-After is waited out up to the whole window (5 minutes)
    counts = client.counts.stats()
    assert counts["helppuff/cloudflare/calls/vectorize"] == 4 and counts["helppuff/cloudflare/retries"] == 3
    assert counts["helppuff/cloudflare/rate_limited"] == 2
    assert counts["helppuff/cloudflare/retry_wait_seconds"] == round(sum(sleeps.delays), 3)
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_a_5xx_retry_after_is_capped_at_max_delay(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_capped_5xx(fake))


async def _capped_5xx(fake: FakeCloudflare) -> None:
    fake.on("POST", "/accounts/acc/d1/database/kb/query",
            Canned(503, errors=[(7500, "busy")], headers={"Retry-After": "3600"}), Canned(result=[{"results": []}]))
    sleeps = _Sleeps()
    client = _client(fake, sleeps, max_delay=30.0)
    assert await client.d1_query("kb", "SELECT 1") == []
    assert sleeps.delays == [30.0]
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_retries_really_wait_on_the_event_loop(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_real_sleep(fake))


async def _real_sleep(fake: FakeCloudflare) -> None:
    fake.on("GET", "/accounts/acc/vectorize/v2/indexes/ix",
            Canned(500, errors=[(10001, "internal")]), Canned(result=_INDEX))
    client = CloudflareClient(HttpTransport(TOKEN, fake.url), ACC, backoff=0.01)
    assert await client.vectorize_get_index("ix") == _INDEX
    assert len(fake.requests) == 2
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_connection_failures_are_retried_then_reported():  # type: ignore[no-untyped-def]
    yield run_async(_refused())


async def _refused() -> None:
    with socket.socket() as probe:  # a loopback port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps = _Sleeps()
    client = CloudflareClient(HttpTransport(TOKEN, f"http://127.0.0.1:{port}/client/v4"), ACC, sleep=sleeps,
                              clock=sleeps.clock)
    with pytest.raises(CloudflareError) as caught:
        await client.d1_query("kb", "SELECT 1")
    assert str(caught.value).startswith("D1 database kb: no answer: None: ConnectError")
    assert str(caught.value).endswith("(after 8 attempts)")
    assert caught.value.status == 0 and len(sleeps.delays) == 7
    # Doubling from 0.5 s, capped at 30 s, each with equal jitter: [base / 2, base].
    for delay, base in zip(sleeps.delays, (0.5, 1, 2, 4, 8, 16, 30), strict=True):
        assert base / 2 <= delay <= base, (delay, base)
    assert client.counts.gave_up == 1 and client.counts.calls["d1"] == 8
    await client.aclose()


# --- a real account (optional) ----------------------------------------------------------

_REAL = bool(os.environ.get("CLOUDFLARE_API_TOKEN") and os.environ.get("CLOUDFLARE_ACCOUNT_ID"))


@pytest.mark.skipif(not _REAL, reason="skipped: set CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID")
@pytest.mark.enable_socket
@pytest_twisted.inlineCallbacks
def test_smoke_against_a_real_account():  # type: ignore[no-untyped-def]
    yield run_async(_smoke())


async def _smoke() -> None:
    client = CloudflareClient(
        HttpTransport(os.environ["CLOUDFLARE_API_TOKEN"]), os.environ["CLOUDFLARE_ACCOUNT_ID"]
    )
    name = f"helppuff-smoke-{uuid.uuid4().hex[:8]}"
    try:
        vectors = await client.embed("@cf/baai/bge-m3", ["hot water repairs", "blocked drains"])
        assert [len(v) for v in vectors] == [1024, 1024]
        await client.vectorize_create_index(name, 1024, "cosine")
        await client.vectorize_create_metadata_index(name, "category", "string")
        mutation = await client.vectorize_upsert(name, [
            {"id": "a", "values": vectors[0], "namespace": "smoke", "metadata": {"category": "service"}},
            {"id": "b", "values": vectors[1], "namespace": "smoke", "metadata": {"category": "pricing"}},
        ])
        for _ in range(60):  # mutations apply asynchronously on Cloudflare
            if (await client.vectorize_index_info(name)).get("processedUpToMutation") == mutation:
                break
            await asyncio.sleep(2)
        matches = await client.vectorize_query(name, vectors[0], top_k=2, namespace="smoke", return_metadata="all")
        assert matches[0]["id"] == "a"
        assert {v["id"] for v in await client.vectorize_get_by_ids(name, ["a", "b"])} == {"a", "b"}
        await client.vectorize_delete_by_ids(name, ["a", "b"])
        assert isinstance(await client.d1_list_databases(), list)
    finally:
        await client.vectorize_delete_index(name)
        await client.aclose()


def test_canned_errors_are_cloudflare_shaped() -> None:
    body = json.loads(Canned(429, errors=[(3040, "busy")]).body())
    assert body == {"success": False, "errors": [{"code": 3040, "message": "busy"}], "messages": [], "result": None}


@pytest_twisted.inlineCallbacks
def test_worker_secrets_are_listed_by_name(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_worker_secrets(fake))


async def _worker_secrets(fake: FakeCloudflare) -> None:
    # https://developers.cloudflare.com/api/resources/workers/subresources/scripts/subresources/secrets/methods/list/
    fake.on("GET", "/accounts/acc/workers/scripts/helppuff/secrets",
            Canned(result=[{"name": "OWNER_TOKEN", "type": "secret_text"}, {"name": "OPENAI_API_KEY", "type": "secret_text"}]))
    client = _client(fake)
    assert await client.worker_secrets("helppuff") == [{"name": "OWNER_TOKEN", "type": "secret_text"},
                                                       {"name": "OPENAI_API_KEY", "type": "secret_text"}]
    request = _only(fake)
    _by_sdk(request)
    assert (request.method, request.path) == ("GET", f"{BASE}/workers/scripts/helppuff/secrets")
    await client.aclose()
