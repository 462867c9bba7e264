"""Fit the local relevance model's weights (helppuff_crawl/local/relevance.py) on the fixture sites,
and measure it on the other question sets beside the model it replaced.

    .venv/bin/python bench/relevance_calibration.py [--sites acme-plumbing,northside-dental]
                                                    [--measure SITE,...] [--render-js auto]

1. Crawls each site of the fitting sets (default: the fixture sites acme-plumbing and
   northside-dental, never the sets about the real shared sites) and of the measured sets (default:
   every other set in bench/questions/ whose site can be served, as bench/retrieval.py serves it)
   with `helppuff crawl` on multilingual-e5-small into a temporary knowledge base, rendering as the
   crawl does by default (`auto`).
2. For every question, answerable and unanswerable, reads the relevance model's two features (the
   cosine of the question and the chunk's vector as the crawl stored it, the word share) for the
   chunks a reranker would be shown: the site's top 10 by that cosine and its top 10 by word share
   (the Worker reranks the top 10 of its fused vector and keyword lists). The context is what the
   Worker sends a reranker (worker/src/rerank.ts rerankContext: the heading path, a newline, the
   text, cut at 2,048 characters), with the chunk's id. A pair is relevant when the chunk's page is
   one of the question's answer pages.
3. Fits a logistic regression on the fitting sets' pairs only (Newton's method, a small L2 penalty)
   and prints the weights to put in relevance.py, the log loss, and how the fitted probabilities
   sort the pairs (per probability band, pairs and the share that were relevant: a calibrated
   model's shares match its bands); and the weights of the cosine alone, which relevance.py reads
   for a question that shares no word with any chunk shown (a question in another language than
   the site's), on the same pairs. Then fits the two thresholds of the answer's bands on the same
   questions (models.json `bands`): confident, where at most 10% of the unanswerable questions are
   answered in it; closest, where every answerable one keeps a passage.
4. On the fitting sets, and then on the measured sets (never fitted on), prints per threshold what
   `minScore` decides, for the fitted model and for the one before it (the whole context, embedded
   as the reranker reads it, and the exact word share, weights of 2026-12-01, kept here): hit@1 and
   hit@4 over the kept passages, the answerable questions that keep a passage and the unanswerable
   ones that keep none; and the separability of the two groups by their best score (the chance that
   an answerable question's best passage outscores an unanswerable one's), which no threshold can
   exceed. Then, per site, that separability, and the most answerable questions a threshold keeps
   while at least 80% of the unanswerable ones get no passage (issue 12's bar): with one threshold,
   and with a threshold per site chosen on the measured questions themselves, a bound that no
   calibration of the score can beat. Last, what the fitted bands decide: answerable questions
   answered in the confident band, shown their page in the top 4 at either band, or given nothing;
   unanswerable ones answered in the confident band, shown the closest passage, or given nothing.

Not a test. The question sets are the ones written before any measurement (bench/questions/).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.retrieval import QUESTIONS_DIR, crawl, page_path, site_server  # noqa: E402
from helppuff_crawl.local.ai import E5_MODEL  # noqa: E402
from helppuff_crawl.local.cloud import LocalCloud  # noqa: E402
from helppuff_crawl.local.relevance import (  # noqa: E402
    _STOPWORDS,
    PASSAGE_PREFIX,
    RELEVANCE_MODEL,
    E5Relevance,
    rerank_context,
)

FITTED_ON = ("acme-plumbing", "northside-dental")
# The model before this one: the whole context's cosine and the exact word share (fitted the same way).
PREVIOUS = (23.7797, 3.0021, -22.2224)
THRESHOLDS = (0.1, 0.15, 0.2, 0.25, 0.3)
TARGET_DECLINED = 0.8  # issue 12: unanswerable questions with no passage, at least this share


TARGET_UNANSWERABLE_CONFIDENT = 0.10  # issue 26: unanswerable questions answered in the confident band, at most


@dataclass
class Pair:
    question: str  # "<site>#<n>"
    answerable: bool
    relevant: int
    cosine: float  # the cosine with the chunk's stored vector (the model's feature)
    share: float  # word share (the model's feature)
    whole_cosine: float  # the previous model's features
    exact_share: float


_PREVIOUS_WORD = re.compile(r"[^\W_]{3,}")  # the previous model's words: no pairs of CJK characters


def exact_share(question: str, context: str) -> float:
    """The previous model's word share: the question's words (stop words left out) found as they are."""
    wanted = {word for word in _PREVIOUS_WORD.findall(question.lower()) if word not in _STOPWORDS}
    return len(wanted & set(_PREVIOUS_WORD.findall(context.lower()))) / len(wanted) if wanted else 0.0


def site_pairs(cloud: LocalCloud, site: str, site_url: str, data: dict, relevance: E5Relevance) -> list[Pair]:
    db = cloud.database(cloud.database_named("helppuff"))
    chunks = db.query([("SELECT id, url, heading_path, text FROM chunks WHERE site = ?", [site])])[0]["results"]
    stored = cloud.stored_vectors([c["id"] for c in chunks])
    chunks = [c for c in chunks if c["id"] in stored]  # a chunk without a vector is never a vector match
    contexts = [rerank_context(json.loads(c["heading_path"]), c["text"]) for c in chunks]
    ids = [c["id"] for c in chunks]
    paths = [page_path(c["url"], site_url) for c in chunks]
    embedder = relevance.embedder
    vectors = np.stack([stored[i] for i in ids])
    whole = np.asarray(embedder.embed([f"{PASSAGE_PREFIX}{c}" for c in contexts])[0], dtype=np.float32)
    asked = [(item["q"], {a.rstrip("/") or "/" for a in item["answers"]}) for item in data["questions"]]
    asked += [(question, set()) for question in data.get("unanswerable", [])]
    pairs = []
    for n, (question, answers) in enumerate(asked):
        query = np.asarray(embedder.embed([f"query: {question}"])[0][0], dtype=np.float32)
        cosines = vectors @ query
        exact = np.asarray([exact_share(question, c) for c in contexts])
        shown = sorted(set(np.argsort(-cosines)[:10]) | set(np.lexsort((-cosines, -exact))[:10]))
        cosine, shares = relevance.features(question, [contexts[i] for i in shown], [ids[i] for i in shown])
        for k, i in enumerate(shown):
            pairs.append(Pair(f"{site}#{n}", bool(answers), int(paths[i] in answers), float(cosine[k]),
                              float(shares[k]), float(whole[i] @ query), float(exact[i])))
    return pairs


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


def logistic(weights: tuple[float, float, float], cosine: float, share: float) -> float:
    return 1 / (1 + math.exp(-(weights[0] * cosine + weights[1] * share + weights[2])))


def separability(best_a: list[float], best_u: list[float]) -> float:
    """The chance that an answerable question's best score is above an unanswerable one's (ties half)."""
    if not best_a or not best_u:
        return float("nan")
    return float(np.mean([(a > u) + 0.5 * (a == u) for a in best_a for u in best_u]))


def most_kept(best_a: list[float], best_u: list[float], declined: float = TARGET_DECLINED) -> tuple[int, int]:
    """(answerable questions kept, unanswerable ones declined) at the threshold that keeps the most
    answerable questions while declining at least the `declined` share of the unanswerable ones."""
    options = [(sum(a >= t for a in best_a), sum(u < t for u in best_u))
               for t in sorted(set(best_a) | set(best_u) | {math.inf})]
    return max(option for option in options if option[1] >= declined * len(best_u))


def bounds(pairs: list[Pair], score: Callable[[Pair], float]) -> None:
    """Per site, the separability of the answerable and unanswerable questions' best scores; and
    what a threshold can do at the issue's bar (TARGET_DECLINED of the unanswerable questions get no
    passage): one threshold for every site, and one per site chosen on these very questions, a bound
    that no calibration of this score can beat."""
    best: dict[str, dict[str, float]] = {}
    answerable: dict[str, bool] = {}
    for pair in pairs:
        site = pair.question.split("#")[0]
        value = score(pair)
        scores = best.setdefault(site, {})
        scores[pair.question] = max(value, scores.get(pair.question, -math.inf))
        answerable[pair.question] = pair.answerable
    split = {site: ([v for q, v in scores.items() if answerable[q]], [v for q, v in scores.items() if not answerable[q]])
             for site, scores in best.items()}
    print("  separability per site: " + ", ".join(f"{site} {separability(*split[site]):.3f}" for site in sorted(split)))
    every_a = [v for a, _ in split.values() for v in a]
    every_u = [v for _, u in split.values() for v in u]
    kept, declined = most_kept(every_a, every_u)
    print(f"  with at least {TARGET_DECLINED:.0%} of the unanswerable questions given no passage: one threshold keeps "
          f"{kept}/{len(every_a)} answerable ({kept / len(every_a):.3f}), {declined}/{len(every_u)} declined")
    per_site = [most_kept(*split[site]) for site in sorted(split) if split[site][1]]
    kept = sum(k for k, _ in per_site)
    total = sum(len(split[site][0]) for site in split if split[site][1])
    print(f"  a threshold per site, chosen on these questions (a bound): keeps {kept}/{total} answerable "
          f"({kept / total:.3f}), {sum(d for _, d in per_site)}/{len(every_u)} declined")


Ranked = list[tuple[float, Pair]]


def ranked_questions(pairs: list[Pair], score: Callable[[Pair], float]) -> tuple[list[Ranked], list[Ranked]]:
    """Each question's (score, pair) list, best first: the answerable questions', the unanswerable ones'."""
    by: dict[str, Ranked] = {}
    for pair in pairs:
        by.setdefault(pair.question, []).append((score(pair), pair))
    ranked = [sorted(items, key=lambda item: -item[0]) for items in by.values()]
    return [items for items in ranked if items[0][1].answerable], [items for items in ranked if not items[0][1].answerable]


def measure(label: str, pairs: list[Pair], score: Callable[[Pair], float]) -> None:
    """Per threshold: hit@1, hit@4, answerable with a passage, unanswerable with none; and separability."""
    answerable, unanswerable = ranked_questions(pairs, score)
    best_a = np.asarray([items[0][0] for items in answerable])
    best_u = np.asarray([items[0][0] for items in unanswerable])
    separability = float(np.mean([(a > u) + 0.5 * (a == u) for a in best_a for u in best_u])) if len(best_u) else float("nan")
    print(f"\n{label}: {len(answerable)} answerable, {len(unanswerable)} unanswerable questions; "
          f"separability of their best scores {separability:.3f}")
    print(f"{'minScore':>9}{'hit@1':>8}{'hit@4':>8}{'answerable, a passage':>24}{'unanswerable, none':>21}")
    for threshold in THRESHOLDS:
        kept = [[pair.relevant for s, pair in items if s >= threshold][:4] for items in answerable]
        hit1 = sum(bool(k) and k[0] for k in kept) / len(kept)
        hit4 = sum(any(k) for k in kept) / len(kept)
        found = sum(bool(k) for k in kept)
        none = sum(items[0][0] < threshold for items in unanswerable)
        print(f"{threshold:>9.2f}{hit1:>8.3f}{hit4:>8.3f}{found:>17}/{len(kept):<6}{none:>14}/{len(unanswerable)}")
    if unanswerable:
        bounds(pairs, score)


def best_scores(pairs: list[Pair], score: Callable[[Pair], float]) -> tuple[list[float], list[float]]:
    """Each question's best score: (answerable questions', unanswerable ones')."""
    best: dict[str, tuple[float, bool]] = {}
    for pair in pairs:
        value = score(pair)
        if pair.question not in best or value > best[pair.question][0]:
            best[pair.question] = (value, pair.answerable)
    return [v for v, a in best.values() if a], [v for v, a in best.values() if not a]


def fit_bands(pairs: list[Pair], score: Callable[[Pair], float]) -> tuple[float, float]:
    """The two thresholds of the bands (models.json `bands`), from these questions' best scores:
    confident, the least score (to three decimals, up) at which at most TARGET_UNANSWERABLE_CONFIDENT
    of the unanswerable questions have a passage in the band; closest, the least best score of an
    answerable question (to two decimals, down), so that every one of them keeps a passage. The
    closest band is shown as what it is (the site may not cover exactly this), so its bar is set to
    lose no answerable question rather than to turn unanswerable ones away: on these sets the two
    groups' low scores overlap, and a higher bar turns away answerable questions as fast."""
    best_a, best_u = best_scores(pairs, score)
    allowed = math.floor(TARGET_UNANSWERABLE_CONFIDENT * len(best_u))
    above = sorted(best_u, reverse=True)
    confident = math.ceil(above[allowed] * 1000 + 1e-9) / 1000 if allowed < len(above) else 0.0
    return confident, math.floor(min(min(best_a), confident) * 100) / 100


def measure_bands(label: str, pairs: list[Pair], score: Callable[[Pair], float], bands: tuple[float, float]) -> None:
    """What the bands decide for these questions: the answerable ones answered in the confident band,
    shown their page in the top 4 at either band, or given no passage; the unanswerable ones answered
    in the confident band, shown the closest passage, or given none."""
    confident, closest = bands
    answerable, unanswerable = ranked_questions(pairs, score)
    a_conf = sum(items[0][0] >= confident for items in answerable)
    a_page = sum(any(pair.relevant for value, pair in items[:4] if value >= closest) for items in answerable)
    a_none = sum(items[0][0] < closest for items in answerable)
    u_conf = sum(items[0][0] >= confident for items in unanswerable)
    u_none = sum(items[0][0] < closest for items in unanswerable)
    n_a, n_u = len(answerable), max(len(unanswerable), 1)
    print(f"\n{label}, bands confident >= {confident}, closest >= {closest}:")
    print(f"  answerable: confident {a_conf}/{n_a} ({a_conf / n_a:.3f}), their page in the top 4 at either band "
          f"{a_page}/{n_a} ({a_page / n_a:.3f}), no passage {a_none}/{n_a} ({a_none / n_a:.3f})")
    print(f"  unanswerable: confident {u_conf}/{len(unanswerable)} ({u_conf / n_u:.3f}), closest "
          f"{len(unanswerable) - u_conf - u_none}, no passage {u_none}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sites", default=",".join(FITTED_ON), help="the sets to fit on")
    parser.add_argument("--measure", default="", help="the sets to measure on (default: every other one that can be served)")
    parser.add_argument("--render-js", default="auto", choices=("auto", "always", "never"))
    args = parser.parse_args()
    fitting = [s for s in args.sites.split(",") if s]
    measured = [s for s in args.measure.split(",") if s] or [
        p.stem for p in sorted(QUESTIONS_DIR.glob("*.json")) if p.stem not in fitting]
    pairs: dict[str, list[Pair]] = {}
    with tempfile.TemporaryDirectory(prefix="helppuff-calibration-") as tmp:
        data_dir = Path(tmp) / "kb"
        cloud: LocalCloud | None = None
        relevance: E5Relevance | None = None
        for site in fitting + [s for s in measured if s not in fitting]:
            data = json.loads((QUESTIONS_DIR / f"{site}.json").read_text(encoding="utf-8"))
            server = site_server(data["site"])
            if isinstance(server, str):
                if site in fitting:
                    raise SystemExit(f"{site}: cannot be served: {server}")
                print(f"{site}: left out ({server})")
                continue
            with server:
                print(f"{site}: {crawl(server.url, site, data_dir, E5_MODEL, render_js=args.render_js)}", flush=True)
                url = server.url
            cloud = cloud or LocalCloud(data_dir)
            relevance = relevance or cloud.ai.rankers[RELEVANCE_MODEL]
            pairs[site] = site_pairs(cloud, site, url, data, relevance)
    train = [pair for site in fitting for pair in pairs[site]]
    x = np.asarray([(p.cosine, p.share) for p in train])
    y = np.asarray([p.relevant for p in train], dtype=float)
    w = fit(x, y)
    p = 1 / (1 + np.exp(-(x @ w[:2] + w[2])))
    loss = float(-np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12)))
    print(f"\n{len(train)} pairs, {int(y.sum())} relevant; log loss {loss:.4f} (a constant guess: "
          f"{float(-np.mean(y * np.log(y.mean()) + (1 - y) * np.log(1 - y.mean()))):.4f})")
    print(f"WEIGHT_COSINE = {w[0]:.4f}\nWEIGHT_WORDS = {w[1]:.4f}\nBIAS = {w[2]:.4f}")
    print(f"{'probability':>14}{'pairs':>8}{'relevant':>10}")
    for low, high in ((0, 0.05), (0.05, 0.1), (0.1, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.01)):
        band = (p >= low) & (p < high)
        share = f"{y[band].mean():.3f}" if band.any() else "-"
        print(f"{low:>6.2f}-{min(high, 1):<7.2f}{int(band.sum()):>8}{share:>10}")
    fitted = (float(w[0]), float(w[1]), float(w[2]))
    alone = fit(x[:, :1], y)
    print(f"the cosine alone (a question sharing no word with any chunk shown):\n"
          f"WEIGHT_COSINE_ALONE = {alone[0]:.4f}\nBIAS_ALONE = {alone[1]:.4f}")
    held_out = [pair for site in measured if site in pairs and site not in fitting for pair in pairs[site]]
    shared: dict[str, bool] = {}
    for group in pairs.values():
        for pair in group:
            shared[pair.question] = shared.get(pair.question, False) or pair.share > 0

    def model(pair: Pair) -> float:
        """relevance.py's score: the cosine alone when no chunk shown shares a word with the question."""
        if not shared[pair.question]:
            return 1 / (1 + math.exp(-(alone[0] * pair.cosine + alone[1])))
        return logistic(fitted, pair.cosine, pair.share)

    bands = fit_bands(train, model)
    print(f"bands (models.json, {RELEVANCE_MODEL}): {{\"confident\": {bands[0]}, \"closest\": {bands[1]}}}")
    for label, group in ((f"fitted on ({', '.join(fitting)})", train), ("measured on, never fitted on", held_out)):
        if not group:
            continue
        measure(f"{label}, this model", group, model)
        measure(f"{label}, the previous model", group,
                lambda pair: logistic(PREVIOUS, pair.whole_cosine, pair.exact_share))
        measure_bands(f"{label}, this model", group, model, bands)


if __name__ == "__main__":
    main()
