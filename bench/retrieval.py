"""Retrieval quality, the chat's "not sure" rate and search latency through the real Worker, per embedding model.

    .venv/bin/python bench/retrieval.py [--models A,B] [--sites acme-plumbing,...] [--no-chat]
                                        [--rounds 2] [--sizes 1000,10000]

1. Serves the site of every question set in bench/questions/<site>.json on 127.0.0.1: a folder
   of tests/sites as it is, or a real site of ../shared/data/sites as its host serves it
   (tests/realsites.py: links to its production domain rewritten to the server, pretty URLs, a
   single-page app's fallback, its 404.html). A set whose site is in neither is left out, and
   said so; so are the shared sites' sets when ../shared/data/sites is absent.
2. For each embedding model of `--models` (default: the local cloud's default), crawls every site
   with `helppuff crawl` (a child process, rendering as by default, HELPPUFF_EMBED_MODEL set) into a
   knowledge base of that model's own, the set's site as the site id, then checks each set's
   answer paths against the paths of the pages the crawl learned: one never learned is printed
   with its page's status (a crawl miss, or a wrong path in the set). Paths are compared without a
   trailing slash ("/" stays "/"), as the crawler writes URLs. A model the local cloud does not
   have is one line and exit status 2, before anything is crawled.
3. Runs the Worker on it as `helppuff serve` does (helppuff_crawl.devloop.server: the local cloud and
   `wrangler dev` in workerd, the dev shims reading the crawl's SQLite file and vector index; the
   Worker embeds each question with the model the crawl recorded for the site).
4. Asks every question three times through POST /v1/sites/<site>/search (the site's settings
   accept requests without an Origin, `allowNoOrigin`), with `mode` "hybrid"
   (the Worker's pipeline), "keywords" (FTS5 BM25 alone) and "vectors" (Vectorize alone); the
   rest of the pipeline (intent boost, reranker, selection) is the same for all three. Locally the
   reranker is the local cloud's relevance model (@local/e5-relevance,
   helppuff_crawl/local/relevance.py: the query's cosine with each chunk's stored vector, and its
   word share), and each passage comes in its band (worker/src/bands.ts: confident, or closest,
   down to the model's closest bar); where the relevance model fails or is too slow, the answer is in
   fused order (every passage closest), where a vector match counts only at a cosine of at least
   worker/src/select.ts fusedMinCosine(model) (models.json). Prints, per site and over all
   questions, hit@1, hit@4 and MRR (over up to 20 passages; hit@4 is "shown its page", in either
   band), the answerable questions that got a passage and one in the confident band, the
   unanswerable ones (nothing on the site answers them) that got none and one in the confident band
   (a false claim), side by side, and, to show what the cosine cut does, the same for Vectorize's
   own order (the local cloud's index queried directly with the query's embedding: no Worker, no
   cut). Then the answerable questions once more in hybrid mode with the site's minScore set to 0
   ("uncut"): the Worker's ranking alone, so that what the ranking loses and what the relevance cut
   loses are read apart.
5. Unless `--no-chat`, asks every question once more through POST /v1/sites/<site>/chat (one
   user message; the answer's server-sent events read to `done`) and sorts the answers by kind:
   confident (quoted from the pages, or from the business details), closest (worker/src/chat/
   extractive.ts CLOSEST_LABEL: not sure, the closest passage shown with its source), or the plain
   "not sure" with the callback (no passage shown). Locally there is no chat model, so the Worker
   answers extractively, and that is what is measured: a plain "not sure" on an answerable
   question is a miss, a confident answer to an unanswerable one a false claim.
6. Unless `--sizes ""`, adds filler chunks to the first site (same D1 table and Vectorize
   namespace, so every search scans them) through the local cloud's D1 and Vectorize REST APIs, up
   to 1,000 and then 10,000 chunks, and prints search latency p50/p95 (client round trip, each
   mode) at the crawled size and each size, and the hybrid search's time inside the Worker (its
   Server-Timing header: each binding's wait and the total). Filler texts mix plumbing and everyday
   words, so keyword searches match many of them; their vectors are random unit vectors of the
   model's dimensions, which cost the same to scan as real ones.
7. Ends with one summary row per (model, retriever) over all questions.

Machines are noisy: read the latency ratios between sizes, not the absolute times. Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import json
import logging
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helppuff_crawl.cloudflare.client import CloudflareClient, HttpTransport
from helppuff_crawl.schema.contract import models as contract_models
from helppuff_crawl.embed.models import EMBEDDING_MODELS, input_form
from helppuff_crawl.local.ai import LocalAI
from helppuff_crawl.local.cloud import LOCAL_ACCOUNT_ID
from helppuff_crawl.devloop.server import DevOptions, DevServer, port_is_free
from tests.realsites import REAL_SITES, real_site_server, shared_sites_dir
from tests.sitesserver import SiteServer

logger = logging.getLogger(__name__)

QUESTIONS_DIR = Path(__file__).with_name("questions")
SITES_DIR = ROOT / "tests" / "sites"
EXTRACTIVE_TS = ROOT / "worker" / "src" / "chat" / "extractive.ts"
MODES = ("hybrid", "keywords", "vectors")
# Each table's rows: the three modes, the hybrid pipeline without the relevance cut, Vectorize alone.
ROWS = (*MODES, "uncut", "raw")
LIMIT = 20  # passages asked for: hit@1 and hit@4 read the first ones, MRR all of them
FACTS = "helppuff://facts"  # the facts passage's URL: an answer path, never a page

_VOCABULARY = (
    "tap leak drain pipe water hot cold gas heater toilet shower sink roof gutter valve pressure "
    "tank service repair install replace inspect quote price booking weekend team licensed local "
    "garden kitchen bathroom laundry renovation camera roots jetting solar electric warranty "
    "house street family weather winter summer morning evening friendly quick clean tidy safe "
    "council permit report photo visit plan cost budget material copper plastic fitting seal"
)


@dataclass(frozen=True)
class QuestionSet:
    """bench/questions/<site>.json: questions with the page paths that answer them, and questions
    nothing on the site answers."""

    site: str
    questions: list[dict[str, Any]]
    unanswerable: list[str]


def site_server(site: str) -> SiteServer | str:
    """A (not yet started) server for `site`: its tests/sites folder, or its shared folder served
    as its host would; else why it cannot be served."""
    if (SITES_DIR / site).is_dir():
        return SiteServer(SITES_DIR / site)
    if site in REAL_SITES:
        server = real_site_server(site)
        if server is None:
            where = shared_sites_dir() or ROOT.parent / "shared" / "data" / "sites"
            return f"its site is a shared one, and {where}/{REAL_SITES[site].folder} is absent"
        return server
    return "its site is neither in tests/sites nor in tests/realsites.py REAL_SITES"


def load_question_sets(names: list[str] | None) -> list[tuple[QuestionSet, SiteServer]]:
    sets = []
    for path in sorted(QUESTIONS_DIR.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if names and data["site"] not in names:
            continue
        server = site_server(data["site"])
        if isinstance(server, str):
            if names:
                raise SystemExit(f"{path.name}: cannot be measured: {server}")
            print(f"{path.name}: left out ({server})", file=sys.stderr)
            continue
        sets.append((QuestionSet(data["site"], data["questions"], data.get("unanswerable", [])), server))
    if not sets:
        raise SystemExit(f"no question set in {QUESTIONS_DIR} matches {names}")
    return sets


def check_models(names: list[str]) -> list[str]:
    """The models asked for, each one the crawler knows and the local cloud runs; else one line, exit 2."""
    have = [m for m in LocalAI().models if m in EMBEDDING_MODELS]
    for name in names:
        if name not in have:
            print(f"retrieval.py: --models: {name} is not an embedding model the local cloud has "
                  f"(it has {', '.join(have)})", file=sys.stderr)
            raise SystemExit(2)
    return names


def crawl(site_url: str, site: str, data_dir: Path, model: str, render_js: str = "auto") -> str:
    """Crawl `site` into `data_dir` with `model`, rendering as the crawl does by default (`auto`: a
    page whose main content its own scripts build is rendered in Chromium); its first line of
    output (a failed run is said, not fatal)."""
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(data_dir), "CLOUDFLARE_API_TOKEN": "", "CLOUDFLARE_ACCOUNT_ID": "",
           "HELPPUFF_EMBED_MODEL": model}
    helppuff = str(Path(sys.executable).parent / "helppuff")
    result = subprocess.run([helppuff, "crawl", site_url, "--site", site, "--render-js", render_js],
                            cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if result.returncode not in (0, 1) or not result.stdout.strip():
        raise SystemExit(f"the crawl of {site} failed:\n{result.stdout}\n{result.stderr}")
    first = result.stdout.strip().splitlines()[0]
    store_settings(site, data_dir)
    return first


def store_settings(site: str, data_dir: Path, min_score: float | None = None) -> None:
    """Store the site's settings with `helppuff settings set`: requests without an Origin accepted,
    as this script sends them (the search route answers those only for a site that says so,
    worker/src/guard.ts); with `min_score`, the reranker's least score kept instead of the default."""
    settings: dict[str, Any] = {"allowNoOrigin": True}
    if min_score is not None:
        settings["backend"] = {"retrieval": {"minScore": min_score}}
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(data_dir), "CLOUDFLARE_API_TOKEN": "", "CLOUDFLARE_ACCOUNT_ID": ""}
    stored = subprocess.run([str(Path(sys.executable).parent / "helppuff"), "settings", "set", "-", "--site", site],
                            cwd=ROOT, env=env, input=json.dumps(settings), capture_output=True, text=True, check=False)
    if stored.returncode != 0:
        raise SystemExit(f"the settings of {site} could not be stored:\n{stored.stderr}")


def normal_path(path: str) -> str:
    """An answer path or a page's path as compared: without a trailing slash, "/" for the root."""
    return path if path == FACTS else (path.rstrip("/") or "/")


def page_path(url: str, site_url: str) -> str:
    return normal_path(url.split("#")[0].removeprefix(site_url) or "/")


def unlearned_answers(dev: DevServer, qset: QuestionSet, site_url: str) -> list[str]:
    """Lines for the set's answer paths that no learned page (or the facts passage) has, with the page's status."""
    assert dev.cloud is not None
    db = dev.cloud.database(dev.database_id)
    pages = {page_path(row["url"], site_url): row for row in db.query(
        [("SELECT url, status, reason FROM pages WHERE site = ?", [qset.site])])[0]["results"]}
    facts = db.query([("SELECT COUNT(*) AS n FROM chunks WHERE site = ? AND url = ?", [qset.site, FACTS])])
    learned = {path for path, row in pages.items() if row["status"] in ("ok", "unchanged")}
    if facts[0]["results"][0]["n"]:
        learned.add(FACTS)
    wanted: dict[str, int] = {}
    for item in qset.questions:
        for answer in item["answers"]:
            wanted[normal_path(answer)] = wanted.get(normal_path(answer), 0) + 1
    lines = []
    for path in sorted(set(wanted) - learned):
        row = pages.get(path)
        state = f"{row['status']}" + (f": {row['reason']}" if row["reason"] else "") if row else "never found"
        count = wanted[path]
        lines.append(f"  {path} ({count} question{'' if count == 1 else 's'}): {state}")
    return lines


def search(client: httpx.Client, worker_url: str, site: str, query: str, mode: str) -> tuple[dict[str, Any], float]:
    answer, elapsed, _ = timed_search(client, worker_url, site, query, mode)
    return answer, elapsed


def server_timing(header: str) -> dict[str, float]:
    """The stages of a Server-Timing header (worker/src/timing.ts), ms by name."""
    stages = {}
    for entry in filter(None, (part.strip() for part in header.split(","))):
        name, _, duration = entry.partition(";dur=")
        stages[name] = float(duration) if duration else 0.0
    return stages


def timed_search(client: httpx.Client, worker_url: str, site: str, query: str,
                 mode: str) -> tuple[dict[str, Any], float, dict[str, float]]:
    """The search's answer, its client round trip (s) and the Worker's own Server-Timing stages (ms)."""
    for attempt in range(3):
        started = time.perf_counter()
        reply = client.post(f"{worker_url}/v1/sites/{site}/search", json={"query": query, "limit": LIMIT, "mode": mode})
        elapsed = time.perf_counter() - started
        # wrangler dev reloads the Worker when a file under worker/ changes; a request it cut is asked again.
        if reply.status_code == 503 and "restarted mid-request" in reply.text and attempt < 2:
            print(f"(the Worker restarted during {query!r}; asked again)")
            continue
        if reply.status_code == 404:  # a site whose crawl learned nothing has nothing to search
            return {"passages": [], "degraded": [f"unknown site: {reply.text}"]}, elapsed, {}
        reply.raise_for_status()
        return reply.json(), elapsed, server_timing(reply.headers.get("server-timing", ""))
    raise AssertionError("unreachable")


DETAILS_TS = ROOT / "worker" / "src" / "chat" / "details.ts"


def _constant(path: Path, name: str) -> str:
    match = re.search(rf'export const {name} = "([^"]+)"', path.read_text(encoding="utf-8"))
    if match is None:
        raise SystemExit(f"{path}: no {name} constant; the chat's answers cannot be classified")
    return match.group(1)


@dataclass(frozen=True)
class AnswerKinds:
    """The labels the extractive answer starts with (worker/src/chat/extractive.ts, details.ts)."""

    pages: str  # EXTRACTIVE_LABEL: confident, the site's own words
    details: str  # DETAILS_LABEL: confident, the business details
    closest: str  # CLOSEST_LABEL: not sure, the closest passage shown

    @classmethod
    def read(cls) -> AnswerKinds:
        return cls(_constant(EXTRACTIVE_TS, "EXTRACTIVE_LABEL"), _constant(DETAILS_TS, "DETAILS_LABEL"),
                   _constant(EXTRACTIVE_TS, "CLOSEST_LABEL"))


def chat_answer_kind(client: httpx.Client, worker_url: str, site: str, question: str, kinds: AnswerKinds) -> str:
    """Ask the chat route; what its answer is: "confident" (quoted from the pages or the business
    details), "closest" (not sure, the closest passage shown and cited) or "unsure" (the plain "not
    sure" and the callback: no passage shown)."""
    body = {"messages": [{"role": "user", "content": question}]}
    with client.stream("POST", f"{worker_url}/v1/sites/{site}/chat", json=body) as reply:
        if reply.status_code == 404:  # nothing learned: the widget would have nothing to say
            return "unsure"
        reply.raise_for_status()
        text, event = "", ""
        for line in reply.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
                if event == "delta":
                    text += data["text"]
                elif event == "error":
                    raise SystemExit(f"the chat of {site} broke off on {question!r}: {data['message']}")
    if text.startswith((kinds.pages, kinds.details)):
        return "confident"
    return "closest" if text.startswith(kinds.closest) else "unsure"


def raw_vector_matches(dev: DevServer, model: str, site: str, site_url: str, query: str) -> list[tuple[str, float]]:
    """(page path, cosine) of Vectorize's own top 20 for `query` (the local cloud, no Worker, no relevance cut)."""
    assert dev.cloud is not None
    form = input_form(model, query=True)
    vector = dev.cloud.ai.run(model, {form.field: form.texts([query])})["data"][0]
    matches = dev.cloud.vector_index(dev.options.index).query(vector, LIMIT, site)["matches"]
    ids = [m["id"] for m in matches]
    if not ids:
        return []
    marks = ", ".join("?" for _ in ids)
    rows = dev.cloud.database(dev.database_id).query(
        [(f"SELECT id, url FROM chunks WHERE site = ? AND id IN ({marks})", [site, *ids])]
    )[0]["results"]
    urls = {row["id"]: row["url"] for row in rows}
    return [(page_path(urls[m["id"]], site_url), float(m["score"])) for m in matches if m["id"] in urls]


@dataclass
class Score:
    """Counts for one retriever over a set of questions."""

    asked: int = 0
    hit1: int = 0
    hit4: int = 0  # the right page in the top 4, in either band: shown its page
    rr: float = 0.0
    found: int = 0  # answerable questions that got a passage
    confident: int = 0  # answerable questions with a passage in the confident band
    unanswerable: int = 0
    declined: int = 0  # unanswerable questions that got no passage
    u_confident: int = 0  # unanswerable questions with a passage in the confident band (a false claim)
    chat_asked: int = 0
    chat_unsure: int = 0  # answerable questions answered with the plain "not sure", no passage shown (a miss)
    chat_closest: int = 0  # answerable questions answered in the closest band
    chat_unanswerable: int = 0
    chat_u_confident: int = 0  # unanswerable questions the chat answered confidently (wrong)

    def add(self, rank: int | None, passages: list[dict[str, Any]]) -> None:
        self.asked += 1
        self.hit1 += rank == 1
        self.hit4 += rank is not None and rank <= 4
        self.rr += 1 / rank if rank else 0.0
        self.found += bool(passages)
        self.confident += any(p.get("band") == "confident" for p in passages)

    def add_unanswerable(self, passages: list[dict[str, Any]]) -> None:
        self.unanswerable += 1
        self.declined += not passages
        self.u_confident += any(p.get("band") == "confident" for p in passages)

    def add_chat(self, answerable: bool, kind: str) -> None:
        if answerable:
            self.chat_asked += 1
            self.chat_unsure += kind == "unsure"
            self.chat_closest += kind == "closest"
        else:
            self.chat_unanswerable += 1
            self.chat_u_confident += kind == "confident"

    def merge(self, other: Score) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def row(self, label: str, width: int = 10) -> str:
        n = max(self.asked, 1)
        declined = f"{self.declined}/{self.unanswerable}" if self.unanswerable else "-"
        u_conf = _share(self.u_confident, self.unanswerable)
        chat = (f"{_share(self.chat_unsure, self.chat_asked):>14}{_share(self.chat_closest, self.chat_asked):>14}"
                f"{_share(self.chat_u_confident, self.chat_unanswerable):>14}"
                if self.chat_asked or self.chat_unanswerable else f"{'-':>14}{'-':>14}{'-':>14}")
        return (f"{label:<{width}}{self.hit1 / n:>8.3f}{self.hit4 / n:>8.3f}{self.rr / n:>8.3f}"
                f"{f'{self.found}/{self.asked}':>11}{_share(self.confident, self.asked):>14}{declined:>11}{u_conf:>13}{chat}")


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} {part / whole:.2f}" if whole else "-"


def header(label: str = "retriever", width: int = 10) -> str:
    return (f"{label:<{width}}{'hit@1':>8}{'hit@4':>8}{'MRR':>8}{'A found':>11}{'A confident':>14}{'U none':>11}"
            f"{'U confident':>13}{'chat A unsure':>14}{'chat A close':>14}{'chat U conf':>14}")


LEGEND = ("hit@4: the right page among the first 4 passages, in either band (bands.ts); A found: answerable questions\n"
          "that got a passage; A confident: ... one in the confident band; U none / U confident: unanswerable ones that\n"
          "got no passage / one in the confident band; chat A unsure: the chat's plain \"not sure\" (no passage shown) on\n"
          "answerable questions; chat A close: answered in the closest band; chat U conf: unanswerable questions the chat\n"
          "answered confidently (from the pages or the business details)")


def first_rank(paths: list[str], wanted: set[str]) -> int | None:
    return next((i + 1 for i, path in enumerate(paths) if path in wanted), None)


@dataclass
class Measured:
    """One model's figures over all sets, by retriever (hybrid, keywords, vectors, raw)."""

    overall: dict[str, Score] = field(default_factory=lambda: {mode: Score() for mode in ROWS})
    right: list[float] = field(default_factory=list)  # per answerable question: best cosine of a right page
    wrong: list[float] = field(default_factory=list)  # per unanswerable question: best cosine of any page
    degraded: set[str] = field(default_factory=set)


def measure_set(client: httpx.Client, dev: DevServer, model: str, qset: QuestionSet, site_url: str,
                kinds: AnswerKinds | None, into: Measured) -> dict[str, Score]:
    """Every question of one set in each mode (and through the chat unless `kinds` is None), then
    the answerable ones once more in hybrid mode with the site's minScore at 0: the "uncut" row, the
    Worker's ranking without its relevance cut."""
    worker_url = dev.worker_url
    scores = {mode: Score() for mode in ROWS}
    misses: list[str] = []
    for item in qset.questions:
        wanted = {normal_path(a) for a in item["answers"]}
        for mode in MODES:
            answer, _ = search(client, worker_url, qset.site, item["q"], mode)
            into.degraded.update(reason.split(":", 1)[0] for reason in answer["degraded"])
            paths = [page_path(p["url"], site_url) for p in answer["passages"]]
            rank = first_rank(paths, wanted)
            scores[mode].add(rank, answer["passages"])
            if mode == "hybrid" and not (rank or 99) <= 4:
                misses.append(f"  {item['q']!r} wants {sorted(wanted)}; hybrid top 4: {paths[:4]}")
        matches = raw_vector_matches(dev, model, qset.site, site_url, item["q"])
        scores["raw"].add(first_rank([path for path, _ in matches], wanted), [{"band": None}] * len(matches))
        into.right.append(max((cosine for path, cosine in matches if path in wanted), default=0.0))
        if kinds is not None:
            scores["hybrid"].add_chat(True, chat_answer_kind(client, worker_url, qset.site, item["q"], kinds))
    for question in qset.unanswerable:
        for mode in MODES:
            answer, _ = search(client, worker_url, qset.site, question, mode)
            scores[mode].add_unanswerable(answer["passages"])
        into.wrong.append(max((cosine for _, cosine in raw_vector_matches(dev, model, qset.site, site_url, question)),
                              default=0.0))
        if kinds is not None:
            scores["hybrid"].add_chat(False, chat_answer_kind(client, worker_url, qset.site, question, kinds))
    store_settings(qset.site, dev.options.data_dir, min_score=0.0)
    try:
        for item in qset.questions:
            answer, _ = search(client, worker_url, qset.site, item["q"], "hybrid")
            paths = [page_path(p["url"], site_url) for p in answer["passages"]]
            scores["uncut"].add(first_rank(paths, {normal_path(a) for a in item["answers"]}), answer["passages"])
    finally:
        store_settings(qset.site, dev.options.data_dir)
    print(f"\n{qset.site}: {len(qset.questions)} questions, {len(qset.unanswerable)} unanswerable")
    print(header())
    for mode in ROWS:
        print(scores[mode].row(_label(mode)))
        into.overall[mode].merge(scores[mode])
    unlearned = unlearned_answers(dev, qset, site_url)
    if unlearned:
        print("answer paths never learned (a crawl miss, or a wrong path in the set):")
        print("\n".join(unlearned))
    if misses:
        print("hybrid misses (answer not in the top 4):")
        print("\n".join(misses))
    return scores


def _label(mode: str) -> str:
    return "vectors*" if mode == "raw" else mode


def print_overall(model: str, measured: Measured, chat: bool) -> None:
    total = measured.overall["hybrid"].asked
    print(f"\n{model}, all sites: {total} questions, {LIMIT} passages asked for "
          f"(degraded stages seen: {', '.join(sorted(measured.degraded)) or 'none'})")
    print(header())
    for mode in ROWS:
        print(measured.overall[mode].row(_label(mode)))
    print("uncut: the Worker's hybrid pipeline with minScore 0, its ranking without the relevance cut")
    print("* Vectorize's own order, without the fused-order cosine cut (the local cloud, not the Worker)")
    if chat:
        print("The chat (POST .../chat, extractive locally) runs the hybrid pipeline: its figures are on that row.")
    print(LEGEND)
    if measured.right and measured.wrong:
        print("Cosine of Vectorize's matches (what the fused-order cut sees), percentiles 10/50/90 and max:")
        print(f"  answerable, best right page:  {cosine_spread(measured.right)}")
        print(f"  unanswerable, best any page:  {cosine_spread(measured.wrong)}")


def cosine_spread(values: list[float]) -> str:
    p10, p50, p90 = np.percentile(np.asarray(values), [10, 50, 90])
    return f"{p10:.3f} / {p50:.3f} / {p90:.3f}, max {max(values):.3f}"


def filler_chunks(site: str, start: int, count: int, rng: random.Random) -> list[tuple[str, list[Any]]]:
    """INSERT statements for filler chunks numbered start..start+count-1 on their own pages."""
    now = "2026-01-01T00:00:00Z"
    words = _VOCABULARY.split()
    statements = []
    for n in range(start, start + count):
        title = f"{' '.join(rng.choice(words) for _ in range(3)).capitalize()} | Filler {n}"
        heading = " ".join(rng.choice(words) for _ in range(4)).capitalize()
        text = ". ".join(" ".join(rng.choice(words) for _ in range(12)).capitalize() for _ in range(7)) + "."
        statements.append((
            ("INSERT INTO chunks (id, site, url, ordinal, heading_path, headings, anchor, title, category, text, "
             "prefix, is_faq, oversized, tokens, seq, content_hash, updated_at) "
             "VALUES (?, ?, ?, 0, ?, ?, '', ?, 'other', ?, '', 0, 0, ?, 0, '', ?)"),
            [filler_id(n), site, f"https://filler.example/page-{n}", json.dumps([title, heading]),
             f"{title} › {heading}", title, text, (len(text) + 3) // 4, now],
        ))
    return statements


def filler_id(n: int) -> str:
    return hashlib.sha1(f"filler-{n}".encode()).hexdigest()


async def add_filler(dev: DevServer, site: str, start: int, count: int, dimensions: int, rng: random.Random) -> None:
    """Write filler chunks (D1) and random unit vectors (Vectorize, the site's namespace) via the REST APIs."""
    client = CloudflareClient(HttpTransport(dev.token, dev.cloud_url, timeout=300.0), LOCAL_ACCOUNT_ID)
    np_rng = np.random.default_rng(rng.randrange(2**32))
    mutation = None
    try:
        for first in range(start, start + count, 500):
            size = min(500, start + count - first)
            await client.d1_batch(dev.database_id, filler_chunks(site, first, size, rng))
            values = np_rng.standard_normal((size, dimensions)).astype(np.float32)
            values /= np.linalg.norm(values, axis=1, keepdims=True)
            mutation = await client.vectorize_upsert(dev.options.index, [
                {"id": filler_id(first + i), "values": values[i].tolist(), "namespace": site,
                 "metadata": {"category": "other", "page": f"https://filler.example/page-{first + i}"}}
                for i in range(size)
            ])
        # Vectorize applies writes asynchronously (the local cloud too): measure once they are visible.
        give_up = time.monotonic() + 120
        while mutation and time.monotonic() < give_up:
            if (await client.vectorize_index_info(dev.options.index)).get("processedUpToMutation") == mutation:
                break
            await asyncio.sleep(0.1)
    finally:
        await client.aclose()


def chunk_count(dev: DevServer, site: str) -> int:
    assert dev.cloud is not None
    rows = dev.cloud.database(dev.database_id).query([("SELECT COUNT(*) AS n FROM chunks WHERE site = ?", [site])])
    return int(rows[0]["results"][0]["n"])


_ASKED: collections.Counter[str] = collections.Counter()  # each question's latency searches so far


def fresh_form(query: str) -> str:
    """`query` in a form this run has not searched: one more question mark after it each time."""
    _ASKED[query] += 1
    return f"{query} {'?' * _ASKED[query]}"


def latency(client: httpx.Client, worker_url: str, site: str, questions: list[str],
            rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per mode, the client round trips (ms); and the hybrid searches' Server-Timing stages (ms by name)."""
    # The local cloud keeps the vectors of queries it embedded (local/ai.py E5Embedder), so a query
    # asked again would skip the model: each search here asks its question in a form not asked
    # before in this run, so every one is embedded anew, as a visitor's. The form adds question
    # marks, which keyword search drops (worker/src/fts.ts): the keyword hits stay the same.
    for query in questions[:5]:  # warm caches (the vector matrix reloads after a write)
        for mode in MODES:
            search(client, worker_url, site, fresh_form(query), mode)
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    stages: dict[str, list[float]] = {}
    for round_ in range(rounds):
        order = MODES if round_ % 2 == 0 else tuple(reversed(MODES))
        for query in questions:
            for mode in order:
                _, elapsed, timing = timed_search(client, worker_url, site, fresh_form(query), mode)
                times[mode].append(elapsed * 1000)
                if mode == "hybrid":
                    for name, ms in timing.items():
                        stages.setdefault(name, []).append(ms)
    return times, stages


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def latency_table(client: httpx.Client, dev: DevServer, model: str, qset: QuestionSet, sizes: list[int],
                  rounds: int, rng: random.Random) -> None:
    """Search latency at the crawled size, then with filler chunks up to each of `sizes`."""
    texts = [item["q"] for item in qset.questions]
    rows = [(chunk_count(dev, qset.site), latency(client, dev.worker_url, qset.site, texts, rounds))]
    for size in sizes:
        have = chunk_count(dev, qset.site)
        if size > have:
            started = time.perf_counter()
            asyncio.run(add_filler(dev, qset.site, have, size - have, EMBEDDING_MODELS[model].dimensions, rng))
            print(f"(added {size - have} filler chunks in {time.perf_counter() - started:.1f} s)")
        rows.append((chunk_count(dev, qset.site), latency(client, dev.worker_url, qset.site, texts, rounds)))
    print(f"\n{model}: search latency, ms, client round trip through the Worker ({rounds} rounds x {len(texts)} "
          f"questions per mode); filler chunks in site {qset.site} itself (same D1 table, same Vectorize namespace)")
    cells = "".join(f"{mode + ' p50/p95':>22}" for mode in MODES)
    print(f"{'chunks':>8}{cells}")
    for count, (times, _) in rows:
        cells = "".join(f"{percentile(times[m], 50):>13.1f} /{percentile(times[m], 95):>7.1f}" for m in MODES)
        print(f"{count:>8}{cells}")
    base = statistics.median(rows[0][1][0]["hybrid"])
    for count, (times, _) in rows[1:]:
        print(f"hybrid p50 at {count} chunks / at {rows[0][0]} chunks: {statistics.median(times['hybrid']) / base:.2f}")
    # Inside the Worker: its Server-Timing (worker/src/timing.ts), each binding's wait and the total.
    names = [name for name in ("site", "keywords", "embed", "vectorize", "rows", "rerank", "continuation", "total")
             if any(name in stages for _, (_, stages) in rows)]
    print("\nhybrid search inside the Worker (its Server-Timing), ms, p50 and p95 of each stage; keywords and the "
          "vector stages run at once")
    print(f"{'chunks':>8}{'':>4}" + "".join(f"{name:>13}" for name in names))
    for count, (_, stages) in rows:
        for q in (50, 95):
            cells = "".join(f"{percentile(stages[name], q):>13.1f}" if name in stages else f"{'-':>13}" for name in names)
            print(f"{count if q == 50 else '':>8}{f'p{q}':>4}{cells}")


def measure_model(model: str, sites: list[tuple[QuestionSet, str]], data_dir: Path, args: argparse.Namespace,
                  sizes: list[int]) -> Measured:
    """Crawl every site with `model`, run the Worker on that knowledge base, and print its tables."""
    print(f"\n=== {model} ===")
    for qset, url in sites:
        print(f"{qset.site}: {crawl(url, qset.site, data_dir, model)}")
    measured = Measured()
    kinds = None if args.no_chat else AnswerKinds.read()
    port = next(p for p in range(18787, 18887) if port_is_free(p))
    with DevServer(DevOptions(data_dir=data_dir, port=port), output=lambda line: None) as dev:
        dev.wait_ready()
        counts = ", ".join(f"{q.site} {chunk_count(dev, q.site)}" for q, _ in sites)
        print(f"Worker {dev.worker_url} on the local cloud {dev.cloud_url}; chunks crawled: {counts}")
        with httpx.Client(timeout=120.0, trust_env=False) as client:
            for qset, url in sites:
                measure_set(client, dev, model, qset, url, kinds, measured)
            print_overall(model, measured, kinds is not None)
            if sizes:
                latency_table(client, dev, model, sites[0][0], sizes, args.rounds, random.Random(7))
    return measured


def summary(results: list[tuple[str, Measured]]) -> None:
    width = max(len(f"{model} {_label(mode)}") for model, _ in results for mode in MODES) + 2
    print(f"\nSummary over all questions ({', '.join(model for model, _ in results)}):")
    print(header("model, retriever", width))
    for model, measured in results:
        for mode in ROWS:
            print(measured.overall[mode].row(f"{model} {_label(mode)}", width))
    print(LEGEND)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--models", default="", help="embedding models to crawl and measure with, comma-separated "
                        "(default: the local cloud's default, " + contract_models()["defaultEmbedding"]["local"] + ")")
    parser.add_argument("--sites", default="", help="question sets to ask, by site (default: all in bench/questions)")
    parser.add_argument("--no-chat", action="store_true", help="skip asking the chat (its answers' kinds)")
    parser.add_argument("--rounds", type=int, default=2, help="latency rounds over the questions (default 2)")
    parser.add_argument("--sizes", default="1000,10000",
                        help='knowledge base sizes in chunks for latency (default 1000,10000; "" skips latency)')
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    models = check_models([m for m in args.models.split(",") if m] or [contract_models()["defaultEmbedding"]["local"]])
    sets = load_question_sets([s for s in args.sites.split(",") if s] or None)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    results = []
    with tempfile.TemporaryDirectory(prefix="helppuff-bench-") as tmp, ExitStack() as servers:
        sites = [(qset, servers.enter_context(server).url) for qset, server in sets]
        for n, model in enumerate(models):
            results.append((model, measure_model(model, sites, Path(tmp) / f"kb-{n}", args, sizes)))
    summary(results)


if __name__ == "__main__":
    main()
