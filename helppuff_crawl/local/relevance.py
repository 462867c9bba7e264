"""The local cloud's relevance model: `@local/e5-relevance`, called as the Worker calls a reranker.

No cross-encoder ships in any package this project may use, so the local cloud scores relevance
with what it has: multilingual-e5-small (helppuff_crawl/local/ai.py E5Embedder) and the vectors the
crawl already wrote. For a query and each context it reads two things,

- the cosine of the query (in e5's "query: " form) and the context's chunk vector: the vector the
  crawl embedded for that chunk and keeps in the local Vectorize, found by the chunk id the Worker
  sends beside each context (models.json lists this model with `contextIds`). A context without one,
  or whose vector is not there, is embedded whole in e5's "passage: " form (and kept, CACHE_SIZE
  contexts); the query's own vector is the one the search just embedded (E5Embedder keeps recent
  queries). So a question costs one embedding, already made, and a dot product per context: no
  sentence is embedded while a visitor waits, and nothing has to be read ahead of the questions;
- the share of the query's words (lower-cased, letters and digits, 3 or more characters, a few
  English and German stop words left out; Chinese, Japanese and Korean as pairs of characters)
  that the context contains, a word counting when the context has it, a word containing it or
  contained in it (4 or more characters each: "open" and "opening", German compounds) or one with
  the same first five letters (a typo after them: "donnerstg");

and turns them into a probability of relevance, 0..1, with a logistic function (the cosine alone
when no context shares a word with the query: a question in another language than the site's)
whose weights were fitted on the question sets about the project's own fixture sites (bench/questions/acme-plumbing.json
and northside-dental.json; for each question the chunks a reranker would be shown, a context counting
as relevant when its page is one of the question's answer pages; the unanswerable questions give only
irrelevant ones) by bench/relevance_calibration.py, never on the sets about the real sites, which that
script and bench/retrieval.py measure it on. So its scores read as bge-reranker-base's do: a
probability that the passage is relevant. The bands the Worker puts passages in (confident,
closest: models.json `bands`, fitted by the same script) are thresholds on it.

Scoring each of a passage's sentences instead (the best sentence's cosine) separates answerable
from unanswerable questions a little better on the real sites' sets (0.784 against 0.743, both fitted
on the fixture sites), but every sentence must then be embedded: 2.3 times the tokens of the chunks
themselves, either while the crawl runs or while visitors wait (the reason searches were answered
past the reranker's 800 ms before the vectors were ready). At the confident band's threshold the two
keep the same share of answerable questions (0.42 against 0.41 on those sets).

Input and output are @cf/baai/bge-reranker-base's (its Workers AI schema), plus the chunk ids:

    {"query": "...", "contexts": [{"text": "...", "chunkId"?: "..."}, ...], "top_k"?: n}
        ->  {"response": [{"id": <index in contexts>, "score": 0..1}, ...]}   best first
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from helppuff_crawl.schema.contract import HEADING_SEPARATOR
from helppuff_crawl.local.errors import AIError

RELEVANCE_MODEL = "@local/e5-relevance"  # as helppuff_crawl/schema/models.json lists it
CACHE_SIZE = 20_000  # contexts embedded here (no stored vector) kept, 384 float16 each: about 15 MB
QUERY_PREFIX, PASSAGE_PREFIX = "query: ", "passage: "  # e5's input forms (local/ai.py reads them off)
RERANK_MAX_CHARS = 2048  # worker/src/rerank.ts: RERANK_MAX_TOKENS (512) at 4 characters a token

# Fitted by bench/relevance_calibration.py on 2026-12-04: 1,805 (question, chunk) pairs of the two
# fixture sites' sets (each question's top 10 chunks by the stored vector's cosine and by word
# share), 340 relevant; log loss 0.375 against 0.484 for a constant guess. Per band of fitted
# probability, the share relevant was 0.05 (0-0.05), 0.07 (0.05-0.1), 0.11 (0.1-0.2), 0.29 (0.2-0.4),
# 0.48 (0.4-0.6), 0.72 (0.6-0.8), 0.96 (0.8-1). Measured on the four real sites' sets, never fitted
# on: separability of answerable and unanswerable questions' best scores 0.745 (the whole context
# embedded as the reranker reads it, with the exact word share, the model of 2026-12-01: 0.704).
WEIGHT_COSINE = 20.5759
WEIGHT_WORDS = 3.1745
BIAS = -19.8623
# When no context shares a word with the query (a question in another language than the site's:
# "can kids have laughing gas" on a German practice's pages), the word share says nothing, and
# reading it as "no word in common" pushes every passage down. The cosine alone is read then, by a
# logistic function fitted the same way on the same pairs with the cosine alone (log loss 0.427).
# Measured on the four real sites' sets (never fitted on): answerable questions with no passage at
# the closest bar 12 -> 0 of 150, their page in the top 4 at either band 0.827 -> 0.893, the
# unanswerable ones in the confident band unchanged (1 of 34); the German practice's 23 English
# questions are most of those.
WEIGHT_COSINE_ALONE = 30.0729
BIAS_ALONE = -26.5074

# Looks up chunk vectors by id: {id: vector} for those it holds (LocalCloud.stored_vectors).
StoredVectors = Callable[[Sequence[str]], Mapping[str, np.ndarray]]

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+|[^{_CJK_CHARS}]+")
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


def words(text: str) -> list[str]:
    """A text's words, lower-cased: runs of 3 or more letters and digits; Chinese, Japanese and
    Korean, written without spaces between words, as their overlapping pairs of characters (as
    search engines index them), "菠蘿包幾錢" as 菠蘿 蘿包 包幾 幾錢."""
    found = []
    for token in _TOKEN.findall(text.lower()):
        if not _CJK.search(token):
            if len(token) >= 3:
                found.append(token)
            continue
        for run in _CJK_RUN.findall(token):
            if _CJK.match(run):
                found += [run[i:i + 2] for i in range(len(run) - 1)] or [run]
            elif len(run) >= 3:
                found.append(run)
    return found


def query_words(text: str) -> list[str]:
    """The query's words that count for the word share: `words`, stop words left out."""
    return [word for word in words(text) if word not in _STOPWORDS]


def _matches(word: str, found: set[str]) -> bool:
    if word in found:
        return True
    for other in found:
        if len(word) >= 4 and len(other) >= 4 and (word in other or other in word):
            return True
        if len(word) >= 5 and len(other) >= 5 and word[:5] == other[:5]:
            return True
    return False


def word_share(terms: Sequence[str], context: str) -> float:
    """Share of distinct `terms` (query words) the context matches (`_matches`: the word, one
    containing it or contained in it, or one with its first five letters); 0 without terms."""
    wanted = set(terms)
    if not wanted:
        return 0.0
    found = set(words(context))
    return sum(_matches(word, found) for word in wanted) / len(wanted)


def probability(cosine: float, share: float | None) -> float:
    """The calibrated probability of relevance for one (query, context): the cosine of the query and
    the context's vector, and its word share (None: no context of the query shares a word with it,
    and the cosine is read alone)."""
    if share is None:
        z = WEIGHT_COSINE_ALONE * cosine + BIAS_ALONE
    else:
        z = WEIGHT_COSINE * cosine + WEIGHT_WORDS * share + BIAS
    return 1.0 / (1.0 + math.exp(-z))


def _no_stored_vectors(ids: Sequence[str]) -> Mapping[str, np.ndarray]:
    return {}


class E5Relevance:
    """Relevance scores from multilingual-e5-small's cosines with the chunks' stored vectors and the
    query's word share."""

    def __init__(self, embedder: Any, stored: StoredVectors = _no_stored_vectors, cache_size: int = CACHE_SIZE) -> None:
        self.embedder = embedder
        self.stored = stored
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def context_vectors(self, texts: Sequence[str], ids: Sequence[str | None]) -> np.ndarray:
        """Each context's vector: its chunk's stored vector when the id finds one, else the context
        embedded whole as a passage (from the cache, or now, then kept)."""
        found = self.stored([i for i in ids if i]) if any(ids) else {}
        rows: list[np.ndarray | None] = [found.get(i) if i else None for i in ids]
        with self._lock:
            for k, text in enumerate(texts):
                if rows[k] is None and text in self._cache:
                    self._cache.move_to_end(text)
                    rows[k] = self._cache[text]
        missing = list(dict.fromkeys(text for text, row in zip(texts, rows, strict=True) if row is None))
        if missing:
            vectors, _ = self.embedder.embed([f"{PASSAGE_PREFIX}{text}" for text in missing])
            made = {text: np.asarray(vector, dtype=np.float16) for text, vector in zip(missing, vectors, strict=True)}
            with self._lock:
                for text, vector in made.items():
                    self._cache[text] = vector
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
            rows = [made[text] if row is None else row for text, row in zip(texts, rows, strict=True)]
        if not rows:
            return np.zeros((0, self.embedder.dimensions), dtype=np.float32)
        return np.stack([np.asarray(row, dtype=np.float32) for row in rows])

    def features(self, query: str, contexts: Sequence[str], ids: Sequence[str | None] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
        """(cosines, word shares) of each context for `query`."""
        asked = np.asarray(self.embedder.embed([f"{QUERY_PREFIX}{query}"])[0][0], dtype=np.float32)
        vectors = self.context_vectors(contexts, list(ids) if ids is not None else [None] * len(contexts))
        terms = query_words(query)
        shares = [word_share(terms, context) for context in contexts]
        return (vectors @ asked).astype(np.float32), np.asarray(shares, dtype=np.float32)

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
        if not all(isinstance(item.get("chunkId", ""), str) for item in contexts):
            raise AIError(400, 5006, "Error: Type mismatch of '/contexts/chunkId', 'string' expected")
        if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1):
            raise AIError(400, 5006, "Error: Type mismatch of '/top_k', 'integer' >= 1 expected")
        texts = [item["text"] for item in contexts]
        ids = [item.get("chunkId") or None for item in contexts]
        cosines, shares = self.features(query, texts, ids)
        words_apart = not shares.any()  # no context shares a word with the query: the cosine alone
        scored = sorted(
            ({"id": i, "score": probability(float(c), None if words_apart else float(s))}
             for i, (c, s) in enumerate(zip(cosines, shares, strict=True))),
            key=lambda entry: -entry["score"],
        )
        return {"response": scored[:top_k] if top_k else scored}
