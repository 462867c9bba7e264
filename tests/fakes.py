"""Fakes at the outside edge: a deterministic embedder, and a local-cloud model from it.

`FakeEmbedder` follows helppuff_crawl.embedding.Embedder: fixed-dimension unit vectors from a
hash of the text (the same text always gives the same vector; different texts nearly orthogonal
ones), and it records each batch it was given, like llm's EmbedDemo.
`HashModel` is the same vectors as a helppuff_crawl.local.ai.LocalModel, so a LocalCloud can run
a fake model (`LocalCloud(path, ai=LocalAI({"@fake/hash-8": HashModel(8)}))`) without torch.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np


def hash_vector(text: str, dimensions: int) -> list[float]:
    """A unit vector from SHA-256 of the text, deterministic across runs and machines."""
    values: list[float] = []
    counter = 0
    while len(values) < dimensions:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    values = values[:dimensions]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


class FakeEmbedder:
    """Deterministic vectors from the text's hash; records every batch."""

    def __init__(self, dimensions: int = 8, model: str = "@fake/hash-8", max_batch: int = 32) -> None:
        self.model = model
        self.dimensions = dimensions
        self.max_batch = max_batch
        self.batches: list[list[str]] = []

    @property
    def calls(self) -> int:
        return len(self.batches)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if len(texts) > self.max_batch:
            raise ValueError(f"batch of {len(texts)} texts is over max_batch {self.max_batch}")
        self.batches.append(list(texts))
        return [hash_vector(t, self.dimensions) for t in texts]


class HashModel:
    """hash_vector as a local-cloud model; counts one token per word."""

    def __init__(self, dimensions: int = 8) -> None:
        self.dimensions = dimensions
        self.batches: list[list[str]] = []

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        self.batches.append(list(texts))
        rows = np.asarray([hash_vector(t, self.dimensions) for t in texts], dtype=np.float32)
        return rows.reshape(len(texts), self.dimensions), sum(len(t.split()) for t in texts)
