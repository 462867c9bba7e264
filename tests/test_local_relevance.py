"""The local cloud's relevance model (@local/e5-relevance): a reranker's input and output, calibrated
scores from the chunks' stored vectors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helppuff_crawl.local.ai import E5_MODEL, LocalAI
from helppuff_crawl.local.cloud import LocalCloud
from helppuff_crawl.local.errors import AIError
from helppuff_crawl.local.relevance import (
    RELEVANCE_MODEL,
    E5Relevance,
    probability,
    query_words,
    rerank_context,
    word_share,
    words,
)
from tests.fakes import HashModel, hash_vector

CONTEXTS = [
    "Opening hours\nWe are open Monday to Friday, 8 am to 5 pm, and Saturday mornings until noon.",
    "Hot water\nWe repair and replace gas and electric hot water systems, usually the same day.",
    "Our story\nThe business was started by two brothers in 1998.",
]


def test_runs_as_a_reranker_answers() -> None:
    ai = LocalAI()
    result = ai.run(RELEVANCE_MODEL, {"query": "when are you open on saturday",
                                      "contexts": [{"text": text} for text in CONTEXTS]})
    response = result["response"]
    assert sorted(entry["id"] for entry in response) == [0, 1, 2]
    scores = {entry["id"]: entry["score"] for entry in response}
    assert all(0.0 <= score <= 1.0 for score in scores.values())
    # Best first, and the context that answers is the best.
    assert [entry["score"] for entry in response] == sorted(scores.values(), reverse=True)
    assert response[0]["id"] == 0
    assert scores[0] > 0.2 > scores[2]  # minScore's default keeps it, and not the unrelated one


def test_answers_across_languages() -> None:
    ai = LocalAI()
    contexts = ["Sprechzeiten\nMontag bis Freitag 8 bis 12 Uhr, Dienstag und Donnerstag auch 14 bis 18 Uhr.",
                "Impressum\nVerantwortlich für den Inhalt: Dr. Werland, Hauptstraße 1."]
    response = ai.run(RELEVANCE_MODEL, {"query": "what are your opening hours",
                                        "contexts": [{"text": text} for text in contexts]})["response"]
    assert response[0]["id"] == 0


def test_top_k_keeps_the_best() -> None:
    ai = LocalAI()
    payload = {"query": "hot water heater broken", "contexts": [{"text": t} for t in CONTEXTS], "top_k": 1}
    assert [entry["id"] for entry in ai.run(RELEVANCE_MODEL, payload)["response"]] == [1]


@pytest.mark.parametrize("payload", [
    [],
    {"contexts": [{"text": "a"}]},
    {"query": "", "contexts": [{"text": "a"}]},
    {"query": "q", "contexts": "a"},
    {"query": "q", "contexts": [{"body": "a"}]},
    {"query": "q", "contexts": [{"text": "a"}], "top_k": 0},
    {"query": "q", "contexts": [{"text": "a", "chunkId": 7}]},
])
def test_refuses_what_the_reranker_schema_refuses(payload: object) -> None:
    with pytest.raises(AIError) as caught:
        LocalAI().run(RELEVANCE_MODEL, payload)
    assert (caught.value.status, caught.value.code) == (400, 5006)


class _Counting(HashModel):
    def __init__(self) -> None:
        super().__init__(384)
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        self.texts += texts
        return super().embed(texts)


def test_stored_vectors_are_read_and_nothing_else_is_embedded() -> None:
    model = _Counting()
    stored = {"c1": np.asarray(hash_vector("stored one", 384), dtype=np.float32)}
    asked: list[list[str]] = []

    def lookup(ids: list[str]) -> dict[str, np.ndarray]:
        asked.append(list(ids))
        return {i: stored[i] for i in ids if i in stored}

    ranker = E5Relevance(model, stored=lookup)
    contexts = [{"text": CONTEXTS[0], "chunkId": "c1"}, {"text": CONTEXTS[1], "chunkId": "gone"},
                {"text": CONTEXTS[2]}]
    ranker.run({"query": "open saturday", "contexts": contexts})
    ranker.run({"query": "hot water", "contexts": contexts})
    assert asked == [["c1", "gone"], ["c1", "gone"]]
    # The stored one is never embedded; the two without one are embedded whole once, then kept.
    passages = [t for t in model.texts if t.startswith("passage: ")]
    assert passages == [f"passage: {CONTEXTS[1]}", f"passage: {CONTEXTS[2]}"]
    cosines, _ = ranker.features("open saturday", [CONTEXTS[0]], ["c1"])
    query = np.asarray(hash_vector("query: open saturday", 384), dtype=np.float32)
    assert cosines[0] == pytest.approx(float(stored["c1"] @ query), abs=1e-6)


def test_a_query_sharing_no_word_with_any_context_is_read_by_its_cosine_alone() -> None:
    ranker = E5Relevance(HashModel(384))
    query = "laughing gas for kids"
    german = ["Lachgas\nDie Lachgassedierung eignet sich auch für Kinder.", "Anfahrt\nParkplätze am Haus."]
    cosines, shares = ranker.features(query, german)
    assert not shares.any()
    scores = {entry["id"]: entry["score"] for entry in ranker.run({"query": query, "contexts": [{"text": t} for t in german]})["response"]}
    assert scores == {i: pytest.approx(probability(float(c), None)) for i, c in enumerate(cosines)}
    # One shared word anywhere: every context is read with its word share again.
    mixed = [*german, "Kids\nWe see kids from age two."]
    cosines, shares = ranker.features(query, mixed)
    scores = {entry["id"]: entry["score"] for entry in ranker.run({"query": query, "contexts": [{"text": t} for t in mixed]})["response"]}
    assert scores == {i: pytest.approx(probability(float(c), float(w))) for i, (c, w) in enumerate(zip(cosines, shares))}
    # Without words, a cosine counts for more: nothing says the passage is off the question's words.
    assert probability(0.88, None) > probability(0.88, 0.0)


def test_the_cache_is_bounded() -> None:
    model = _Counting()
    ranker = E5Relevance(model, cache_size=2)
    for texts in (CONTEXTS, CONTEXTS[2:], CONTEXTS[:1]):  # the last two stay; the newest is kept; the first is gone
        ranker.context_vectors(texts, [None] * len(texts))
    assert len([t for t in model.texts if t.startswith("passage: ")]) == 4


def test_the_local_cloud_gives_the_ranker_its_stored_vectors(tmp_path: Path) -> None:
    # The real local cloud: a Vectorize index on SQLite, written through its REST API as the crawl writes it.
    model = _Counting()
    cloud = LocalCloud(tmp_path / "kb", ai=LocalAI({E5_MODEL: model}), vectorize_delay=0)
    try:
        created = cloud.handle("POST", "/accounts/local/vectorize/v2/indexes",
                               json.dumps({"name": "helppuff", "config": {"dimensions": 384, "metric": "cosine"}}).encode())
        assert created.status == 200, created.body
        values = hash_vector("passage: Page: Hours\nWe are open Saturday mornings.", 384)
        body = json.dumps({"id": "c1", "values": values, "namespace": "acme"}).encode()
        written = cloud.handle("POST", "/accounts/local/vectorize/v2/indexes/helppuff/upsert", body,
                               {"content-type": "application/x-ndjson"})
        assert written.status == 200, written.body
        assert set(cloud.stored_vectors(["c1", "c2"])) == {"c1"}
        response = cloud.ai.run(RELEVANCE_MODEL, {"query": "open saturday",
                                                  "contexts": [{"text": CONTEXTS[0], "chunkId": "c1"}]})
        assert [entry["id"] for entry in response["response"]] == [0]
        assert not [t for t in model.texts if t.startswith("passage: ")]
    finally:
        cloud.close()


def test_features_and_probability() -> None:
    assert query_words("What are the opening hours for Saturday?") == ["opening", "hours", "saturday"]
    assert word_share(["opening", "hours"], "Our opening hours: 8-5") == 1.0
    assert word_share(["opening", "hours"], "Closed at 8") == 0.0
    assert word_share(["opening", "hours"], "Open at 8") == 0.5  # "open" is inside "opening"
    assert word_share([], "anything") == 0.0
    # A word inside a longer one (4+ letters each), or the same first five letters (a typo after them).
    assert word_share(["open"], "We are opening soon") == 1.0
    assert word_share(["zahnschmerzen"], "Bei Schmerzen rufen Sie an") == 1.0
    assert word_share(["donnerstg"], "Donnerstag 8-12 Uhr") == 1.0
    assert word_share(["car"], "a carport") == 0.0  # 3 letters: the word itself only
    # Chinese, Japanese and Korean are written without spaces: their words are pairs of characters.
    assert words("Egg tart 蛋塔價錢?") == ["egg", "tart", "蛋塔", "塔價", "價錢"]
    assert query_words("營業時間") == ["營業", "業時", "時間"]
    assert word_share(query_words("營業時間"), "整週營業時間: 6 AM - 6 PM") == 1.0
    assert word_share(query_words("蛋塔"), "麻糬 $2.99") == 0.0
    assert probability(0.95, 1.0) > probability(0.95, 0.0) > probability(0.75, 0.0)
    assert 0.0 < probability(0.0, 0.0) < probability(1.0, 1.0) < 1.0


def test_rerank_context_is_the_workers() -> None:
    # worker/src/rerank.ts rerankContext: heading path joined by " › ", a newline, the body; 2,048 characters.
    assert rerank_context(["Services", "Hot water"], "We fix it.") == "Services › Hot water\nWe fix it."
    assert rerank_context([], "Body only.") == "Body only."
    assert len(rerank_context(["H"], "x" * 5000)) == 2048


def test_registered_beside_the_e5_model_only() -> None:
    assert RELEVANCE_MODEL in LocalAI().rankers
    assert LocalAI({E5_MODEL: HashModel(384)}).rankers
    assert not LocalAI({"@fake/hash-8": HashModel(8)}).rankers
