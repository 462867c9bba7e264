"""Benchmark: does embedding long texts in windows beat truncation? Retrieval quality, same run.

    .venv/bin/python bench/embed_windows.py [--data ../shared/data/extraction/article-extraction-benchmark]
                                            [--queries 3] [--min-tokens 512]

all-MiniLM-L6-v2 reads at most 256 word pieces and drops the rest. The local model embeds a
longer text as the L2-normalised mean of overlapping 254-piece windows (32 overlapping) instead.
This measures both on long real texts: every article of the article-extraction benchmark with at
least `--min-tokens` word pieces is embedded as one document, once truncated (the model's own
behaviour) and once windowed. The queries are sentences of each article (6-60 words), `--queries`
per article, evenly spaced:

- "tail": sentences that start past the first 256 word pieces and in the second half of the
  article, which truncation never reads: the case windows are for;
- "head": sentences within the first 256 word pieces, which both read: windows must not lose much.

Each query ranks all documents by cosine similarity; a hit is its own article. It prints hit@1,
hit@5 and MRR for both methods, for each query set and for both together. This is not a test.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import time
from pathlib import Path

import numpy as np

from helppuff_crawl.local.ai import MiniLMEmbedder, load_sentence_model

logger = logging.getLogger(__name__)

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "extraction" / "article-extraction-benchmark"
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“])")


def sentences_with_offsets(text: str) -> list[tuple[int, str]]:
    out, start = [], 0
    for match in _SENTENCE.finditer(text):
        out.append((start, text[start:match.start()].strip()))
        start = match.end()
    out.append((start, text[start:].strip()))
    return [(offset, s) for offset, s in out if s]


def pick(items: list[tuple[int, str]], count: int) -> list[str]:
    if len(items) <= count:
        return [s for _, s in items]
    step = len(items) / count
    return [items[int(i * step + step / 2)][1] for i in range(count)]


def scores(doc_vectors: np.ndarray, query_vectors: np.ndarray, owners: list[int]) -> dict[str, float]:
    ranks = []
    sims = query_vectors @ doc_vectors.T
    for row, owner in enumerate(owners):
        order = np.argsort(-sims[row], kind="stable")
        ranks.append(int(np.where(order == owner)[0][0]) + 1)
    r = np.asarray(ranks)
    return {"hit@1": float((r == 1).mean()), "hit@5": float((r <= 5).mean()), "MRR": float((1 / r).mean())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--queries", type=int, default=3, help="queries per article and per set")
    parser.add_argument("--min-tokens", type=int, default=512)
    args = parser.parse_args()

    path = args.data / "ground-truth.json"
    if not path.is_file():
        raise SystemExit(f"{path} is absent: this bench needs the article-extraction benchmark in ../shared/data")
    bodies = [" ".join(a.get("articleBody", "").split()) for a in json.loads(path.read_text(encoding="utf-8")).values()]
    started = time.perf_counter()
    load_sentence_model()
    windowed, truncated = MiniLMEmbedder(long_text="windows"), MiniLMEmbedder(long_text="truncate")
    tokenizer = load_sentence_model().tokenizer

    docs: list[str] = []
    queries: dict[str, list[tuple[int, str]]] = {"tail": [], "head": []}
    for body in bodies:
        encoded = tokenizer(body, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        n = len(encoded["input_ids"])
        if n < args.min_tokens:
            continue
        offsets = encoded["offset_mapping"]
        head_end = offsets[255][1]  # character end of the first 256 word pieces
        tail_start = offsets[max(256, n // 2)][0]
        usable = [(o, s) for o, s in sentences_with_offsets(body) if 6 <= len(s.split()) <= 60]
        tail = [(o, s) for o, s in usable if o >= tail_start]
        head = [(o, s) for o, s in usable if o + len(s) <= head_end]
        if not tail or not head:
            continue
        docs.append(body)
        for name, items in (("tail", tail), ("head", head)):
            queries[name].extend((len(docs) - 1, q) for q in pick(items, args.queries))

    tokens = [len(ids) for ids in windowed.tokenize(docs)]
    print(f"{len(docs)} articles of {args.min_tokens}+ word pieces (median {int(np.median(tokens))}, "
          f"max {max(tokens)}); {len(queries['tail'])} tail and {len(queries['head'])} head queries")
    doc_vectors = {}
    for name, model in (("truncated", truncated), ("windowed mean", windowed)):
        t0 = time.perf_counter()
        doc_vectors[name] = np.concatenate([model.embed(docs[i:i + 32])[0] for i in range(0, len(docs), 32)])
        print(f"  embedded the documents {name} in {time.perf_counter() - t0:.1f} s")
    print()
    print(f"{'queries':<6} {'documents':<14} {'hit@1':>6} {'hit@5':>6} {'MRR':>6}")
    queries["both"] = queries["tail"] + queries["head"]
    for qname, items in queries.items():
        owners = [owner for owner, _ in items]
        query_vectors = windowed.embed([q for _, q in items])[0]
        for dname, vectors in doc_vectors.items():
            s = scores(vectors, query_vectors, owners)
            print(f"{qname:<6} {dname:<14} {s['hit@1']:>6.3f} {s['hit@5']:>6.3f} {s['MRR']:>6.3f}")
    print(f"\n({time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
