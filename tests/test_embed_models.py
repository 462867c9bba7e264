"""The embedding models (the shared contract's) and WorkersAIEmbedder: one code path to Cloudflare and
to the local cloud, in each model's input form and batches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_twisted

from helppuff_crawl.cloudflare.client import CloudflareClient, HttpTransport
from helppuff_crawl.schema.contract import models as contract_models
from helppuff_crawl.embed.models import (
    EMBEDDING_MODELS,
    WorkersAIEmbedder,
    default_model,
    embedding_model,
    estimate_tokens,
    input_form,
)
from helppuff_crawl.local.ai import LocalAI
from helppuff_crawl.local.cloud import LocalCloud, LocalTransport
from tests.conftest import run_async
from tests.fake_cloudflare import Canned, FakeCloudflare
from tests.fakes import FakeEmbedder, HashModel, hash_vector


def test_models_and_defaults() -> None:
    assert {model.id: model.dimensions for model in EMBEDDING_MODELS.values()} == {
        "@cf/baai/bge-m3": 1024, "@cf/qwen/qwen3-embedding-0.6b": 1024, "@local/all-minilm-l6-v2": 384,
        "@local/multilingual-e5-small": 384}
    assert (default_model(remote=True), default_model(remote=False)) == ("@cf/baai/bge-m3", "@local/multilingual-e5-small")
    assert set(EMBEDDING_MODELS) == set(contract_models()["embedding"])
    with pytest.raises(ValueError, match="HELPPUFF_EMBED_MODEL must be one of @cf/baai/bge-m3"):
        embedding_model("@cf/baai/bge-large-en-v1.5")


def test_input_forms_from_the_contract() -> None:
    assert (input_form("@cf/baai/bge-m3", query=False).field, input_form("@cf/baai/bge-m3", query=True).field) == \
        ("text", "text")
    qwen = "@cf/qwen/qwen3-embedding-0.6b"
    assert (input_form(qwen, query=False).field, input_form(qwen, query=True).field) == ("documents", "queries")
    assert input_form("@fake/hash-8", query=True).field == "text"  # a model the contract does not list


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"model": "@cf/unknown/model"}, "give its dimensions"),
     ({"model": "@cf/baai/bge-m3", "max_batch": 101}, "1-100 .@cf/baai/bge-m3's texts per call"),
     ({"model": "@cf/baai/bge-m3", "max_batch": 0}, "1-100")],
)
def test_embedder_refuses_what_it_cannot_do(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WorkersAIEmbedder(None, **kwargs)  # type: ignore[arg-type]


def test_estimate_tokens_is_ceil_of_characters_over_four() -> None:
    assert estimate_tokens(["", "abc", "abcd", "abcde"]) == 0 + 1 + 1 + 2


@pytest.fixture
def fake() -> Iterator[FakeCloudflare]:
    with FakeCloudflare() as server:
        yield server


@pytest_twisted.inlineCallbacks
def test_batches_of_100_against_cloudflare(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_remote(fake))


async def _remote(fake: FakeCloudflare) -> None:
    path = "/accounts/acc/ai/run/@cf/baai/bge-m3"
    fake.on("POST", path,
            Canned(result={"shape": [100, 2], "data": [[1.0, 0.0]] * 100}),
            Canned(result={"shape": [8, 2], "data": [[0.0, 1.0]] * 8}))
    client = CloudflareClient(HttpTransport("t", fake.url), "acc")
    embedder = WorkersAIEmbedder(client, "@cf/baai/bge-m3", dimensions=2)  # bge-m3's documented maxItems
    texts = [f"chunk {n:03d} text" for n in range(108)]
    vectors = await embedder.embed(texts)
    assert vectors == [[1.0, 0.0]] * 100 + [[0.0, 1.0]] * 8
    assert [r.json()["text"] for r in fake.requests] == [texts[:100], texts[100:]]
    assert (embedder.calls, embedder.texts) == (2, 108)
    assert (embedder.prompt_tokens, embedder.tokens_estimated) == (estimate_tokens(texts), True)
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_a_vector_of_the_wrong_dimension_is_an_error(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_wrong_dimension(fake))


async def _wrong_dimension(fake: FakeCloudflare) -> None:
    fake.on("POST", "/accounts/acc/ai/run/@cf/baai/bge-m3", Canned(result={"shape": [1, 3], "data": [[1, 2, 3]]}))
    client = CloudflareClient(HttpTransport("t", fake.url), "acc")
    with pytest.raises(ValueError, match="@cf/baai/bge-m3 gave a 3-dimension vector; expected 1024"):
        await WorkersAIEmbedder(client, "@cf/baai/bge-m3").embed(["x"])
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_same_code_path_against_the_local_cloud(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_local(tmp_path))


async def _local(tmp_path: Path) -> None:
    model = HashModel(8)
    client = CloudflareClient(LocalTransport(LocalCloud(tmp_path, ai=LocalAI({"@fake/hash-8": model}))), "local")
    embedder = WorkersAIEmbedder(client, "@fake/hash-8", dimensions=8, max_batch=3)
    texts = ["one two", "three", "four five six", "seven"]
    vectors = await embedder.embed(texts)
    assert vectors == [pytest.approx(hash_vector(t, 8)) for t in texts]
    assert model.batches == [texts[:3], texts[3:]]
    assert (embedder.prompt_tokens, embedder.tokens_estimated) == (7, False)  # reported by the model
    assert await embedder.embed([]) == []
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_fake_embedder_is_deterministic_and_records_batches():  # type: ignore[no-untyped-def]
    yield run_async(_fake_embedder())


async def _fake_embedder() -> None:
    embedder = FakeEmbedder(dimensions=4)
    first = await embedder.embed(["a", "b"])
    again = await embedder.embed(["a"])
    assert first[0] == again[0] and first[0] != first[1]
    assert [round(x, 6) for x in first[0]] == [round(x, 6) for x in hash_vector("a", 4)]
    assert sum(x * x for x in first[1]) == pytest.approx(1.0)
    assert embedder.batches == [["a", "b"], ["a"]] and embedder.calls == 2
    with pytest.raises(ValueError, match="max_batch"):
        await FakeEmbedder(max_batch=1).embed(["a", "b"])


@pytest_twisted.inlineCallbacks
def test_qwen_embedding_takes_documents_or_queries(fake: FakeCloudflare):  # type: ignore[no-untyped-def]
    yield run_async(_qwen(fake))


async def _qwen(fake: FakeCloudflare) -> None:
    # https://developers.cloudflare.com/workers-ai/models/qwen3-embedding-0.6b/
    fake.on("POST", "/accounts/acc/ai/run/@cf/qwen/qwen3-embedding-0.6b",
            Canned(result={"data": [[1.0, 0.0]], "shape": [1, 2]}))
    client = CloudflareClient(HttpTransport("t", fake.url), "acc")
    embedder = WorkersAIEmbedder(client, "@cf/qwen/qwen3-embedding-0.6b", dimensions=2)
    await embedder.embed(["our prices"])
    await embedder.embed_queries(["how much is a tap?"])
    documents, queries = fake.requests
    assert documents.path == "/client/v4/accounts/acc/ai/run/@cf/qwen/qwen3-embedding-0.6b"
    assert documents.json() == {"documents": ["our prices"]}
    assert queries.json() == {"queries": ["how much is a tap?"]}
    await client.aclose()
