"""The local cloud's relevance model: `@local/e5-relevance`, called as the Worker calls a reranker.

No cross-encoder ships in any package this project may use, so the local cloud scores relevance
with what it has: multilingual-e5-small (helppuff_crawl/local/ai.py E5Embedder). For a query and
each context it reads two things,

- the best cosine of the query (in e5's "query: " form) and one of the context's sentences (in its
  "passage: " form; `context_units`: each sentence, list item or line of the body after the
  context's first line, its heading path, as "<first line>: <sentence>"). A passage's one sentence
  that answers is not drowned by the rest of it, as it is in the whole passage's cosine;
- the share of the query's words (lower-cased, letters and digits, 3 or more characters, a few
  English and German stop words left out; Chinese, Japanese and Korean as pairs of characters)
  that the context contains, a word counting when the
  context has it, a word containing it or contained in it (4 or more characters each: "open" and
  "opening", German compounds) or one with the same first five letters (a typo after them:
  "donnerstg");

and turns them into a probability of relevance, 0..1, with a logistic function whose weights
were fitted on the question sets about the project's own fixture sites (bench/questions/
acme-plumbing.json and northside-dental.json; for each question the chunks a reranker would be
shown, a context counting as relevant when its page is one of the question's answer pages; the
unanswerable questions give only irrelevant ones) by bench/relevance_calibration.py, never on the
sets about the real sites, which that script and bench/retrieval.py measure it on. So `minScore`
(0.2 by default, settings.ts) means here what it means for Cloudflare's bge-reranker-base: the least
probability of relevance kept.

Input and output are @cf/baai/bge-reranker-base's (its Workers AI schema):

    {"query": "...", "contexts": [{"text": "..."}, ...], "top_k"?: n}
        ->  {"response": [{"id": <index in contexts>, "score": 0..1}, ...]}   best first

Embedding every sentence anew would take seconds per question on a CPU, so sentence vectors are
kept by their text (an LRU of CACHE_SIZE sentences, as float16): the same chunks come back
question after question. `warm(texts)` fills it ahead, as `helppuff serve` does for the chunks it
serves.
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
CACHE_SIZE = 100_000  # sentence vectors kept (384 float16 each: about 77 MB)
QUERY_PREFIX, PASSAGE_PREFIX = "query: ", "passage: "  # e5's input forms (local/ai.py reads them off)
RERANK_MAX_CHARS = 2048  # worker/src/rerank.ts: RERANK_MAX_TOKENS (512) at 4 characters a token
UNIT_MIN_CHARS = 12  # shorter pieces ("Menu", "$2.99") are not sentences of their own
MAX_UNITS = 24  # sentences read per context (a 2,048-character context has about 15)

# Fitted by bench/relevance_calibration.py on 2026-12-01: 1,800 (question, chunk) pairs of the two
# fixture sites (each question's top 10 chunks by the whole context's cosine and by word share), 345
# relevant; log loss 0.367 against 0.489 for a constant guess (the model before, the whole context's
# cosine and the exact word share: 0.385). Per band of fitted probability, the share relevant was
# 0.03 (0-0.05), 0.10 (0.05-0.1), 0.13 (0.1-0.2), 0.27 (0.2-0.4), 0.44 (0.4-0.6), 0.78 (0.6-0.8),
# 0.94 (0.8-1). On the four real sites' sets, never fitted on (150 answerable, 34 unanswerable; at
# 0eb39c3, before Chinese, Japanese and Korean were read as pairs of characters), at
# minScore 0.2: hit@1 0.493 (0.467 before), 79 answerable questions keep a passage (79), 29
# unanswerable ones keep none (28); an answerable question's best passage outscores an unanswerable
# one's with a chance of 0.716 (0.673), which bounds what any threshold can do.
# Since 2026-12-02 a line without letters (a price) is read with the line before it and a short
# line with the next (`context_units`), so a menu's "Egg Tart" / "$2.99" is one sentence: the same
# fitting gives the same weights to two decimals (the fixture sites have no such lists); on the
# bakery's set (pairs read as above) the separability of its answerable and unanswerable questions
# went from 0.806 to 0.882, and at minScore 0.2 its answerable questions keeping a passage from
# 15 to 19 of 33 with its unanswerable ones keeping none unchanged (9 of 10). A line that starts in
# lower case continues the line before it (`_lines`: a paragraph wrapped at a width): the four real
# sites' pairs, refitted the same way, separability 0.778 -> 0.781, fitted weights within 1%.
WEIGHT_COSINE = 31.4790
WEIGHT_WORDS = 2.6632
BIAS = -29.2525

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+|[^{_CJK_CHARS}]+")
_LETTER = re.compile(r"[^\W\d_]")
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+")
_NUMBERED = re.compile(r"\d+[.)]\s")  # "1. " or "2) ": a numbered list's item
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


def _lines(body: str) -> list[str]:
    """The body's lines, Markdown's marks (list bullets, table bars, heading hashes) taken off; a
    line that starts in lower case continues the one before it (a paragraph its site wrapped at a
    width: "from downtown Vancouver" / "towers to Delta greenhouses")."""
    lines: list[str] = []
    joinable = False
    for raw in body.split("\n"):
        line = raw.strip()
        text = line.strip(" -*|#\t")
        if not text:
            joinable = False  # a blank line ends a paragraph
            continue
        marked = line[0] in "-*|#" or _NUMBERED.match(line) is not None
        if joinable and not marked and text[0].islower():
            lines[-1] = f"{lines[-1]} {text}"
            continue
        lines.append(text)
        joinable = not line.startswith(("#", "|"))
    return lines


def context_units(context: str) -> list[str]:
    """The pieces of a context whose cosines are read: each sentence, list item or line of the body
    (what follows the first line), after the first line (the heading path the Worker puts there) as
    "<first line>: <sentence>"; the whole context when it has no such piece. At most MAX_UNITS.

    Lines are read as a visitor reads them (`_lines`: a wrapped sentence is one line). A menu or a
    price list often puts a name and its price on lines of their own ("Egg Tart", "$2.99"): a
    piece without letters (a price, a number) belongs to the one before it, and a piece shorter
    than UNIT_MIN_CHARS is read with the next one, so "Egg Tart $2.99" is one sentence and neither
    half is lost as too short."""
    first, _, body = context.partition("\n")
    pieces: list[str] = []
    pending = ""
    for line in _lines(body):
        for piece in _SENTENCE_END.split(line):
            piece = piece.strip()
            if not piece:
                continue
            if not _LETTER.search(piece) and (pending or pieces):
                if pending:  # "Egg Tart" then "$2.99": a name and its value, a sentence however short
                    pieces.append(f"{pending} {piece}")
                    pending = ""
                else:
                    pieces[-1] = f"{pieces[-1]} {piece}"
                continue
            pending = f"{pending} {piece}" if pending else piece
            if len(pending) >= UNIT_MIN_CHARS:
                pieces.append(pending)
                pending = ""
    units = [f"{first}: {piece}" if first else piece for piece in pieces]
    return units[:MAX_UNITS] or [context]


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


def probability(cosine: float, share: float) -> float:
    """The calibrated probability of relevance for one (query, context): its best sentence cosine
    and its word share."""
    z = WEIGHT_COSINE * cosine + WEIGHT_WORDS * share + BIAS
    return 1.0 / (1.0 + math.exp(-z))


class E5Relevance:
    """Relevance scores from multilingual-e5-small's cosines and the query's word share."""

    def __init__(self, embedder: Any, cache_size: int = CACHE_SIZE) -> None:
        self.embedder = embedder
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def unit_vectors(self, units: Sequence[str]) -> np.ndarray:
        """Each sentence's "passage: " vector, from the cache or embedded now (then kept)."""
        with self._lock:
            known = {unit: self._cache[unit] for unit in units if unit in self._cache}
            for unit in known:
                self._cache.move_to_end(unit)
        missing = list(dict.fromkeys(unit for unit in units if unit not in known))
        if missing:
            vectors, _ = self.embedder.embed([f"{PASSAGE_PREFIX}{unit}" for unit in missing])
            with self._lock:
                for unit, vector in zip(missing, vectors, strict=True):
                    known[unit] = self._cache[unit] = np.asarray(vector, dtype=np.float16)
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        if not units:
            return np.zeros((0, self.embedder.dimensions), dtype=np.float32)
        return np.stack([known[unit] for unit in units]).astype(np.float32)

    def warm(self, texts: Sequence[str], batch: int = 32, stop: threading.Event | None = None) -> int:
        """Embed the sentences of `texts` not cached yet, `batch` at a time, until `stop` is set; the
        number embedded."""
        with self._lock:
            missing = list(dict.fromkeys(
                unit for text in texts if text for unit in context_units(text) if unit not in self._cache))
        for start in range(0, len(missing), batch):
            if stop is not None and stop.is_set():
                return start
            self.unit_vectors(missing[start:start + batch])
        return len(missing)

    def features(self, query: str, contexts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(best sentence cosines, word shares) of each context for `query`."""
        asked = np.asarray(self.embedder.embed([f"{QUERY_PREFIX}{query}"])[0][0], dtype=np.float32)
        pieces = [context_units(context) for context in contexts]
        vectors = self.unit_vectors([unit for units in pieces for unit in units])
        cosines, start = [], 0
        for units in pieces:
            cosines.append(float((vectors[start:start + len(units)] @ asked).max()))
            start += len(units)
        terms = query_words(query)
        shares = [word_share(terms, context) for context in contexts]
        return np.asarray(cosines, dtype=np.float32), np.asarray(shares, dtype=np.float32)

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
