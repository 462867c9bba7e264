"""Where CloudflareClient uses Cloudflare's SDK, where it does not, and why.

D1 and Vectorize's indexes, metadata indexes and vectors by id go through the SDK (`client.sdk`, an
AsyncCloudflare whose requests the client's `_send` paces, retries and counts). Three calls are the
client's own, each because the SDK sends the wrong request; the tests below show each one against
the local cloud, which answers as Cloudflare does, and against a fake of the API on loopback:

- Workers AI `run`: the SDK escapes the `/` of the model name, a path Cloudflare does not route;
- Vectorize query: the SDK's typed `query()` has no `namespace`, so it searches every site;
- Vectorize upsert: the SDK labels the NDJSON `application/json`, which Vectorize refuses.

When a test here fails because the SDK was fixed, the hand-written call it guards can go.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from cloudflare import APIStatusError
from cloudflare.resources.vectorize.indexes.indexes import AsyncIndexesResource

from helppuff_crawl.cloudflare.client import CloudflareClient, CloudflareError, HttpTransport, Response
from helppuff_crawl.local.ai import LocalAI
from helppuff_crawl.local.cloud import LOCAL_ACCOUNT_ID, LocalCloud, LocalTransport
from tests.conftest import run_async
from tests.fake_cloudflare import Canned, FakeCloudflare
from tests.fakes import HashModel, hash_vector


class _Recording:
    """A transport that keeps what was sent through it (method, path, headers, body)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent: list[tuple[str, str, dict[str, str], bytes]] = []

    async def request(self, method: str, path: str, *, content: bytes = b"", headers: dict[str, str] | None = None
                      ) -> Response:
        self.sent.append((method, path, dict(headers or {}), content))
        return await self.inner.request(method, path, content=content, headers=headers)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _local(tmp_path: Path) -> tuple[CloudflareClient, _Recording]:
    cloud = LocalCloud(tmp_path, ai=LocalAI({"@fake/hash-8": HashModel(8)}), vectorize_delay=0)
    seen = _Recording(LocalTransport(cloud))
    return CloudflareClient(seen, LOCAL_ACCOUNT_ID, rate_limit=None), seen


@pytest.fixture
def fake() -> Iterator[FakeCloudflare]:
    with FakeCloudflare() as server:
        yield server


# --- Workers AI: by hand ------------------------------------------------------------------


@pytest_twisted.inlineCallbacks
def test_the_sdk_escapes_the_slashes_of_a_model_name(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_escaped_on_the_wire(fake))


async def _escaped_on_the_wire(fake: FakeCloudflare) -> None:
    fake.on("POST", "/accounts/acc/ai/run/@cf/baai/bge-m3", Canned(result={"shape": [1, 2], "data": [[0.6, 0.8]]}))
    client = CloudflareClient(HttpTransport("tok", fake.url), "acc", rate_limit=None)
    with pytest.raises(APIStatusError):
        await client.sdk.ai.run("@cf/baai/bge-m3", account_id="acc", text=["hot water"])
    assert await client.embed("@cf/baai/bge-m3", ["hot water"]) == [[0.6, 0.8]]
    sdk, ours = (r.path for r in fake.requests)
    assert sdk == "/client/v4/accounts/acc/ai/run/@cf%2Fbaai%2Fbge-m3"
    assert ours == "/client/v4/accounts/acc/ai/run/@cf/baai/bge-m3"
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_cloudflare_does_not_route_the_sdks_model_path(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_escaped_locally(tmp_path))


async def _escaped_locally(tmp_path: Path) -> None:
    # Cloudflare answers the escaped path 400, 7000 "No route for that URI" (cloudflare-python#2718),
    # for a model it has; the local cloud does the same for one it has.
    client, seen = _local(tmp_path)
    with pytest.raises(APIStatusError) as caught:
        await client.sdk.ai.run("@fake/hash-8", account_id=LOCAL_ACCOUNT_ID, text=["hot water"])
    assert caught.value.status_code == 400
    assert caught.value.body["errors"] == [{"code": 7000, "message": "No route for that URI"}]  # type: ignore[index]
    assert seen.sent[0][1] == "/accounts/local/ai/run/@fake%2Fhash-8"
    assert await client.embed("@fake/hash-8", ["hot water"]) == [pytest.approx(hash_vector("hot water", 8))]
    assert client.counts.calls["ai"] == 2  # the SDK's request was paced and counted like the client's own
    await client.aclose()


# --- Vectorize query: by hand -------------------------------------------------------------


def test_the_sdks_typed_query_has_no_namespace() -> None:
    parameters = inspect.signature(AsyncIndexesResource.query).parameters
    assert {"vector", "top_k", "filter", "return_metadata", "return_values"} <= set(parameters)
    assert "namespace" not in parameters


@pytest_twisted.inlineCallbacks
def test_without_a_namespace_a_query_finds_every_sites_passages(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_namespaces(tmp_path))


async def _namespaces(tmp_path: Path) -> None:
    client, seen = _local(tmp_path)
    await client.vectorize_create_index("helppuff-kb", 3, "cosine")
    await client.vectorize_upsert("helppuff-kb", [
        {"id": "acme-1", "values": [1.0, 0.0, 0.0], "namespace": "acme"},
        {"id": "bolt-1", "values": [0.9, 0.1, 0.0], "namespace": "bolt"},
    ])
    typed = await client.sdk.vectorize.indexes.query("helppuff-kb", account_id=LOCAL_ACCOUNT_ID,
                                                      vector=[1.0, 0.0, 0.0], top_k=5)
    assert typed is not None and sorted(m.id or "" for m in typed.matches or []) == ["acme-1", "bolt-1"]
    ours = await client.vectorize_query("helppuff-kb", [1.0, 0.0, 0.0], top_k=5, namespace="acme")
    assert [m["id"] for m in ours] == ["acme-1"]
    assert b'"namespace":"acme"' in seen.sent[-1][3]
    await client.aclose()


# --- Vectorize upsert: by hand ------------------------------------------------------------


@pytest_twisted.inlineCallbacks
def test_the_sdks_upsert_is_labelled_json_and_refused(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_upsert(tmp_path))


async def _upsert(tmp_path: Path) -> None:
    client, seen = _local(tmp_path)
    await client.vectorize_create_index("helppuff-kb", 3, "cosine")
    ndjson = b'{"id":"a","values":[1.0,0.0,0.0],"namespace":"acme"}\n'
    with pytest.warns(DeprecationWarning, match="raw bytes as `body` is deprecated"), \
            pytest.raises(APIStatusError) as caught:
        await client.sdk.vectorize.indexes.upsert("helppuff-kb", account_id=LOCAL_ACCOUNT_ID, body=ndjson)
    assert caught.value.status_code == 400
    assert "unknown_content_type" in caught.value.body["errors"][0]["message"]  # type: ignore[index]
    method, path, headers, body = seen.sent[-1]
    assert (method, path, body) == ("POST", "/accounts/local/vectorize/v2/indexes/helppuff-kb/upsert", ndjson)
    assert headers["content-type"] == "application/json"
    mutation = await client.vectorize_upsert("helppuff-kb", [{"id": "a", "values": [1, 0, 0], "namespace": "acme"}])
    assert mutation and seen.sent[-1][2]["content-type"] == "application/x-ndjson" and seen.sent[-1][3] == ndjson
    assert [v["id"] for v in await client.vectorize_get_by_ids("helppuff-kb", ["a"])] == ["a"]
    await client.aclose()


# --- through the SDK: paced, retried and counted once -------------------------------------


class _NoWait:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest_twisted.inlineCallbacks
def test_the_sdks_requests_are_retried_by_the_client_alone(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_retried(fake))


async def _retried(fake: FakeCloudflare) -> None:
    fake.on("GET", "/accounts/acc/vectorize/v2/indexes",
            Canned(503, errors=[(10001, "busy")]), Canned(429, errors=[(971, "slow down")], headers={"Retry-After": "4"}),
            Canned(result=[]))
    waits = _NoWait()
    client = CloudflareClient(HttpTransport("tok", fake.url), "acc", sleep=waits, backoff=0.5, rate_limit=None)
    assert await client.vectorize_list_indexes() == []
    assert len(fake.requests) == 3 and waits.delays[1] == 4.0
    assert (client.counts.calls["vectorize"], client.counts.retries, client.counts.rate_limited) == (3, 2, 1)
    await client.aclose()

    fake.on("GET", "/accounts/acc/vectorize/v2/indexes", Canned(503, errors=[(10001, "busy")]))
    once = CloudflareClient(HttpTransport("tok", fake.url), "acc", sleep=_NoWait(), max_attempts=1, rate_limit=None)
    with pytest.raises(CloudflareError) as caught:
        await once.vectorize_list_indexes()
    assert str(caught.value) == "Vectorize indexes: HTTP 503: 10001: busy"
    assert len(fake.requests) == 4  # one more: the SDK never retries on its own (max_retries=0)
    await once.aclose()


@pytest_twisted.inlineCallbacks
def test_a_2xx_whose_envelope_failed_is_an_error(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_refused(fake))


async def _refused(fake: FakeCloudflare) -> None:
    fake.on("POST", "/accounts/acc/d1/database/db-1/query", Canned(200, errors=[(7500, "SQLITE_ERROR")]))
    client = CloudflareClient(HttpTransport("tok", fake.url), "acc", rate_limit=None)
    with pytest.raises(CloudflareError) as caught:
        await client.d1_query("db-1", "SELECT 1")
    assert (str(caught.value), caught.value.status) == ("D1 database db-1: HTTP 200: 7500: SQLITE_ERROR", 200)
    await client.aclose()


# --- the local cloud answers the SDK's requests as Cloudflare does ------------------------


@pytest_twisted.inlineCallbacks
def test_the_sdks_errors_carry_cloudflares_codes(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_errors(tmp_path))


async def _errors(tmp_path: Path) -> None:
    client, _ = _local(tmp_path)
    created = await client.d1_create_database("helppuff")
    with pytest.raises(CloudflareError) as taken:
        await client.d1_create_database("helppuff")
    assert (taken.value.status, taken.value.codes) == (400, [7502])
    with pytest.raises(CloudflareError) as by_name:
        await client.d1_query("helppuff", "SELECT 1")
    assert str(by_name.value) == "D1 database helppuff: HTTP 400: 7400: Invalid property: databaseId => Invalid uuid"
    unknown = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(CloudflareError) as missing:
        await client.d1_batch(unknown, [("SELECT 1", [])])
    assert (missing.value.status, missing.value.codes) == (404, [7404])
    with pytest.raises(CloudflareError) as bad_sql:
        await client.d1_query(created["uuid"], "SELEKT 1")
    assert (bad_sql.value.status, bad_sql.value.codes) == (400, [7500])
    assert await client.vectorize_get_index("helppuff-none") is None
    with pytest.raises(CloudflareError) as no_index:
        await client.vectorize_index_info("helppuff-none")
    assert (no_index.value.status, no_index.value.codes) == (404, [3000])
    assert "vectorize.index.not_found" in str(no_index.value)
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_the_local_d1_list_is_paged_as_cloudflares(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_paged(tmp_path))


async def _paged(tmp_path: Path) -> None:
    client, seen = _local(tmp_path)
    names = [f"helppuff-{n:02d}" for n in range(12)]
    for name in names:
        await client.d1_create_database(name)
    found: list[str] = []
    async for database in client.sdk.d1.database.list(account_id=LOCAL_ACCOUNT_ID, per_page=10):
        found.append(database.name or "")
        assert len(found) <= len(names), "the same page again: `page` is not honoured"
    assert found == names
    pages = [path for method, path, _, _ in seen.sent if method == "GET"]
    assert pages == ["/accounts/local/d1/database?per_page=10", "/accounts/local/d1/database?per_page=10&page=2",
                     "/accounts/local/d1/database?per_page=10&page=3"]  # the SDK stops at an empty page
    first = await client.sdk.d1.database.list(account_id=LOCAL_ACCOUNT_ID, per_page=10)
    assert first.result_info is not None
    assert first.result_info.to_dict() == {"page": 1, "per_page": 10, "count": 10, "total_count": 12}
    assert [d["name"] for d in await client.d1_list_databases("helppuff-1")] == ["helppuff-10", "helppuff-11"]
    for per_page in (5, 10_001):
        with pytest.raises(APIStatusError) as refused:
            await client.sdk.d1.database.list(account_id=LOCAL_ACCOUNT_ID, per_page=per_page)
        assert refused.value.status_code == 400 and "per_page" in str(refused.value.body)
    await client.aclose()
