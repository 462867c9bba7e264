"""The contract shared with the Worker (helppuff_crawl/schema/models.json, knowledge.json, gap-keys.json),
read here straight from the files and held against what this side's code does. worker/test/contract.test.ts
holds the Worker to the same files."""

from __future__ import annotations

import json
from typing import Any

import pytest

from helppuff_crawl.cloudflare.pricing import neurons
from helppuff_crawl.schema.contract import SCHEMA_DIR
from helppuff_crawl.embed.models import default_model, embedding_model, input_form
from helppuff_crawl.kb.answers import answer_url
from helppuff_crawl.kb.files import file_url
from helppuff_crawl.kb.gaps import gap_key
from helppuff_crawl.local.ai import LocalAI
from helppuff_crawl.text.chunking import ChunkMeta, ChunkSizes, chunk_page, context_prefix


def _load(name: str) -> Any:
    return json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))


MODELS = _load("models.json")
KNOWLEDGE = _load("knowledge.json")
GAP_KEYS = _load("gap-keys.json")["cases"]


@pytest.mark.parametrize("case", GAP_KEYS, ids=[c["question"] or "(blank)" for c in GAP_KEYS])
def test_gap_keys(case: dict[str, str]) -> None:
    assert gap_key(case["question"]) == case["key"]


@pytest.mark.parametrize("model_id", sorted(MODELS["embedding"]))
def test_every_embedding_model(model_id: str) -> None:
    entry = MODELS["embedding"][model_id]
    model = embedding_model(model_id)
    assert (model.dimensions, model.max_batch) == (entry["dimensions"], entry["maxBatch"])
    for kind, query in (("documents", False), ("queries", True)):
        form = input_form(model_id, query=query)
        assert (form.field, form.prefix) == (entry[kind]["field"], entry[kind]["prefix"])
        assert form.texts(["hot water"]) == [entry[kind]["prefix"] + "hot water"]
    assert neurons(model_id, 1_000_000, 0) == entry["neuronsPerMillion"]["input"]


@pytest.mark.parametrize("kind", ["reranker", "chat"])
def test_every_other_model_has_its_price(kind: str) -> None:
    for model_id, entry in MODELS[kind].items():
        price = entry["neuronsPerMillion"]
        assert neurons(model_id, 1_000_000, 1_000_000) == price["input"] + price["output"], model_id


def test_the_defaults_and_the_local_models() -> None:
    assert default_model(remote=True) == MODELS["defaultEmbedding"]["cloudflare"]
    assert default_model(remote=False) == MODELS["defaultEmbedding"]["local"]
    local = {model_id: entry for model_id, entry in MODELS["embedding"].items() if model_id.startswith("@local/")}
    runs = LocalAI().models  # what the local cloud really runs (the model loads only when used)
    assert set(local) == set(runs)
    assert {model_id: runner.dimensions for model_id, runner in runs.items()} == \
        {model_id: entry["dimensions"] for model_id, entry in local.items()}


def test_internal_urls() -> None:
    urls = KNOWLEDGE["internalUrls"]
    assert answer_url("1f3a9c2e") == urls["answers"] + "1f3a9c2e"
    assert file_url("77aa01bc") == urls["files"] + "77aa01bc"
    from helppuff_crawl.kb import facts_table

    assert facts_table.FACTS_URL == urls["facts"] and facts_table.FACTS_TITLE == KNOWLEDGE["factsTitle"]


def test_the_heading_separator() -> None:
    separator = KNOWLEDGE["headingSeparator"]
    assert context_prefix("Prices", ("Prices", "Call-outs"), "pricing", "https://acme.example/p").splitlines()[1] == \
        f"Section: Prices{separator}Call-outs"
    (chunk,) = chunk_page("## Call-outs\n\nA call-out is $99.", ChunkMeta("acme", "https://acme.example/p", "Prices",
                                                                           "pricing"), ChunkSizes(150, 800))
    assert chunk.prefix.splitlines()[1] == f"Section: Prices{separator}Call-outs"
