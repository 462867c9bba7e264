"""The local cloud's relevance model (@local/e5-relevance): a reranker's input and output, calibrated scores."""

from __future__ import annotations

import numpy as np
import pytest

from helppuff_crawl.local.ai import E5_MODEL, LocalAI
from helppuff_crawl.local.errors import AIError
from helppuff_crawl.local.relevance import (
    MAX_UNITS,
    RELEVANCE_MODEL,
    E5Relevance,
    context_units,
    probability,
    query_words,
    rerank_context,
    word_share,
    words,
)
from tests.fakes import HashModel

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


def test_sentences_are_embedded_once_as_passages() -> None:
    model = _Counting()
    ranker = E5Relevance(model)
    units = [unit for text in CONTEXTS[:2] for unit in context_units(text)]
    assert ranker.warm(CONTEXTS[:2]) == len(units)
    ranker.run({"query": "open saturday", "contexts": [{"text": t} for t in CONTEXTS]})
    ranker.run({"query": "hot water", "contexts": [{"text": t} for t in CONTEXTS]})
    passages = [t for t in model.texts if t.startswith("passage: ")]
    every = [unit for text in CONTEXTS for unit in context_units(text)]
    assert sorted(passages) == sorted(f"passage: {unit}" for unit in every)
    assert [t for t in model.texts if t.startswith("query: ")] == ["query: open saturday", "query: hot water"]


def test_the_cache_is_bounded() -> None:
    model = _Counting()
    ranker = E5Relevance(model, cache_size=2)
    ranker.warm(CONTEXTS)  # one sentence each: the last two stay
    ranker.warm(CONTEXTS[2:])  # still cached: the newest
    ranker.warm(CONTEXTS[:1])  # evicted: embedded again
    assert len([t for t in model.texts if t.startswith("passage: ")]) == 4


def test_context_units_are_its_sentences_after_its_first_line() -> None:
    context = ("Prices › Pastry\nEgg Tart $2.99. Pineapple Bun $2.79!\n- Mochi, three flavours $2.99\n\n"
               "| Cake | $5.99 |\nMenu")
    assert context_units(context) == [
        "Prices › Pastry: Egg Tart $2.99.",
        "Prices › Pastry: Pineapple Bun $2.79!",
        "Prices › Pastry: Mochi, three flavours $2.99",
        "Prices › Pastry: Cake | $5.99",
    ]  # "Menu" is too short to be a sentence of its own
    assert context_units("One line, no body at all") == ["One line, no body at all"]
    assert context_units("Heading\nshort") == ["Heading\nshort"]
    assert len(context_units("H\n" + "A sentence of some length. " * 100)) == MAX_UNITS


def test_a_name_and_its_price_on_lines_of_their_own_are_one_sentence() -> None:
    # A menu as a site built it (../shared/data/sites, the bakery): each name, then its price, a line each.
    context = "Menu\nAll\nPastry\nCake\nEgg Tart\n$2.99\nMochi\n$2.99\nPineapple Bun\n$2.79\nTel: (718) 353-0832\n11354"
    assert context_units(context) == [
        "Menu: All Pastry Cake",  # short lines read together
        "Menu: Egg Tart $2.99",
        "Menu: Mochi $2.99",  # a name and its price, however short
        "Menu: Pineapple Bun $2.79",  # a price follows the name it is on the line after
        "Menu: Tel: (718) 353-0832 11354",
    ]
    assert context_units("Hours\n$2.99\nOpen daily from six") == ["Hours: $2.99 Open daily from six"]


def test_a_wrapped_sentence_is_read_whole() -> None:
    # A site that wraps its paragraphs at a width (../shared/data/sites, the backflow tester's areas page).
    context = ("Service Areas\n# Where we work\n\nEagle Eye works across the Lower Mainland daily, from downtown Vancouver\n"
               "towers to Delta greenhouses. A Richmond farm runs irrigation\nprotection that floods.\n"
               "Open Monday to Friday\n\n- Vancouver\n- richmond\n\nlower case after a blank line starts its own sentence")
    assert context_units(context) == [
        "Service Areas: Where we work",
        "Service Areas: Eagle Eye works across the Lower Mainland daily, from downtown Vancouver towers to Delta greenhouses.",
        "Service Areas: A Richmond farm runs irrigation protection that floods.",
        "Service Areas: Open Monday to Friday",  # a capital after a break: a line of its own
        "Service Areas: Vancouver richmond",  # list items are their own lines (short ones read together)
        "Service Areas: lower case after a blank line starts its own sentence",
    ]


def test_the_best_sentence_counts_not_the_whole_passage() -> None:
    # One sentence answers; the passage's other sentences are about something else.
    ai = LocalAI()
    filler = " ".join(f"Our {thing} is made fresh every morning by our team." for thing in
                      ("bread", "cake", "coffee", "tea", "juice", "soup", "salad", "pastry"))
    answer = f"About us\n{filler} Parking is free behind the shop on Smith Street."
    other = "Contact\nCall us on 03 9999 1234 or write to hello@example.com."
    response = ai.run(RELEVANCE_MODEL, {"query": "is there parking", "contexts": [{"text": answer}, {"text": other}]})
    scores = {entry["id"]: entry["score"] for entry in response["response"]}
    assert scores[0] > 0.2 > scores[1]


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
