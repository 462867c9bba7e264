"""helppuff serve's local relevance model reads the chunks a crawl writes while serve runs.

The real local cloud (SQLite D1, migrated) and the real multilingual-e5-small; no Worker is started:
DevServer's relevance side is driven directly, as its background thread drives it.
"""

from __future__ import annotations

import json
from pathlib import Path

from helppuff_crawl.local.cloud import LocalCloud
from helppuff_crawl.local.devserver import DevOptions, DevServer
from helppuff_crawl.local.relevance import (
    RELEVANCE_MODEL,
    context_units,
    rerank_context,
)

INSERT = (
    "INSERT INTO chunks (id, site, url, ordinal, heading_path, headings, anchor, title, category, text, prefix, "
    "is_faq, oversized, tokens, seq, content_hash, updated_at) "
    "VALUES (?, 'acme', ?, 0, ?, ?, '', 'Acme', 'other', ?, '', 0, 0, 20, 0, '', ?)"
)


def _learn(cloud: LocalCloud, database: str, n: int, text: str, when: str) -> str:
    heading = ["Acme", f"Page {n}"]
    cloud.database(database).query([(INSERT, [f"c{n}", f"https://acme.example/{n}", json.dumps(heading),
                                              " › ".join(heading), text, when])])
    return rerank_context(heading, text)


def test_serve_reads_the_chunks_a_crawl_writes_while_it_runs(tmp_path: Path) -> None:
    cloud = LocalCloud(tmp_path / "kb")
    server = DevServer(DevOptions(data_dir=tmp_path / "kb"))
    server.cloud, server.database_id = cloud, cloud.database_named("helppuff")
    try:
        ranker = cloud.ai.rankers[RELEVANCE_MODEL]
        first = _learn(cloud, server.database_id, 1, "We clear blocked drains. Call-outs are $99 on weekdays.",
                       "2026-12-01T10:00:00Z")
        assert server.warm_relevance() == 2  # serve's start: the two sentences of the one chunk
        assert server.warm_relevance_if_changed() is None  # nothing changed: nothing read

        # A crawl, in another process, learns a second page.
        added = _learn(cloud, server.database_id, 2, "Gas fitting is licensed. Hot water systems are installed in a day.",
                       "2026-12-01T11:00:00Z")
        assert server.warm_relevance_if_changed() == 2
        assert all(unit in ranker._cache for unit in context_units(first) + context_units(added))
        assert server.warm_relevance_if_changed() is None
    finally:
        server.stop()
