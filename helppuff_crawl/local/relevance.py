"""The local cloud's relevance model: `@local/e5-relevance`, called as the Worker calls a reranker.

No cross-encoder ships in any package this project may use, so the local cloud scores relevance
with what it has: multilingual-e5-small (helppuff_crawl/local/ai.py E5Embedder). For a query and
each context it reads two things,

- the cosine of the query (in e5's "query: " form) and the context (in its "passage: " form);
- the share of the query's words (lower-cased, letters and digits, 3 or more characters, a few
  English and German stop words left out) that the context contains;

and turns them into a probability of relevance, 0..1, with a logistic function whose weights
were fitted on the question sets about the project's own fixture sites (bench/questions/
acme-plumbing.json and northside-dental.json; for each question the chunks a reranker would be
shown, a context counting as relevant when its page is one of the question's answer pages; the
unanswerable questions give only irrelevant ones) by bench/relevance_calibration.py, never on the sets about the real sites that bench/retrieval.py
measures. So `minScore` (0.2 by default, settings.ts) means here what it means for Cloudflare's
bge-reranker-base: the least probability of relevance kept.

Input and output are @cf/baai/bge-reranker-base's (its Workers AI schema):

    {"query": "...", "contexts": [{"text": "..."}, ...], "top_k"?: n}
        ->  {"response": [{"id": <index in contexts>, "score": 0..1}, ...]}   best first

Embedding every context anew would take seconds per question on a CPU, so context vectors are
kept by their text (an LRU of CACHE_SIZE texts): the same chunks come back question after
question. `warm(texts)` fills it ahead, as `helppuff serve` does for the chunks it serves.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from helppuff_crawl.config.contract import HEADING_SEPARATOR
from helppuff_crawl.local.errors import AIError

RELEVANCE_MODEL = "@local/e5-relevance"  # as helppuff_crawl/schema/models.json lists it
CACHE_SIZE = 20_000  # context vectors kept (384 floats each: about 30 MB)
QUERY_PREFIX, PASSAGE_PREFIX = "query: ", "passage: "  # e5's input forms (local/ai.py reads them off)
RERANK_MAX_CHARS = 2048  # worker/src/rerank.ts: RERANK_MAX_TOKENS (512) at 4 characters a token

# Fitted by bench/relevance_calibration.py on 2026-12-01: 1,796 (question, chunk) pairs of the two
# fixture sites (each question's top 10 chunks by cosine and by word share), 346 relevant; log loss
# 0.385 against 0.490 for a constant guess. Per band of fitted probability, the share relevant
# was 0.05 (0-0.05), 0.08 (0.05-0.1), 0.16 (0.1-0.2), 0.25 (0.2-0.4), 0.43 (0.4-0.6), 0.79
# (0.6-0.8), 0.96 (0.8-1). At minScore 0.2, 85% of the 113 answerable questions keep a passage
# and 77% of the 30 unanswerable ones keep none (at 0.15: 91% and 60%; at 0.3: 79% and 87%).
WEIGHT_COSINE = 23.7797
WEIGHT_WORDS = 3.0021
BIAS = -22.2224

_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)
_STOPWORDS = frozenset(
    "the and for are you your our can what when where which who how does did with from that this "
    "have has there their they them was were will would could should about any all much many not "
    "der die das und ist sind wie was wer wann wo mit von für auf ein eine einen einem einer den dem "
    "des ich sie wir ihr haben kann können gibt".split()
)


def rerank_context(heading_path: Sequence[str], text: str) -> str:
    """The text the Worker sends a reranker for a chunk (worker/src/rerank.ts rerankContext):
    the heading path on the first line, then the body, cut at 2,048 characters."""
    heading = HEADING_SEPARATOR.join(heading_path)
    full = f"{heading}\n{text}" if heading else text
    return full[:RERANK_MAX_CHARS]


def query_words(text: str) -> list[str]:
    """The query's words that count for the word share: lower-cased, stop words left out."""
    return [word for word in _WORD.findall(text.lower()) if word not in _STOPWORDS]


def word_share(words: Sequence[str], context: str) -> float:
    """Share of distinct `words` found in `context` (as words, lower-cased); 0 without words."""
    wanted = set(words)
    if not wanted:
        return 0.0
    found = set(_WORD.findall(context.lower()))
    return len(wanted & found) / len(wanted)


def probability(cosine: float, share: float) -> float:
    """The calibrated probability of relevance for one (query, context)."""
    z = WEIGHT_COSINE * cosine + WEIGHT_WORDS * share + BIAS
    return 1.0 / (1.0 + math.exp(-z))


class E5Relevance:
    """Relevance scores from multilingual-e5-small's cosines and the query's word share."""

    def __init__(self, embedder: Any, cache_size: int = CACHE_SIZE) -> None:
        self.embedder = embedder
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def context_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's "passage: " vector, from the cache or embedded now (then kept)."""
        with self._lock:
            known = {text: self._cache[text] for text in texts if text in self._cache}
            for text in known:
                self._cache.move_to_end(text)
        missing = list(dict.fromkeys(text for text in texts if text not in known))
        if missing:
            vectors, _ = self.embedder.embed([f"{PASSAGE_PREFIX}{text}" for text in missing])
            with self._lock:
                for text, vector in zip(missing, vectors, strict=True):
                    known[text] = self._cache[text] = vector
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        if not texts:
            return np.zeros((0, self.embedder.dimensions), dtype=np.float32)
        return np.stack([known[text] for text in texts])

    def warm(self, texts: Sequence[str], batch: int = 32) -> int:
        """Embed the texts not cached yet, `batch` at a time; the number embedded."""
        with self._lock:
            missing = list(dict.fromkeys(text for text in texts if text and text not in self._cache))
        for start in range(0, len(missing), batch):
            self.context_vectors(missing[start:start + batch])
        return len(missing)

    def features(self, query: str, contexts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(cosines, word shares) of each context for `query`."""
        asked = self.embedder.embed([f"{QUERY_PREFIX}{query}"])[0][0]
        cosines = self.context_vectors(contexts) @ asked if contexts else np.zeros(0, dtype=np.float32)
        words = query_words(query)
        shares = np.asarray([word_share(words, context) for context in contexts], dtype=np.float32)
        return cosines.astype(np.float32), shares

    def run(self, payload: Any) -> dict[str, Any]:
        """The `result` of POST /ai/run/@local/e5-relevance, refusals as Workers AI words them."""
        if not isinstance(payload, dict):
            raise AIError(400, 5006, "Error: Type mismatch of '/', 'object' not in 'array'")
        query, contexts, top_k = payload.get("query"), payload.get("contexts"), payload.get("top_k")
        if not isinstance(query, str) or not query:
            raise AIError(400, 5006, "Error: required properties at '/' are 'query'")
        if not isinstance(contexts, list) or not all(
            isinstance(item, dict) and isinstance(item.get("text"), str) for item in contexts
        ):
            raise AIError(400, 5006, "Error: required properties at '/' are 'contexts', each with 'text'")
        if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1):
            raise AIError(400, 5006, "Error: Type mismatch of '/top_k', 'integer' >= 1 expected")
        texts = [item["text"] for item in contexts]
        cosines, shares = self.features(query, texts)
        scored = sorted(
            ({"id": i, "score": probability(float(c), float(s))} for i, (c, s) in enumerate(zip(cosines, shares))),
            key=lambda entry: -entry["score"],
        )
        return {"response": scored[:top_k] if top_k else scored}
