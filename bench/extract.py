"""Main-content extraction on the article benchmark: our extractor beside trafilatura and a body dump.

    .venv/bin/python bench/extract.py [--data ../shared/data/extraction/article-extraction-benchmark]

Prints precision, recall, F1 and the median CPU milliseconds per page (time.process_time) of
`helppuff_crawl.text.markdown.extract`, plain `trafilatura.extract` and the whole <body> text, all
in the same run (these machines are noisy: compare the columns, not runs).

The metric is the benchmark's own (scrapinghub/article-extraction-benchmark, evaluate.py),
reimplemented here: tokens are `\\w+` matches; each text is a multiset of 4-token shingles (a text
of fewer than four tokens is one shingle of all of them); per page tp = |T & P|, fp = |P - T|,
fn = |T - P|. Precision is the mean of tp / (tp + fp) over pages with tp + fp > 0, recall the mean
of tp / (tp + fn) over pages with tp + fn > 0 (a page with fp == fn == 0 scores 1 on both, one
with nothing to match 0), and F1 = 2PR / (P + R) of those means.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import lxml.html
import trafilatura
from lxml import etree

from helppuff_crawl.text.markdown import extract

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "extraction" / "article-extraction-benchmark"
_TOKEN = re.compile(r"\w+")


@dataclass(frozen=True)
class Score:
    precision: float
    recall: float
    f1: float


def shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    tokens = _TOKEN.findall(text or "")
    return Counter(tuple(tokens[i:i + n]) for i in range(max(1, len(tokens) - n + 1)) if tokens[i:i + n])


def match(truth: str, prediction: str) -> tuple[int, int, int]:
    """(tp, fp, fn) of one page's shingle multisets."""
    true, pred = shingles(truth), shingles(prediction)
    tp = sum((true & pred).values())
    return tp, sum((pred - true).values()), sum((true - pred).values())


def score(pages: Iterable[tuple[int, int, int]]) -> Score:
    """The benchmark's precision, recall and F1 over per-page (tp, fp, fn)."""
    pages = list(pages)
    precisions = [_ratio(tp, fp, fn, fp) for tp, fp, fn in pages if tp + fp > 0]
    recalls = [_ratio(tp, fp, fn, fn) for tp, fp, fn in pages if tp + fn > 0]
    precision = statistics.mean(precisions) if precisions else 0.0
    recall = statistics.mean(recalls) if recalls else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Score(precision, recall, f1)


def _ratio(tp: int, fp: int, fn: int, miss: int) -> float:
    if fp == fn == 0:
        return 1.0
    if tp == miss == 0:
        return 0.0
    return tp / (tp + miss)


def load(data: Path) -> list[tuple[str, str, str, bytes]]:
    """(id, url, true article body, html bytes) for each page of the benchmark."""
    truth = json.loads((data / "ground-truth.json").read_text(encoding="utf-8"))
    return [(key, item.get("url", ""), item.get("articleBody", ""), (data / "html" / f"{key}.html").read_bytes())
            for key, item in sorted(truth.items())]


def ours(html: bytes, url: str) -> str:
    return extract(html, url).markdown


def plain_trafilatura(html: bytes, url: str) -> str:
    return trafilatura.extract(html.decode("utf-8", "replace"), url=url or None) or ""


def body_text(html: bytes, url: str) -> str:
    doc = lxml.html.document_fromstring(html)
    etree.strip_elements(doc, "script", "style", "noscript", "template", with_tail=False)
    body = doc.find("body")
    return " ".join((body if body is not None else doc).itertext())


EXTRACTORS: dict[str, Callable[[bytes, str], str]] = {
    "helppuff": ours, "trafilatura": plain_trafilatura, "body text": body_text,
}


def run(data: Path) -> dict[str, tuple[Score, float]]:
    pages = load(data)
    results: dict[str, tuple[Score, float]] = {}
    for name, extractor in EXTRACTORS.items():
        matches, times = [], []
        for _key, url, truth, html in pages:
            start = time.process_time()
            text = extractor(html, url)
            times.append(time.process_time() - start)
            matches.append(match(truth, text))
        results[name] = (score(matches), statistics.median(times) * 1000)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the benchmark folder")
    args = parser.parse_args(argv)
    if not (args.data / "ground-truth.json").exists():
        print(f"no benchmark at {args.data}", file=sys.stderr)
        return 2
    results = run(args.data)
    print(f"article-extraction-benchmark: {len(load(args.data))} pages")
    print(f"{'extractor':<12} {'precision':>9} {'recall':>7} {'F1':>6} {'median CPU ms/page':>19}")
    for name, (result, millis) in results.items():
        print(f"{name:<12} {result.precision:>9.3f} {result.recall:>7.3f} {result.f1:>6.3f} {millis:>19.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
