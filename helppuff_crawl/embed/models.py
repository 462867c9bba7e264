"""The embedding models the crawler can use, from the shared contract, behind one small protocol.

`EMBEDDING_MODELS` is helppuff_crawl/schema/models.json's "embedding" part (the Worker reads the same
file): each model's vector size, the texts it takes per call, and the input forms of documents and of
search queries (the field the texts go in, and a prefix before each). `WorkersAIEmbedder` calls
Workers AI's `run` through `CloudflareClient.ai_embed` in that form: against Cloudflare when
credentials are set, against the local cloud otherwise (which runs the bundled multilingual-e5-small
as `@local/multilingual-e5-small`, and all-MiniLM-L6-v2 as `@local/all-minilm-l6-v2`). One code path
for both.

    default_model(remote)  @cf/baai/bge-m3 on Cloudflare, @local/multilingual-e5-small locally (the contract's)
    embedding_model(id)    the model's entry; ValueError naming the known ones

A site's vectors all come from one model (recorded in D1 `site_index`): the Worker embeds
visitors' questions with the same model id and dimension.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from helppuff_crawl.schema.contract import models as contract_models

if TYPE_CHECKING:
    from helppuff_crawl.cloudflare.client import CloudflareClient

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class InputForm:
    """How a model takes texts: `{field: [prefix + text, ...]}`."""

    field: str
    prefix: str = ""

    def texts(self, texts: Sequence[str]) -> list[str]:
        return [self.prefix + text for text in texts]


#: The form of a model the contract does not list (a test's fake model, say): bge-m3's.
PLAIN_TEXT = InputForm("text")


@dataclass(frozen=True)
class EmbeddingModel:
    id: str
    dimensions: int
    max_batch: int  # texts per embedding call
    documents: InputForm
    queries: InputForm

    @classmethod
    def from_contract(cls, model_id: str, entry: Mapping[str, Any]) -> EmbeddingModel:
        return cls(model_id, int(entry["dimensions"]), int(entry["maxBatch"]), InputForm(**entry["documents"]),
                   InputForm(**entry["queries"]))


EMBEDDING_MODELS: dict[str, EmbeddingModel] = {
    model_id: EmbeddingModel.from_contract(model_id, entry) for model_id, entry in contract_models()["embedding"].items()
}
MAX_BATCH = max(model.max_batch for model in EMBEDDING_MODELS.values())  # the most texts any model takes per call


#: One vector per text, in order: an embedder's `embed`, or a batcher's.
EmbedFn = Callable[[list[str]], Awaitable[list[list[float]]]]


class Embedder(Protocol):
    model: str
    dimensions: int
    max_batch: int

    async def embed(self, texts: list[str]) -> list[list[float]]: ...


def default_model(remote: bool) -> str:
    """bge-m3 on Cloudflare; the bundled sentence model in the local cloud."""
    defaults = contract_models()["defaultEmbedding"]
    return str(defaults["cloudflare" if remote else "local"])


def embedding_model(model_id: str, setting: str = "HELPPUFF_EMBED_MODEL") -> EmbeddingModel:
    """The contract's entry for `model_id`; ValueError naming `setting` and the known models."""
    if model_id not in EMBEDDING_MODELS:
        raise ValueError(f"{setting} must be one of {', '.join(EMBEDDING_MODELS)}, got {model_id!r}")
    return EMBEDDING_MODELS[model_id]


def input_form(model_id: str, query: bool) -> InputForm:
    """How `model_id` takes documents (or search queries); the plain form for a model not in the contract."""
    model = EMBEDDING_MODELS.get(model_id)
    if model is None:
        return PLAIN_TEXT
    return model.queries if query else model.documents


def estimate_tokens(texts: Sequence[str]) -> int:
    """ceil(characters / 4) per text: the project's token estimate (chunks.tokens)."""
    return sum(math.ceil(len(t) / 4) for t in texts)


class WorkersAIEmbedder:
    """Embeds with a Workers AI model (or the local cloud's), at most `max_batch` texts per call.

    Counts what it did: `calls`, `texts`, and `prompt_tokens` (as the model reports them, or the
    ceil(characters / 4) estimate when it does not; `tokens_estimated` says which).
    """

    def __init__(self, client: CloudflareClient, model: str, dimensions: int | None = None,
                 max_batch: int | None = None) -> None:
        known = EMBEDDING_MODELS.get(model)
        if dimensions is None:
            if known is None:
                raise ValueError(f"unknown embedding model {model!r}: give its dimensions, or use one of "
                                 f"{', '.join(EMBEDDING_MODELS)}")
            dimensions = known.dimensions
        limit = known.max_batch if known is not None else MAX_BATCH
        max_batch = limit if max_batch is None else max_batch
        if not 1 <= max_batch <= limit:
            raise ValueError(f"max_batch must be 1-{limit} ({model}'s texts per call), got {max_batch}")
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
        return await self._embed(texts, input_form(self.model, query=False))

    async def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """One vector per search query, in the model's query form."""
        return await self._embed(texts, input_form(self.model, query=True))

    async def _embed(self, texts: list[str], form: InputForm) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.max_batch):
            batch = texts[start:start + self.max_batch]
            result = await self.client.ai_embed(self.model, form.texts(batch), field=form.field)
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
