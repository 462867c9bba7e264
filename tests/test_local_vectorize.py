"""The local cloud's Vectorize: Cloudflare's REST contract, exact search, filters, persistence, and
writes applied asynchronously (after a delay, in order, reported by info) as Cloudflare applies them.

Every test here runs with the project's default delay, or a longer one; those about when a write
becomes visible drive the index's clock instead of waiting.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_twisted

from helppuff_crawl.cloudflare.client import CloudflareClient, CloudflareError
from helppuff_crawl.local.cloud import LocalCloud, LocalTransport
from helppuff_crawl.local.vectorize import (
    LocalVectorIndex,
    VectorizeError,
    compile_filter,
)
from tests.conftest import run_async

V2 = "/client/v4/accounts/local/vectorize/v2/indexes"
_PATIENCE = 60.0  # seconds a test waits at most for a write to be applied (the default delay is 1 s)


def _applied(cloud: LocalCloud, name: str, mutation: str) -> dict[str, Any]:
    """Poll GET .../info, as a client waits for a write, until `mutation` is processed; the info."""
    give_up = time.monotonic() + _PATIENCE
    while True:
        info = cloud.handle("GET", f"{V2}/{name}/info").body["result"]
        if info["processedUpToMutation"] == mutation or time.monotonic() > give_up:
            assert info["processedUpToMutation"] == mutation, info
            return info
        time.sleep(0.05)


async def applied(client: CloudflareClient, name: str, mutation: str | None) -> dict[str, Any]:
    """The same through the client (on Cloudflare too: its writes are asynchronous)."""
    assert mutation
    give_up = time.monotonic() + _PATIENCE
    while True:
        info = await client.vectorize_index_info(name)
        if info["processedUpToMutation"] == mutation or time.monotonic() > give_up:
            assert info["processedUpToMutation"] == mutation, info
            return info
        await asyncio.sleep(0.05)


class Clock:
    """Unix time that a test moves on by hand."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _stamp(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _post(cloud: LocalCloud, path: str, payload: Any, ctype: str = "application/json") -> Any:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return cloud.handle("POST", V2 + path, body, {"Content-Type": ctype})


def _ndjson(*vectors: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(v).encode() + b"\n" for v in vectors)


def test_an_index_is_made_whole_or_not_at_all(tmp_path: Path) -> None:
    folder = tmp_path / "vectorize"
    folder.mkdir()
    # What a process killed while it made an index leaves: a file of its own, with no configuration.
    left = folder / ".kb.sqlite3.0123456789abcdef.creating"
    conn = sqlite3.connect(left)
    conn.execute("CREATE TABLE config (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.close()
    cloud = LocalCloud(tmp_path)
    assert cloud.handle("GET", V2).body["result"] == []  # no index: the next crawl makes it
    created = _post(cloud, "", {"name": "kb", "config": {"dimensions": 3, "metric": "cosine"}})
    assert created.status == 200 and cloud.vector_index("kb").dimensions == 3
    assert [p.name for p in folder.glob(".*.creating")] == [left.name]  # its own is gone once in place
    assert [index["name"] for index in cloud.handle("GET", V2).body["result"]] == ["kb"]


def test_an_index_that_cannot_be_made_leaves_no_file(tmp_path: Path) -> None:
    def broken_clock() -> float:
        raise OSError("the clock cannot be read")

    with pytest.raises(OSError, match="clock"):
        LocalVectorIndex.create(tmp_path / "kb.sqlite3", "kb", 3, "cosine", delay=0, clock=broken_clock)
    assert list(tmp_path.iterdir()) == []  # neither the index nor its file under a name of its own


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
    assert info == {"dimensions": 3, "vectorCount": 0, "processedUpToMutation": None, "processedUpToDatetime": None}

    ok = _post(cloud, "/kb/upsert", _ndjson({"id": "a", "values": [1, 0, 0]}, {"id": "b", "values": [0, 1, 0]}),
               "application/x-ndjson")
    assert ok.status == 200 and len(ok.body["result"]["mutationId"]) == 36
    info = _applied(cloud, "kb", ok.body["result"]["mutationId"])
    assert info["vectorCount"] == 2 and info["processedUpToDatetime"].endswith("Z")

    query = _post(cloud, "/kb/query", {"vector": [1, 0], "topK": 1})
    assert query.status == 400
    assert query.body["errors"][0]["message"] == "invalid query vector, expected 3 dimensions, and got 2 dimensions"
    cloud.close()


@pytest.mark.parametrize(("options", "cap"), [
    # developers.cloudflare.com/vectorize/platform/limits/: topK at most 50 with values or all
    # metadata, 100 without (indexed metadata is not "all": 100)
    ({"returnValues": True}, 50),
    ({"returnMetadata": "all"}, 50),
    ({"returnMetadata": True}, 50),  # the older boolean form means all
    ({"returnMetadata": "indexed"}, 100),
    ({"returnMetadata": "none", "returnValues": False}, 100),
    ({}, 100),
])
def test_top_k_caps_as_documented(tmp_path: Path, options: dict[str, Any], cap: int) -> None:
    cloud = LocalCloud(tmp_path)
    _post(cloud, "", {"name": "kb", "config": {"dimensions": 3, "metric": "cosine"}})
    at_cap = _post(cloud, "/kb/query", {"vector": [1, 0, 0], "topK": cap, **options})
    assert at_cap.status == 200, at_cap.body
    over = _post(cloud, "/kb/query", {"vector": [1, 0, 0], "topK": cap + 1, **options})
    assert over.status == 400 and over.body["errors"][0]["code"] == 40008
    assert f"1-{cap}" in over.body["errors"][0]["message"]
    cloud.close()


def test_a_write_is_accepted_at_once_and_visible_only_later(tmp_path: Path) -> None:
    cloud = LocalCloud(tmp_path, vectorize_delay=3600)  # an hour: nothing can be applied during the test
    _post(cloud, "", {"name": "kb", "config": {"dimensions": 3, "metric": "cosine"}})
    ok = _post(cloud, "/kb/upsert", _ndjson({"id": "a", "values": [1, 0, 0]}), "application/x-ndjson")
    assert ok.status == 200 and len(ok.body["result"]["mutationId"]) == 36
    assert _post(cloud, "/kb/get_by_ids", {"ids": ["a"]}).body["result"] == []
    assert _post(cloud, "/kb/query", {"vector": [1, 0, 0], "topK": 5}).body["result"] == {"count": 0, "matches": []}
    info = cloud.handle("GET", V2 + "/kb/info").body["result"]
    assert (info["vectorCount"], info["processedUpToMutation"]) == (0, None)
    assert cloud.vector_index("kb").pending() == 1
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
    written = _post(cloud, "/m/upsert", _ndjson({"id": "a", "values": [2, 0, 0]}, {"id": "b", "values": [0, 3, 3]},
                                                {"id": "c", "values": [1, 1, 0]}), "application/x-ndjson")
    _applied(cloud, "m", written.body["result"]["mutationId"])
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


def test_a_filter_matches_only_vectors_written_after_its_metadata_index() -> None:
    # category's index was created by mutation 5, price's by mutation 2.
    created = {"category": 5, "price": 2, "faq": 2, "page.lang": 2}
    pricing = compile_filter({"category": "pricing"}, _INDEXED, created)
    other = compile_filter({"category": {"$ne": "pricing"}}, _INDEXED, created)
    cheap = compile_filter({"price": {"$lt": 100}}, _INDEXED, created)
    assert [pricing(_ROWS["a"], seq) for seq in (4, 5, 6)] == [False, False, True]
    assert [other(_ROWS["b"], seq) for seq in (5, 6)] == [False, True]  # $ne too: not in the index
    assert [cheap(_ROWS["b"], seq) for seq in (2, 3)] == [False, True]


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
    upserted = await client.vectorize_upsert("helppuff-acme", [
        {"id": "p1", "values": [1, 0, 0, 0], "namespace": "acme",
         "metadata": {"category": "pricing", "url": "https://acme.com.au/prices"}},
        {"id": "p2", "values": [0.9, 0.1, 0, 0], "namespace": "acme",
         "metadata": {"category": "service", "url": "https://acme.com.au/hot-water"}},
        {"id": "p3", "values": [0.8, 0.2, 0, 0], "namespace": "acme",
         "metadata": {"category": "pricing", "url": "https://acme.com.au/quotes"}},
        {"id": "o1", "values": [1, 0, 0, 0], "namespace": "other", "metadata": {"category": "pricing"}},
    ])
    await applied(client, "helppuff-acme", upserted)  # writes are asynchronous: wait as a client must
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

    await applied(client, "helppuff-acme", await client.vectorize_delete_by_ids("helppuff-acme", ["p1", "missing"]))
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


# --- asynchronous writes, on the index's own clock --------------------------------------------


def _vec(vid: str, values: list[float], **extra: Any) -> dict[str, Any]:
    return {"id": vid, "values": values, **extra}


def test_writes_apply_after_their_delay_in_order_whoever_made_them(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "ix.sqlite3"
    slow = LocalVectorIndex.create(path, "ix", 3, "cosine", delay=5, clock=clock)
    quick = LocalVectorIndex(path, delay=0, clock=clock)  # another process on the same file, no delay
    first = slow.upsert([_vec("a", [1, 0, 0]), _vec("x", [0, 0, 1])])
    second = quick.upsert([_vec("b", [0, 1, 0])])
    third = quick.delete_by_ids(["x"])
    # The quick writes wait behind the slow one: mutations apply in the order they were accepted.
    assert quick.get_by_ids(["a", "b", "x"]) == [] and slow.get_by_ids(["a", "b", "x"]) == []
    assert quick.info() == {"dimensions": 3, "vectorCount": 0, "processedUpToMutation": None,
                            "processedUpToDatetime": None}
    clock.now += 4.9
    assert quick.query([1, 0, 0], top_k=5)["matches"] == [] and quick.pending() == 3
    clock.now += 0.2
    assert [v["id"] for v in quick.get_by_ids(["a", "b", "x"])] == ["a", "b"]  # x upserted, then deleted
    done = {"dimensions": 3, "vectorCount": 2, "processedUpToMutation": third,
            "processedUpToDatetime": _stamp(1_800_000_005.0)}  # the later ones applied with the first
    assert slow.info() == quick.info() == done
    assert len({first, second, third}) == 3 and quick.pending() == slow.pending() == 0
    slow.close()
    quick.close()


def test_a_write_while_another_process_holds_the_index_is_a_500_and_changes_nothing(tmp_path: Path,
                                                                                    monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("helppuff_crawl.local.vectorize.BUSY_TIMEOUT_MS", 200)
    clock = Clock()
    path = tmp_path / "ix.sqlite3"
    index = LocalVectorIndex.create(path, "ix", 3, "cosine", delay=1, clock=clock)
    first = index.upsert([_vec("a", [1, 0, 0])])
    other = sqlite3.connect(path, isolation_level=None)  # another process's write in progress
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(VectorizeError) as refused:
        index.upsert([_vec("b", [0, 1, 0])])
    assert refused.value.status == 500 and "the index is busy" in refused.value.message
    clock.now += 1
    assert index.apply_due() == 0 and index.pending() == 1  # due, and applied once the lock is free
    other.execute("ROLLBACK")
    other.close()
    assert [v["id"] for v in index.get_by_ids(["a", "b"])] == ["a"] and index.info()["processedUpToMutation"] == first
    index.close()


def test_the_last_write_of_an_id_wins_and_info_follows_each_mutation(tmp_path: Path) -> None:
    clock = Clock()
    index = LocalVectorIndex.create(tmp_path / "ix.sqlite3", "ix", 3, "cosine", delay=2, clock=clock)
    first = index.upsert([_vec("a", [1, 0, 0])])
    clock.now += 1
    index.delete_by_ids(["a"])
    clock.now += 0.5
    last = index.upsert([_vec("a", [0, 1, 0])])
    clock.now += 0.6  # only the first is due
    assert index.info()["processedUpToMutation"] == first
    assert index.info()["processedUpToDatetime"] == _stamp(1_800_000_002.0)
    assert index.get_by_ids(["a"])[0]["values"] == [1.0, 0.0, 0.0]
    clock.now += 10
    assert index.info()["processedUpToMutation"] == last
    assert index.get_by_ids(["a"])[0]["values"] == [0.0, 1.0, 0.0]
    index.close()


def test_an_accepted_write_survives_the_process_that_made_it(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "ix.sqlite3"
    crawl = LocalVectorIndex.create(path, "ix", 3, "cosine", delay=3, clock=clock)
    mutation = crawl.upsert([_vec("a", [1, 0, 0], namespace="acme")])
    crawl.close()  # the crawl ends before its write is applied
    clock.now += 3
    later = LocalVectorIndex(path, delay=3, clock=clock)
    assert [(v["id"], v["namespace"]) for v in later.get_by_ids(["a"])] == [("a", "acme")]
    assert later.info()["processedUpToMutation"] == mutation
    later.close()


def test_insert_keeps_what_the_index_holds_when_it_is_applied(tmp_path: Path) -> None:
    clock = Clock()
    index = LocalVectorIndex.create(tmp_path / "ix.sqlite3", "ix", 3, "cosine", delay=1, clock=clock)
    index.upsert([_vec("a", [1, 0, 0])])
    index.insert([_vec("a", [0, 1, 0]), _vec("b", [0, 0, 1])])  # a is not applied yet when this is accepted
    clock.now += 1
    assert [(v["id"], v["values"]) for v in index.get_by_ids(["a", "b"])] == [
        ("a", [1.0, 0.0, 0.0]), ("b", [0.0, 0.0, 1.0])]
    index.close()


def test_a_metadata_index_covers_only_vectors_written_after_it(tmp_path: Path) -> None:
    clock = Clock()
    index = LocalVectorIndex.create(tmp_path / "ix.sqlite3", "ix", 3, "cosine", delay=2, clock=clock)
    index.upsert([_vec("early", [1, 0, 0], metadata={"category": "pricing"})])
    clock.now += 2  # applied before the metadata index exists
    index.upsert([_vec("queued", [0.9, 0.1, 0], metadata={"category": "pricing"})])  # accepted before it
    index.create_metadata_index("category", "string")
    assert index.metadata_indexes() == {"category": "string"}  # listed at once
    with pytest.raises(VectorizeError, match="already exists"):
        index.create_metadata_index("category", "string")
    index.upsert([_vec("late", [0.8, 0.2, 0], metadata={"category": "pricing"}),
                  _vec("other", [0.7, 0.3, 0], metadata={"category": "contact"})])
    clock.now += 2

    def ids(**options: Any) -> list[str]:
        return [m["id"] for m in index.query([1, 0, 0], top_k=10, **options)["matches"]]

    assert ids() == ["early", "queued", "late", "other"]
    assert ids(filter={"category": "pricing"}) == ["late"]
    assert ids(filter={"category": {"$ne": "pricing"}}) == ["other"]
    assert ids(filter={"category": {"$in": ["pricing", "contact"]}}) == ["late", "other"]
    indexed = {m["id"]: m["metadata"] for m in index.query([1, 0, 0], top_k=10, return_metadata="indexed")["matches"]}
    assert indexed == {"early": {}, "queued": {}, "late": {"category": "pricing"}, "other": {"category": "contact"}}
    # Upserted again after the metadata index was created: indexed as expected.
    index.upsert([_vec("early", [1, 0, 0], metadata={"category": "pricing"})])
    clock.now += 2
    assert ids(filter={"category": "pricing"}) == ["early", "late"]
    index.close()


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


def test_an_index_file_from_before_asynchronous_writes_keeps_its_vectors_filterable(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE config (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE metadata_indexes (property_name TEXT PRIMARY KEY, index_type TEXT NOT NULL);
        CREATE TABLE vectors (id TEXT PRIMARY KEY, namespace TEXT, vals BLOB NOT NULL, metadata TEXT);
        INSERT INTO config VALUES ('name', 'old'), ('dimensions', '3'), ('metric', 'cosine'),
          ('last_mutation', 'm-old'), ('last_mutation_at', '2026-01-01T00:00:00.000000Z');
        INSERT INTO metadata_indexes VALUES ('category', 'string');
    """)
    conn.execute("INSERT INTO vectors VALUES ('a', 'acme', ?, '{\"category\": \"pricing\"}')",
                 (np.asarray([1, 0, 0], dtype="<f4").tobytes(),))
    conn.commit()
    conn.close()
    clock = Clock()
    index = LocalVectorIndex(path, delay=1, clock=clock)
    assert index.info()["processedUpToMutation"] == "m-old"
    assert [m["id"] for m in index.query([1, 0, 0], filter={"category": "pricing"})["matches"]] == ["a"]
    index.create_metadata_index("page", "string")  # a new one covers only later writes
    index.upsert([_vec("b", [0, 1, 0], metadata={"category": "pricing", "page": "/b"})])
    clock.now += 1
    assert [m["id"] for m in index.query([1, 0, 0], filter={"category": "pricing"})["matches"]] == ["a", "b"]
    assert [m["id"] for m in index.query([1, 0, 0], filter={"page": {"$ne": "/x"}})["matches"]] == ["b"]
    index.close()


def test_uploads_are_refused_past_vectorizes_limits(tmp_path: Path) -> None:
    """Metadata at most 10 KiB a vector, at most 5,000 vectors and 100 MB an upload (HTTP API)."""
    cloud = LocalCloud(tmp_path)
    assert _post(cloud, "", {"name": "lim", "config": {"dimensions": 2, "metric": "cosine"}}).status == 200
    ndjson = "application/x-ndjson"

    def lines(vectors: list[dict[str, Any]]) -> bytes:
        return b"\n".join(json.dumps(v).encode() for v in vectors)

    at_limit = {"id": "a", "values": [1.0, 0.0], "metadata": {"text": "x" * (10 * 1024 - 12)}}
    assert len(json.dumps(at_limit["metadata"], ensure_ascii=False).encode()) == 10 * 1024
    assert _post(cloud, "/lim/upsert", lines([at_limit]), ndjson).status == 200
    over = {**at_limit, "metadata": {"text": "x" * (10 * 1024 - 11)}}
    refused = _post(cloud, "/lim/upsert", lines([over]), ndjson)
    assert refused.status == 400 and "at most 10240 bytes" in refused.body["errors"][0]["message"]
    many = [{"id": f"v{i}", "values": [1.0, 0.0]} for i in range(5001)]
    assert _post(cloud, "/lim/upsert", lines(many[:5000]), ndjson).status == 200
    too_many = _post(cloud, "/lim/upsert", lines(many), ndjson)
    assert too_many.status == 400 and "at most 5000" in too_many.body["errors"][0]["message"]
    huge = _post(cloud, "/lim/upsert", b" " * (100 * 1024 * 1024 + 1), ndjson)
    assert huge.status == 413
    cloud.close()


@pytest_twisted.inlineCallbacks
def test_the_client_refuses_metadata_over_10_kib_before_sending(tmp_path: Path):  # type: ignore[no-untyped-def]
    client = CloudflareClient(LocalTransport(LocalCloud(tmp_path)), "local")
    with pytest.raises(ValueError, match="Vectorize allows at most 10240"):
        yield run_async(client.vectorize_upsert("any", [{"id": "a", "values": [1.0], "metadata": {"t": "x" * 10240}}]))
    yield run_async(client.aclose())


@pytest.mark.parametrize("top_k", [1, 3, 20, 50])
def test_best_is_a_stable_sort_cut_at_top_k(top_k: int) -> None:
    # Ties are many (scores of 0..4): the order must be a stable sort's, positions first to last.
    from helppuff_crawl.local.vectorize import _best

    rng = np.random.default_rng(top_k)
    costs = rng.integers(0, 5, size=40).astype(np.float32)
    assert _best(costs, top_k).tolist() == np.argsort(costs, kind="stable")[:top_k].tolist()
