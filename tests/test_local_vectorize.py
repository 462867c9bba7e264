"""The local cloud's Vectorize: Cloudflare's REST contract, exact search, filters, persistence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from helppuff_crawl.cloudflare.client import CloudflareClient, CloudflareError
from helppuff_crawl.local.cloud import LocalCloud, LocalTransport
from helppuff_crawl.local.vectorize import VectorizeError, compile_filter
from tests.conftest import run_async

V2 = "/client/v4/accounts/local/vectorize/v2/indexes"


def _post(cloud: LocalCloud, path: str, payload: Any, ctype: str = "application/json") -> Any:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return cloud.handle("POST", V2 + path, body, {"Content-Type": ctype})


def _ndjson(*vectors: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(v).encode() + b"\n" for v in vectors)


def test_rest_contract_of_indexes_and_upserts(tmp_path: Path) -> None:
    cloud = LocalCloud(tmp_path)
    created = _post(cloud, "", {"name": "kb", "config": {"dimensions": 3, "metric": "cosine"}, "description": "d"})
    assert created.status == 200 and created.body["success"] is True
    assert created.body["result"]["name"] == "kb"
    assert created.body["result"]["config"] == {"dimensions": 3, "metric": "cosine"}
    assert (tmp_path / "vectorize" / "kb.sqlite3").is_file()

    again = _post(cloud, "", {"name": "kb", "config": {"dimensions": 3, "metric": "cosine"}})
    assert again.status == 409 and "duplicate_name" in again.body["errors"][0]["message"]

    missing = cloud.handle("GET", V2 + "/nope")
    assert missing.status == 404
    assert missing.body["errors"] == [{"code": 3000, "message": 'vectorize.index.not_found - Index name "nope"'}]

    as_array = _post(cloud, "/kb/upsert", [{"id": "a", "values": [1, 0, 0]}], "application/x-ndjson")
    assert as_array.status == 400 and "JSON array" in as_array.body["errors"][0]["message"]
    as_json = _post(cloud, "/kb/upsert", _ndjson({"id": "a", "values": [1, 0, 0]}), "application/json")
    assert as_json.status == 400 and "application/x-ndjson" in as_json.body["errors"][0]["message"]

    # One bad vector rejects the whole upsert, with the dimensions expected and got.
    mixed = _post(cloud, "/kb/upsert", _ndjson({"id": "a", "values": [1, 0, 0]}, {"id": "b", "values": [1, 0]}),
                  "application/x-ndjson")
    assert mixed.status == 400
    assert mixed.body["errors"] == [
        {"code": 40012, "message": 'invalid vector for id="b", expected 3 dimensions, and got 2 dimensions'}
    ]
    info = cloud.handle("GET", V2 + "/kb/info").body["result"]
    assert info["vectorCount"] == 0 and info["dimensions"] == 3

    ok = _post(cloud, "/kb/upsert", _ndjson({"id": "a", "values": [1, 0, 0]}, {"id": "b", "values": [0, 1, 0]}),
               "application/x-ndjson")
    assert ok.status == 200 and len(ok.body["result"]["mutationId"]) == 36
    info = cloud.handle("GET", V2 + "/kb/info").body["result"]
    assert info["vectorCount"] == 2 and info["processedUpToMutation"] == ok.body["result"]["mutationId"]

    query = _post(cloud, "/kb/query", {"vector": [1, 0], "topK": 1})
    assert query.status == 400
    assert query.body["errors"][0]["message"] == "invalid query vector, expected 3 dimensions, and got 2 dimensions"
    too_many = _post(cloud, "/kb/query", {"vector": [1, 0, 0], "topK": 51, "returnValues": True})
    assert too_many.status == 400
    cloud.close()


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        # query [1, 1, 0] against a=[2, 0, 0], b=[0, 3, 3], c=[1, 1, 0]
        ("cosine", [("c", 1.0), ("a", 0.707107), ("b", 0.5)]),
        ("dot-product", [("b", 3.0), ("a", 2.0), ("c", 2.0)]),
        ("euclidean", [("c", 0.0), ("a", 1.414214), ("b", 3.741657)]),
    ],
)
def test_scores_follow_the_metric(tmp_path: Path, metric: str, expected: list[tuple[str, float]]) -> None:
    cloud = LocalCloud(tmp_path)
    _post(cloud, "", {"name": "m", "config": {"dimensions": 3, "metric": metric}})
    _post(cloud, "/m/upsert", _ndjson({"id": "a", "values": [2, 0, 0]}, {"id": "b", "values": [0, 3, 3]},
                                      {"id": "c", "values": [1, 1, 0]}), "application/x-ndjson")
    matches = _post(cloud, "/m/query", {"vector": [1, 1, 0], "topK": 3}).body["result"]["matches"]
    assert [(m["id"], round(m["score"], 6)) for m in matches] == expected
    cloud.close()


_ROWS = {
    "a": {"category": "pricing", "price": 120, "faq": True, "page": {"lang": "en"}},
    "b": {"category": "contact", "price": 80.5, "faq": False},
    "c": {"category": "pricing", "price": "call us"},
    "d": {"price": 200, "url": "https://acme.com.au/x"},
    "e": None,
}
_INDEXED = {"category": "string", "price": "number", "faq": "boolean", "page.lang": "string"}


@pytest.mark.parametrize(
    ("filter", "expected"),
    [
        ({"category": "pricing"}, "ac"),  # implicit $eq
        ({"category": {"$eq": "contact"}}, "b"),
        ({"category": {"$ne": "pricing"}}, "bde"),  # absent counts as not equal
        ({"category": {"$in": ["contact", "pricing"]}}, "abc"),
        ({"category": {"$nin": ["contact"]}}, "acde"),
        ({"price": {"$lt": 100}}, "b"),
        ({"price": {"$lte": 120}}, "ab"),
        ({"price": {"$gt": 100}}, "ad"),  # "call us" is not a number: not in the number index
        ({"price": {"$gte": 80.5, "$lt": 200}}, "ab"),
        ({"faq": True}, "a"),
        ({"faq": {"$ne": True}}, "bcde"),
        ({"category": "pricing", "price": {"$gt": 100}}, "a"),  # properties are ANDed
        ({"page.lang": "en"}, "a"),  # nested property path
        ({"url": "https://acme.com.au/x"}, ""),  # no metadata index on url: matches nothing
    ],
)
def test_metadata_filters(filter: dict[str, Any], expected: str) -> None:
    predicate = compile_filter(filter, _INDEXED)
    assert "".join(vid for vid, meta in _ROWS.items() if predicate(meta)) == expected


@pytest.mark.parametrize(
    "filter",
    [{"category": {"$regex": "p.*"}}, {"category": {"$in": "pricing"}}, {"$and": []}, {"price": {"$lt": [1]}}],
)
def test_malformed_filters_are_refused(filter: dict[str, Any]) -> None:
    with pytest.raises(VectorizeError) as caught:
        compile_filter(filter, _INDEXED)
    assert caught.value.status == 400


async def vector_round_trip(client: CloudflareClient) -> None:
    """The crawler's Vectorize calls, through the real client, against whatever serves the client."""
    assert await client.vectorize_get_index("helppuff-acme") is None
    created = await client.vectorize_create_index("helppuff-acme", 4, "cosine", description="acme")
    assert created["config"] == {"dimensions": 4, "metric": "cosine"}
    assert (await client.vectorize_get_index("helppuff-acme"))["name"] == "helppuff-acme"
    assert await client.vectorize_create_metadata_index("helppuff-acme", "category", "string")
    assert await client.vectorize_list_metadata_indexes("helppuff-acme") == [
        {"propertyName": "category", "indexType": "string"}
    ]
    await client.vectorize_upsert("helppuff-acme", [
        {"id": "p1", "values": [1, 0, 0, 0], "namespace": "acme",
         "metadata": {"category": "pricing", "url": "https://acme.com.au/prices"}},
        {"id": "p2", "values": [0.9, 0.1, 0, 0], "namespace": "acme",
         "metadata": {"category": "service", "url": "https://acme.com.au/hot-water"}},
        {"id": "p3", "values": [0.8, 0.2, 0, 0], "namespace": "acme",
         "metadata": {"category": "pricing", "url": "https://acme.com.au/quotes"}},
        {"id": "o1", "values": [1, 0, 0, 0], "namespace": "other", "metadata": {"category": "pricing"}},
    ])
    matches = await client.vectorize_query("helppuff-acme", [1, 0, 0, 0], top_k=5, namespace="acme",
                                           return_metadata="indexed", filter={"category": "pricing"})
    assert [m["id"] for m in matches] == ["p1", "p3"]
    assert matches[0]["score"] == pytest.approx(1.0)
    assert matches[0]["metadata"] == {"category": "pricing"}  # indexed properties only
    assert matches[0]["namespace"] == "acme"
    everything = await client.vectorize_query("helppuff-acme", [1, 0, 0, 0], top_k=2, namespace="acme",
                                              return_metadata="all", return_values=True)
    assert [m["id"] for m in everything] == ["p1", "p2"]
    assert everything[1]["metadata"]["url"] == "https://acme.com.au/hot-water"
    assert everything[1]["values"] == pytest.approx([0.9, 0.1, 0, 0])
    bare = await client.vectorize_query("helppuff-acme", [1, 0, 0, 0], top_k=10)
    assert sorted(m["id"] for m in bare) == ["o1", "p1", "p2", "p3"] and "metadata" not in bare[0]

    got = await client.vectorize_get_by_ids("helppuff-acme", ["p2", "missing", "o1"])
    assert [(v["id"], v["namespace"]) for v in got] == [("p2", "acme"), ("o1", "other")]
    assert got[0]["metadata"]["category"] == "service"

    await client.vectorize_delete_by_ids("helppuff-acme", ["p1", "missing"])
    left = await client.vectorize_query("helppuff-acme", [1, 0, 0, 0], top_k=5, namespace="acme")
    assert [m["id"] for m in left] == ["p2", "p3"]
    assert (await client.vectorize_index_info("helppuff-acme"))["vectorCount"] == 3

    with pytest.raises(CloudflareError) as caught:
        await client.vectorize_upsert("helppuff-acme", [{"id": "x", "values": [1.0, 0.0]}])
    assert str(caught.value) == ('Vectorize index helppuff-acme: HTTP 400: 40012: invalid vector for id="x", '
                                 "expected 4 dimensions, and got 2 dimensions")
    with pytest.raises(CloudflareError) as missing:
        await client.vectorize_query("helppuff-nope", [1, 0, 0, 0])
    assert "Vectorize index helppuff-nope: HTTP 404: 3000: vectorize.index.not_found" in str(missing.value)


@pytest_twisted.inlineCallbacks
def test_round_trip_through_the_client_and_persistence(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_round_trip(tmp_path))


async def _round_trip(tmp_path: Path) -> None:
    client = CloudflareClient(LocalTransport(LocalCloud(tmp_path)), "local")
    await vector_round_trip(client)
    await client.aclose()

    reopened = CloudflareClient(LocalTransport(LocalCloud(tmp_path)), "local")
    matches = await reopened.vectorize_query("helppuff-acme", [1, 0, 0, 0], top_k=5, namespace="acme",
                                             return_metadata="all", filter={"category": {"$eq": "pricing"}})
    assert [(m["id"], m["metadata"]["url"]) for m in matches] == [("p3", "https://acme.com.au/quotes")]
    assert await reopened.vectorize_list_metadata_indexes("helppuff-acme") == [
        {"propertyName": "category", "indexType": "string"}
    ]
    assert [i["name"] for i in await reopened.vectorize_list_indexes()] == ["helppuff-acme"]
    await reopened.vectorize_delete_index("helppuff-acme")
    assert await reopened.vectorize_get_index("helppuff-acme") is None
    assert not (tmp_path / "vectorize" / "helppuff-acme.sqlite3").exists()
    await reopened.aclose()


@pytest_twisted.inlineCallbacks
def test_d1_databases_are_created_and_listed(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_d1_databases(tmp_path))


async def _d1_databases(tmp_path: Path) -> None:
    client = CloudflareClient(LocalTransport(LocalCloud(tmp_path)), "local")
    created = await client.d1_create_database("helppuff")
    assert created["name"] == "helppuff" and created["uuid"] != "helppuff"  # D1 ids are UUIDs
    await client.d1_create_database("other")
    assert [d["name"] for d in await client.d1_list_databases()] == ["helppuff", "other"]
    assert [d["name"] for d in await client.d1_list_databases("helppuff")] == ["helppuff"]
    assert await client.d1_query(created["uuid"], "SELECT COUNT(*) AS n FROM chunks") == [{"n": 0}]
    with pytest.raises(CloudflareError, match="already exists"):
        await client.d1_create_database("helppuff")
    await client.aclose()
