"""What Workers AI calls cost, in neurons, from their token counts.

Workers AI bills in neurons; the free allocation is 10,000 a day (reset at 00:00 UTC). Each model
has a price in neurons per million input tokens and per million output tokens, from Cloudflare's
model catalog (as the project's spec records it, checked 2026-10-04; prices change, so re-check
before relying on them). Models of the local cloud (`@local/...`) cost nothing.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

# model -> (neurons per million input tokens, neurons per million output tokens)
NEURONS_PER_MILLION: dict[str, tuple[float, float]] = {
    "@cf/zai-org/glm-4.7-flash": (5_500, 36_400),
    "@cf/openai/gpt-oss-120b": (31_818, 68_182),
    "@cf/baai/bge-m3": (1_075, 0),
    "@cf/qwen/qwen3-embedding-0.6b": (1_075, 0),
    "@cf/baai/bge-reranker-base": (283, 0),
    "@local/all-minilm-l6-v2": (0, 0),
}
FREE_NEURONS_PER_DAY = 10_000


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
