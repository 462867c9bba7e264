"""The contract the crawler shares with the Worker: helppuff_crawl/schema/*.json, read by both sides.

    models.json     the Workers AI models: embedding models (dimensions, batch per call, the input
                    forms of documents and queries, the fused-order cosine bar), the reranker and the
                    chat models, each with its price in neurons; the default embedding models
    knowledge.json  the page categories, the page URLs of passages that are not web pages (the facts
                    passage, own answers, uploaded files), the facts passage's title, and the
                    separator of heading paths
    gap-keys.json   cases for the knowledge-gap key, which both sides compute

The Worker imports the same files (worker/src/contract.ts), so a model, a category or an internal URL
is added in one place; each side's tests check the entries against its own code.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).resolve().parent


@cache
def load(name: str) -> Any:
    """One contract file, parsed (once per process)."""
    return json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))


def models() -> dict[str, Any]:
    return load("models.json")  # type: ignore[no-any-return]


def knowledge() -> dict[str, Any]:
    return load("knowledge.json")  # type: ignore[no-any-return]


#: Page categories, in the contract's order.
CATEGORIES: tuple[str, ...] = tuple(knowledge()["categories"])
#: The facts passage's page URL, and the URL prefixes of own answers and files (+ their id).
FACTS_URL: str = knowledge()["internalUrls"]["facts"]
ANSWERS_URL: str = knowledge()["internalUrls"]["answers"]
FILES_URL: str = knowledge()["internalUrls"]["files"]
FACTS_TITLE: str = knowledge()["factsTitle"]
#: Joins a chunk's heading path: in its context prefix, its id, its `headings` column, the Worker's prompt.
HEADING_SEPARATOR: str = knowledge()["headingSeparator"]
