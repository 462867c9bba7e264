"""Workers AI use per site and UTC day in D1 `usage_daily`, in calls, tokens and neurons.

The crawler adds its embedding use once per run (`add_usage`, keyed so a retried request adds nothing
twice), kind "embed"; the Worker adds every Workers AI call of its searches and answers, priced from the
same table (worker/src/usage.ts): kinds "query", "rerank", "rewrite", "answer" and "gaps".
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from helppuff_crawl.clock import utc_day, utc_now
from helppuff_crawl.kb.database import KnowledgeBase

# Days a usage addition's key is kept: longer than any retry of its request can take.
USAGE_KEY_DAYS = 2

_ADD_USAGE = (
    "INSERT INTO usage_daily (day, site, kind, model, calls, input_tokens, output_tokens, neurons) "
    "SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM usage_writes WHERE id = ?) "
    "ON CONFLICT (day, site, kind, model) DO UPDATE SET "
    "calls = calls + excluded.calls, input_tokens = input_tokens + excluded.input_tokens, "
    "output_tokens = output_tokens + excluded.output_tokens, neurons = neurons + excluded.neurons"
)


async def add_usage(kb: KnowledgeBase, key: str, site: str, kind: str, model: str, calls: int, input_tokens: int,
                    output_tokens: int, neurons: float) -> bool:
    """Add to today's usage row (UTC day), once per `key`; False when the key was already added.

    The addition and its key are one batch (one transaction), so a retried request whose first
    answer was lost adds nothing the second time. Keys older than USAGE_KEY_DAYS are pruned.
    """
    now = utc_now()
    day = utc_day(now)
    oldest = utc_day(now - timedelta(days=USAGE_KEY_DAYS))
    results = await kb.batch([
        (_ADD_USAGE, [day, site, kind, model, calls, input_tokens, output_tokens, neurons, key]),
        ("INSERT INTO usage_writes (id, day) VALUES (?, ?) ON CONFLICT (id) DO NOTHING RETURNING id", [key, day]),
        ("DELETE FROM usage_writes WHERE day < ?", [oldest]),
    ])
    return bool(results[1])


async def usage_on(kb: KnowledgeBase, site: str, day: str) -> list[dict[str, Any]]:
    """The site's usage rows of one UTC day: [{kind, model, calls, input_tokens, output_tokens, neurons}]."""
    return await kb.query("SELECT kind, model, calls, input_tokens, output_tokens, neurons FROM usage_daily "
                          "WHERE site = ? AND day = ?", [site, day])
