"""The embedding models the crawler can use, behind one small protocol.

`WorkersAIEmbedder` calls Workers AI's `run` through `CloudflareClient.embed`: against Cloudflare
when credentials are set, against the local cloud otherwise (which runs the bundled
all-MiniLM-L6-v2 as `@local/all-minilm-l6-v2`). One code path for both.

    MODELS               model id -> dimensions, for the models the project knows
    default_model(remote) @cf/baai/bge-m3 on Cloudflare, @local/all-minilm-l6-v2 locally

A site's vectors all come from one model (recorded in D1 `site_index`): the Worker embeds
visitors' questions with the same model id and dimension.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from helppuff_crawl.cloudflare.client import CloudflareClient

logger = logging.getLogger(__name__)

MODELS: dict[str, int] = {
    "@cf/baai/bge-m3": 1024,
    "@cf/qwen/qwen3-embedding-0.6b": 1024,
    "@local/all-minilm-l6-v2": 384,
}
REMOTE_DEFAULT = "@cf/baai/bge-m3"
LOCAL_DEFAULT = "@local/all-minilm-l6-v2"
MAX_BATCH = 32  # texts per Workers AI call


class Embedder(Protocol):
    model: str
    dimensions: int
    max_batch: int

    async def embed(self, texts: list[str]) -> list[list[float]]: ...


def default_model(remote: bool) -> str:
    """bge-m3 on Cloudflare; the bundled sentence model in the local cloud."""
    return REMOTE_DEFAULT if remote else LOCAL_DEFAULT


def estimate_tokens(texts: Sequence[str]) -> int:
    """ceil(characters / 4) per text: the project's token estimate (chunks.tokens)."""
    return sum(math.ceil(len(t) / 4) for t in texts)


class WorkersAIEmbedder:
    """Embeds with a Workers AI model (or the local cloud's), at most `max_batch` texts per call.

    Counts what it did: `calls`, `texts`, and `prompt_tokens` (as the model reports them, or the
    ceil(characters / 4) estimate when it does not; `tokens_estimated` says which).
    """

    def __init__(
        self, client: CloudflareClient, model: str, dimensions: int | None = None, max_batch: int = MAX_BATCH
    ) -> None:
        if dimensions is None:
            if model not in MODELS:
                raise ValueError(f"unknown embedding model {model!r}: give its dimensions, or use one of "
                                 f"{', '.join(MODELS)}")
            dimensions = MODELS[model]
        if not 1 <= max_batch <= MAX_BATCH:
            raise ValueError(f"max_batch must be 1-{MAX_BATCH} (Workers AI's limit per call), got {max_batch}")
        self.client = client
        self.model = model
        self.dimensions = dimensions
        self.max_batch = max_batch
        self.calls = 0
        self.texts = 0
        self.prompt_tokens = 0
        self.tokens_estimated = False

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order (documents)."""
        return await self._embed(texts, query=False)

    async def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """One vector per search query (qwen3-embedding gives queries its retrieval instruction)."""
        return await self._embed(texts, query=True)

    async def _embed(self, texts: list[str], query: bool) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.max_batch):
            batch = texts[start:start + self.max_batch]
            result = await self.client.ai_embed(self.model, batch, query=query)
            for vector in result.vectors:
                if len(vector) != self.dimensions:
                    raise ValueError(
                        f"{self.model} gave a {len(vector)}-dimension vector; expected {self.dimensions}"
                    )
            vectors.extend(result.vectors)
            self.calls += 1
            self.texts += len(batch)
            if result.prompt_tokens is None:
                self.tokens_estimated = True
                self.prompt_tokens += estimate_tokens(batch)
            else:
                self.prompt_tokens += int(result.prompt_tokens)
        return vectors
