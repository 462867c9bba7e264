"""Fit the local relevance model's weights (helppuff_crawl/local/relevance.py) on the fixture sites.

    .venv/bin/python bench/relevance_calibration.py [--sites acme-plumbing,northside-dental]

1. Crawls each fixture site of tests/sites that has a question set (default: acme-plumbing and
   northside-dental, never the sets about the real shared sites, which bench/retrieval.py
   measures) with `helppuff crawl` on multilingual-e5-small into a temporary knowledge base.
2. For every question of the sets, answerable and unanswerable, reads the two features the
   relevance model reads (e5 cosine of query and context, share of the query's words in the
   context) for the chunks a reranker would be shown: the site's top 10 by cosine and its top 10
   by word share (the Worker reranks the top 10 of its fused vector and keyword lists). The
   context is what the Worker sends a reranker (worker/src/rerank.ts rerankContext: the heading
   path, a newline, the text, cut at 2,048 characters). A pair is relevant when the chunk's page
   is one of the question's answer pages.
3. Fits a logistic regression (Newton's method, a small L2 penalty) and prints the weights to put
   in relevance.py, the log loss, how the fitted probabilities sort the pairs (per probability
   band, pairs and the share that were relevant: a calibrated model's shares match its bands),
   and, per threshold, the questions that keep a passage: the answerable ones that keep one and
   the unanswerable ones that keep none (what `minScore` decides).

Not a test. The question sets are the ones written before any measurement (bench/questions/).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.retrieval import QUESTIONS_DIR, SITES_DIR, crawl, page_path  # noqa: E402
from helppuff_crawl.local.ai import E5_MODEL  # noqa: E402
from helppuff_crawl.local.cloud import LocalCloud  # noqa: E402
from helppuff_crawl.local.relevance import E5Relevance, rerank_context  # noqa: E402
from tests.sitesserver import SiteServer  # noqa: E402


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, rounds: int = 50) -> np.ndarray:
    """Logistic regression weights (last one the bias) by Newton's method."""
    features = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(features.shape[1])
    for _ in range(rounds):
        p = 1 / (1 + np.exp(-features @ w))
        gradient = features.T @ (p - y) + l2 * np.r_[w[:-1], 0]
        hessian = features.T @ (features * (p * (1 - p))[:, None]) + l2 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sites", default="acme-plumbing,northside-dental")
    args = parser.parse_args()
    rows: list[tuple[float, float, int]] = []
    questions: list[tuple[str, bool]] = []  # per row: its question, and whether the site answers it
    with tempfile.TemporaryDirectory(prefix="helppuff-calibration-") as tmp:
        data_dir = Path(tmp) / "kb"
        cloud = None
        for site in [s for s in args.sites.split(",") if s]:
            data = json.loads((QUESTIONS_DIR / f"{site}.json").read_text(encoding="utf-8"))
            with SiteServer(SITES_DIR / site) as server:
                print(f"{site}: {crawl(server.url, site, data_dir, E5_MODEL)}")
                url = server.url
            cloud = cloud or LocalCloud(data_dir)
            db = cloud.database(cloud.database_named("helppuff"))
            chunks = db.query([("SELECT url, heading_path, text FROM chunks WHERE site = ?", [site])])[0]["results"]
            contexts = [rerank_context(json.loads(c["heading_path"]), c["text"]) for c in chunks]
            paths = [page_path(c["url"], url) for c in chunks]
            relevance = E5Relevance(cloud.ai.models[E5_MODEL])
            relevance.warm(contexts)
            asked = [(item["q"], {a.rstrip("/") or "/" for a in item["answers"]}) for item in data["questions"]]
            asked += [(question, set()) for question in data.get("unanswerable", [])]
            for n, (question, answers) in enumerate(asked):
                cosines, shares = relevance.features(question, contexts)
                shown = set(np.argsort(-cosines)[:10]) | set(np.lexsort((-cosines, -shares))[:10])
                rows += [(float(cosines[i]), float(shares[i]), int(paths[i] in answers)) for i in sorted(shown)]
                questions += [(f"{site}#{n}", bool(answers))] * len(shown)
            print(f"{site}: {len(chunks)} chunks, {len(asked)} questions")
    x = np.asarray([(c, s) for c, s, _ in rows])
    y = np.asarray([label for _, _, label in rows], dtype=float)
    w = fit(x, y)
    p = 1 / (1 + np.exp(-(x @ w[:2] + w[2])))
    loss = float(-np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12)))
    print(f"\n{len(rows)} pairs, {int(y.sum())} relevant; log loss {loss:.4f} (a constant guess: "
          f"{float(-np.mean(y * np.log(y.mean()) + (1 - y) * np.log(1 - y.mean()))):.4f})")
    print(f"WEIGHT_COSINE = {w[0]:.4f}\nWEIGHT_WORDS = {w[1]:.4f}\nBIAS = {w[2]:.4f}")
    print(f"{'probability':>14}{'pairs':>8}{'relevant':>10}")
    for low, high in ((0, 0.05), (0.05, 0.1), (0.1, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.01)):
        band = (p >= low) & (p < high)
        share = f"{y[band].mean():.3f}" if band.any() else "-"
        print(f"{low:>6.2f}-{min(high, 1):<7.2f}{int(band.sum()):>8}{share:>10}")
    best: dict[str, tuple[bool, float]] = {}
    for (key, answerable), probability in zip(questions, p):
        best[key] = (answerable, max(probability, best.get(key, (answerable, 0.0))[1]))
    answerable = [value for ok, value in best.values() if ok]
    unanswerable = [value for ok, value in best.values() if not ok]
    print(f"\nPer question, its best passage's probability against a threshold "
          f"({len(answerable)} answerable, {len(unanswerable)} unanswerable):")
    print(f"{'threshold':>10}{'answerable, a passage':>24}{'unanswerable, none':>21}")
    for threshold in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5):
        kept = sum(value >= threshold for value in answerable) / len(answerable)
        none = sum(value < threshold for value in unanswerable) / len(unanswerable)
        print(f"{threshold:>10.2f}{kept:>24.3f}{none:>21.3f}")


if __name__ == "__main__":
    main()
