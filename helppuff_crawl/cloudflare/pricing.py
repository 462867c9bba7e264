"""What Workers AI calls cost, in neurons, from their token counts.

Workers AI bills in neurons; the free allocation is 10,000 a day (reset at 00:00 UTC). Each model's
price in neurons per million input tokens and per million output tokens is in the shared contract
(helppuff_crawl/schema/models.json, from Cloudflare's model catalog; the Worker prices its answers from
the same table). Models of the local cloud (`@local/...`) cost nothing.
"""

from __future__ import annotations

import logging

from helppuff_crawl.schema.contract import models as contract_models

logger = logging.getLogger(__name__)

_KINDS = ("embedding", "reranker", "chat")

# model -> (neurons per million input tokens, neurons per million output tokens)
NEURONS_PER_MILLION: dict[str, tuple[float, float]] = {
    model_id: (float(entry["neuronsPerMillion"]["input"]), float(entry["neuronsPerMillion"]["output"]))
    for kind in _KINDS
    for model_id, entry in contract_models()[kind].items()
}
FREE_NEURONS_PER_DAY: int = int(contract_models()["freeNeuronsPerDay"])


def neurons(model: str, input_tokens: int, output_tokens: int = 0) -> float:
    """Neurons for one call (or a sum of calls) of `model`; ValueError for a model without a price."""
    if input_tokens < 0 or output_tokens < 0:
        raise ValueError(f"token counts must be >= 0, got {input_tokens} in, {output_tokens} out")
    if model in NEURONS_PER_MILLION:
        per_in, per_out = NEURONS_PER_MILLION[model]
    elif model.startswith("@local/"):
        per_in, per_out = 0.0, 0.0
    else:
        raise ValueError(f"no neuron price for model {model!r}; known: {', '.join(sorted(NEURONS_PER_MILLION))}")
    return (input_tokens * per_in + output_tokens * per_out) / 1_000_000
