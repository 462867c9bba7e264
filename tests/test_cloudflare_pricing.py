"""Neurons from token counts, per the model catalog's prices."""

from __future__ import annotations

import pytest

from helppuff_crawl.cloudflare.pricing import neurons


@pytest.mark.parametrize(
    ("model", "tokens_in", "tokens_out", "expected"),
    [
        ("@cf/zai-org/glm-4.7-flash", 4_000, 250, 31.1),  # the spec's typical answer: ~30 neurons
        ("@cf/zai-org/glm-4.7-flash", 1_000_000, 0, 5_500),
        ("@cf/zai-org/glm-4.7-flash", 0, 1_000_000, 36_400),
        ("@cf/openai/gpt-oss-120b", 1_000_000, 1_000_000, 31_818 + 68_182),
        ("@cf/baai/bge-m3", 200_000, 0, 215.0),
        ("@cf/qwen/qwen3-embedding-0.6b", 1_000_000, 0, 1_075),
        ("@cf/baai/bge-reranker-base", 10 * 512, 0, 1.44896),
        ("@local/all-minilm-l6-v2", 5_000_000, 0, 0.0),
        ("@local/any-other", 100, 100, 0.0),
    ],
)
def test_neurons(model: str, tokens_in: int, tokens_out: int, expected: float) -> None:
    assert neurons(model, tokens_in, tokens_out) == pytest.approx(expected)


@pytest.mark.parametrize(("model", "tokens_in", "tokens_out"), [("@cf/meta/llama-3-8b", 1, 0),
                                                               ("@cf/baai/bge-m3", -1, 0)])
def test_unknown_models_and_negative_counts_are_refused(model: str, tokens_in: int, tokens_out: int) -> None:
    with pytest.raises(ValueError):
        neurons(model, tokens_in, tokens_out)
