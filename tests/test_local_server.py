"""The local cloud over loopback HTTP: the production client, unchanged, against `helppuff serve`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import pytest_twisted

from helppuff_crawl.cloudflare.client import (
    CloudflareClient,
    CloudflareError,
    HttpTransport,
)
from helppuff_crawl.local.ai import LocalAI
from helppuff_crawl.local.cloud import LOCAL_ACCOUNT_ID, LocalCloud
from helppuff_crawl.local.server import LocalCloudServer, serve_local_cloud
from tests.conftest import run_async
from tests.fakes import HashModel, hash_vector
from tests.test_local_vectorize import vector_round_trip

TOKEN = "local-secret"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[LocalCloudServer, str, LocalCloud]]:
    cloud = LocalCloud(tmp_path, ai=LocalAI({"@fake/hash-8": HashModel(8)}))
    server, url = serve_local_cloud(cloud, token=TOKEN)
    yield server, url, cloud
    server.close()
    cloud.close()


def test_url_is_the_api_base_on_loopback(served: tuple[LocalCloudServer, str, LocalCloud]) -> None:
    server, url, _ = served
    assert url == f"http://127.0.0.1:{server.server_address[1]}/client/v4"
    assert server.token == TOKEN


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", ""])
def test_only_loopback_addresses_are_served(tmp_path: Path, host: str) -> None:
    with pytest.raises(ValueError, match="loopback"):
        serve_local_cloud(LocalCloud(tmp_path), host=host, token=TOKEN)


def test_a_random_token_when_none_is_given(tmp_path: Path) -> None:
    cloud = LocalCloud(tmp_path)
    kb = cloud.database_named("kb")
    server, url = serve_local_cloud(cloud)
    assert len(server.token) >= 24
    reply = httpx.post(f"{url}/accounts/local/d1/database/{kb}/query", json={"sql": "SELECT 1 AS n"},
                       headers={"Authorization": f"Bearer {server.token}"})
    assert reply.status_code == 200 and reply.json()["result"][0]["results"] == [{"n": 1}]
    server.close()


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x"])
def test_requests_without_the_token_are_refused(
    served: tuple[LocalCloudServer, str, LocalCloud], authorization: str | None
) -> None:
    _, url, _ = served
    headers = {"Authorization": authorization} if authorization else {}
    reply = httpx.post(f"{url}/accounts/local/d1/database/kb/query", json={"sql": "SELECT 1"}, headers=headers)
    assert reply.status_code == 401
    assert reply.json() == {"success": False, "errors": [{"code": 10000, "message": "Authentication error"}],
                            "messages": [], "result": None}


def test_paths_outside_the_api_are_not_found(served: tuple[LocalCloudServer, str, LocalCloud]) -> None:
    server, _, _ = served
    host, port = server.server_address[:2]
    reply = httpx.get(f"http://{host}:{port}/accounts/local/d1/database",
                      headers={"Authorization": f"Bearer {TOKEN}"})
    assert reply.status_code == 404 and reply.json()["success"] is False


@pytest_twisted.inlineCallbacks
def test_round_trip_over_loopback(served: tuple[LocalCloudServer, str, LocalCloud]):  # type: ignore[no-untyped-def]
    yield run_async(_round_trip(*served))


async def _round_trip(server: LocalCloudServer, url: str, cloud: LocalCloud) -> None:
    client = CloudflareClient(HttpTransport(TOKEN, url), LOCAL_ACCOUNT_ID)
    await vector_round_trip(client)
    kb = (await client.d1_create_database("kb"))["uuid"]
    assert await client.d1_query(kb, "SELECT ? AS s", ["x"]) == [{"s": "x"}]
    vectors = await client.embed("@fake/hash-8", ["hot water", "blocked drain"])
    assert vectors[0] == pytest.approx(hash_vector("hot water", 8))
    with pytest.raises(CloudflareError) as caught:
        await client.embed("@cf/baai/bge-m3", ["x"])
    assert "HTTP 400: 5007: No such model @cf/baai/bge-m3 or task" in str(caught.value)
    await client.aclose()

    bad = CloudflareClient(HttpTransport("wrong", url), LOCAL_ACCOUNT_ID)
    with pytest.raises(CloudflareError) as refused:
        await bad.vectorize_list_indexes()
    assert str(refused.value) == "Vectorize indexes: HTTP 401: 10000: Authentication error"
    await bad.aclose()


# --- a failure of the local cloud's own -------------------------------------------------------------


def _broken_query(self: object, statements: object) -> object:
    raise RuntimeError("database disk image is malformed")


@pytest.mark.parametrize("over", ["loopback", "in process"])
@pytest_twisted.inlineCallbacks
def test_a_failure_of_the_local_cloud_is_a_500_with_its_traceback_logged(  # type: ignore[no-untyped-def]
    over: str, served: tuple[LocalCloudServer, str, LocalCloud], monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
):
    from helppuff_crawl.local.cloud import LocalTransport
    from helppuff_crawl.local.d1 import LocalD1

    _, url, cloud = served
    transport = HttpTransport(TOKEN, url) if over == "loopback" else LocalTransport(cloud)
    client = CloudflareClient(transport, LOCAL_ACCOUNT_ID, max_attempts=2, backoff=0, rate_limit=None)
    database = cloud.create_database("broken")["uuid"]
    monkeypatch.setattr(LocalD1, "query", _broken_query)
    with caplog.at_level("ERROR", logger="helppuff_crawl.local.cloud"):
        with pytest.raises(CloudflareError) as caught:
            yield run_async(client.d1_query(database, "SELECT 1"))
    if over == "loopback":  # the in-process transport's close closes the cloud: the fixture does
        yield run_async(client.aclose())
    # What the operator reads: the local cloud's own failure, said as a server says it, not a lost connection.
    assert caught.value.status == 500
    assert "HTTP 500: 10001: Internal error in the local cloud (see its log)" in str(caught.value), str(caught.value)
    failures = [r for r in caplog.records if r.getMessage().startswith("Local cloud failed on POST /")]
    assert failures and failures[0].exc_info is not None
    assert "database disk image is malformed" in str(failures[0].exc_info[1])
