"""The self-check after every crawl: the site's own FAQ questions asked of the knowledge base just built.

Questions, and the answer each must find:

* every FAQ chunk of a learned page (chunks.is_faq: an accordion's "**Q?**\\nA.", a question heading on
  an FAQ page, a FAQPage JSON-LD pair the page did not show, which extraction appends as bold Q&A):
  its question line; its own answer is that chunk (or another part of the same answer, when a long
  answer was cut into several chunks that each repeat the question);
* each FAQPage JSON-LD pair the crawl read (kb/crawl_facts.CrawlFacts.faq) whose question is in no FAQ chunk
  (the page shows it some other way): its own answer is a passage of its page;
* each question the last check asked that is no longer one of these, for CARRY_CHECKS checks after it
  went, so that the owner learns the assistant lost the answer: when its page is no longer learned
  (gone, unticked, excluded, failed), a miss without a search ("its page is no longer learned"); when
  the page is still learned (its answer was changed or removed), it is asked, and its own answer is
  then any passage of its page.

At most MAX_QUESTIONS are asked, taken in turn from each page (page URLs sorted, then page order), so
that one long FAQ page does not use the whole budget.

"Asked of the knowledge base": after a crawl no Worker need be running, so the check runs the
knowledge base's own vector stage through the same REST APIs the crawl uses: the question is embedded
with the site's model in its query form (embed/models.input_form), and Vectorize is queried, topK 4, in
the site's namespace. It is not the Worker's hybrid search (no keyword stage, no fusion, no reranker):
the row's `path` says what measured it.

It costs only searches (one embedding call per batch of questions, one Vectorize query per question),
and none when nothing changed: a fingerprint of the site's chunks (ids and content hashes), live
vectors and model, and of the questions, equal to the last check's reuses its result (status "reused").

A failure (the model, Vectorize, D1) never fails the crawl: one log line, and the run's row says
"not_run" with why.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.embed.models import WorkersAIEmbedder
from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.kb.pages import LEARNED
from helppuff_crawl.kb.writer import KnowledgeWriter

logger = logging.getLogger(__name__)

MAX_QUESTIONS = 40  # asked per run
CARRY_CHECKS = 3  # a question gone from the site is asked in this many checks after it went, then dropped
TOP_K = 4  # the passages a visitor's answer is built from
# The page of each chunk id; "+site" keeps SQLite's planner on the primary key (kb/writer.py LIVE_VECTORS_SQL).
CHUNK_PAGES_SQL = "SELECT id, url FROM chunks WHERE +site = ? AND id IN ({marks})"

_BOLD_QUESTION = re.compile(r"^(?:\*\*(?P<a>[^*]+?[?？])\*\*|__(?P<b>[^_]+?[?？])__)\s*$")
_HEADING_QUESTION = re.compile(r"^#{1,6}\s+(?P<q>.+?[?？])\s*$")


@dataclass(frozen=True)
class Question:
    text: str
    url: str  # its answer page
    source: str  # "faq chunk" | "json-ld" | "earlier" (gone from its page) | "lost" (its page is not learned)
    chunks: frozenset[str] = frozenset()  # its own answer's chunk ids (none: any passage of its page)
    carried: int = 0  # checks it was asked in since it left the site's FAQ questions


@dataclass
class CheckResult:
    status: str  # done | reused | not_run
    reason: str = ""
    path: str = ""
    asked: int = 0
    found: int = 0
    available: int = 0
    misses: list[dict[str, str]] = field(default_factory=list)
    questions: list[dict[str, str]] = field(default_factory=list)
    fingerprint: str = ""
    reused_from: str = ""

    def summary(self) -> str:
        """For the crawl's stats: "17/19", "17/19 (reused)" or "not run: why"."""
        if self.status == "not_run":
            return f"not run: {self.reason}"
        return f"{self.found}/{self.asked}" + (" (reused)" if self.status == "reused" else "")


def question_line(text: str) -> str:
    """The question of an FAQ chunk's text: its bold question line, else its question heading ("" for none)."""
    heading = ""
    for line in text.splitlines():
        line = line.strip()
        if match := _BOLD_QUESTION.match(line):
            return (match["a"] or match["b"]).strip()
        if not heading and (match := _HEADING_QUESTION.match(line)):
            heading = match["q"].strip()
    return heading


def _key(question: str) -> str:
    return " ".join(re.findall(r"\w+", question.lower()))


def choose(questions: Sequence[Question], cap: int = MAX_QUESTIONS) -> list[Question]:
    """At most `cap`, in turn from each page (pages by URL, each page's questions in their order)."""
    by_page: dict[str, list[Question]] = {}
    for question in questions:
        by_page.setdefault(question.url, []).append(question)
    queues = [by_page[url] for url in sorted(by_page)]
    chosen: list[Question] = []
    depth = 0
    while len(chosen) < cap and any(depth < len(q) for q in queues):
        chosen.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return chosen[:cap]


async def site_questions(kb: KnowledgeBase, site: str, json_ld: Sequence[tuple[str, str, str]],
                         run_id: str = "") -> list[Question]:
    """The site's FAQ questions now (FAQ chunks, JSON-LD pairs in no chunk), and the last check's that left
    them (for CARRY_CHECKS checks). `json_ld`: (page URL, question, answer) as the crawl `run_id` read them;
    the last check's JSON-LD pairs of learned pages that crawl did not fetch (a targeted one) still stand."""
    rows = await kb.query(
        "SELECT c.id, c.url, c.text FROM chunks c JOIN pages p ON p.site = c.site AND p.url = c.url "
        f"WHERE c.site = ? AND c.is_faq = 1 AND p.status IN ({', '.join('?' * len(LEARNED))}) "
        "ORDER BY c.url, c.seq", [site, *LEARNED])
    found: dict[tuple[str, str], Question] = {}
    for row in rows:
        text = question_line(row["text"])
        if not text:
            continue
        key = (row["url"], _key(text))
        held = found.get(key)
        found[key] = Question(text, row["url"], "faq chunk",
                              (held.chunks if held else frozenset()) | {row["id"]})
    seen = {key for _, key in found}
    pages = await kb.query("SELECT url, status, run_id FROM pages WHERE site = ?", [site])
    status = {row["url"]: row["status"] for row in pages}
    unseen = {row["url"] for row in pages if run_id and row["run_id"] != run_id}  # not fetched by this crawl
    for url, text, _answer in json_ld:
        if _key(text) not in seen and status.get(url) in LEARNED:
            seen.add(_key(text))
            found[(url, _key(text))] = Question(text.strip(), url, "json-ld")
    questions = list(found.values())
    last = await kb.first("SELECT questions FROM self_checks WHERE site = ? AND status IN ('done', 'reused') "
                          "ORDER BY checked_at DESC, run_id DESC LIMIT 1", [site])
    for asked in json.loads(last["questions"]) if last else []:
        url, text, carried = asked["url"], asked["question"], int(asked.get("carried", 0))
        if _key(text) in seen or url not in status or carried >= CARRY_CHECKS:
            continue
        seen.add(_key(text))
        if asked["source"] == "json-ld" and url in unseen and status[url] in LEARNED:
            # A targeted crawl read no JSON-LD from the pages it did not fetch: their pairs still stand.
            questions.append(Question(text, url, "json-ld"))
        else:
            questions.append(Question(text, url, "earlier" if status[url] in LEARNED else "lost",
                                      carried=carried + 1))
    return questions


async def _fingerprint(kb: KnowledgeBase, site: str, model: str, questions: Sequence[Question]) -> str:
    rows = await kb.query(
        "SELECT c.id, c.content_hash, COALESCE(v.state, '') AS state, COALESCE(v.model, '') AS model "
        "FROM chunks c LEFT JOIN vectors v ON v.id = c.id WHERE c.site = ? ORDER BY c.id", [site])
    digest = hashlib.sha256(json.dumps([model, TOP_K, MAX_QUESTIONS], ensure_ascii=False).encode())
    for row in rows:
        digest.update(f"{row['id']}:{row['content_hash']}:{row['state']}:{row['model']}\n".encode())
    for question in questions:
        digest.update(f"{question.source}\x1f{question.url}\x1f{question.text}\n".encode())
    return digest.hexdigest()


async def run_check(kb: KnowledgeBase, writer: KnowledgeWriter, site: str,
                    json_ld: Sequence[tuple[str, str, str]] = (), run_id: str = "") -> CheckResult:
    """Ask the site's FAQ questions (or reuse the last result when nothing changed); raises on failure."""
    index = await kb.first("SELECT model, namespace FROM site_index WHERE site = ?", [site])
    if index is None:
        return CheckResult("not_run", "the site has no index yet")
    every = await site_questions(kb, site, json_ld, run_id)
    chosen = choose(every)
    fingerprint = await _fingerprint(kb, site, index["model"], chosen)
    last = await kb.first("SELECT * FROM self_checks WHERE site = ? AND status IN ('done', 'reused') "
                          "ORDER BY checked_at DESC, run_id DESC LIMIT 1", [site])
    if last is not None and last["fingerprint"] == fingerprint:
        return CheckResult("reused", "", last["path"], last["asked"], last["found"], last["available"],
                           json.loads(last["misses"]), json.loads(last["questions"]), fingerprint,
                           last["reused_from"] or last["run_id"])
    path = f"vectorize topK {TOP_K}, namespace {index['namespace']}, {index['model']} (query form)"
    result = CheckResult("done", path=path, asked=len(chosen), available=len(every), fingerprint=fingerprint,
                         questions=[{"question": q.text, "url": q.url, "source": q.source, "carried": q.carried}
                                    for q in chosen])
    searched = [q for q in chosen if q.source != "lost"]
    if searched:
        embedder = WorkersAIEmbedder(kb.client, index["model"], writer.dimensions)
        vectors = await embedder.embed_queries([q.text for q in searched])
        top: list[list[str]] = []
        for vector in vectors:
            matches = await kb.client.vectorize_query(writer.index, vector, top_k=TOP_K,
                                                      namespace=index["namespace"])
            top.append([m["id"] for m in matches])
        page_of = await _pages_of(kb, site, sorted({i for ids in top for i in ids}))
        for question, ids in zip(searched, top, strict=True):
            own = [i for i in ids if i in question.chunks] if question.chunks else \
                [i for i in ids if page_of.get(i) == question.url]
            if own:
                result.found += 1
            else:
                pages = sorted({page_of.get(i, "?") for i in ids})
                gone = "no longer an FAQ question of its page; " if question.source == "earlier" else ""
                result.misses.append({"question": question.text, "url": question.url,
                                      "why": f"{gone}top {TOP_K}: {', '.join(pages) or 'nothing'}"})
    for question in chosen:
        if question.source == "lost":
            result.misses.append({"question": question.text, "url": question.url,
                                  "why": "its page is no longer learned"})
    return result


async def _pages_of(kb: KnowledgeBase, site: str, ids: Sequence[str]) -> dict[str, str]:
    """The page URL of each chunk id (D1 binds at most 100 parameters a statement)."""
    found: dict[str, str] = {}
    for start in range(0, len(ids), 90):
        part = ids[start:start + 90]
        rows = await kb.query(CHUNK_PAGES_SQL.format(marks=", ".join("?" * len(part))), [site, *part])
        found.update({row["id"]: row["url"] for row in rows})
    return found


async def save_check(kb: KnowledgeBase, run_id: str, site: str, result: CheckResult) -> None:
    await kb.query(
        "INSERT INTO self_checks (run_id, site, status, reason, path, asked, found, available, misses, questions, "
        "fingerprint, reused_from, checked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, reason = excluded.reason, "
        "path = excluded.path, asked = excluded.asked, found = excluded.found, available = excluded.available, "
        "misses = excluded.misses, questions = excluded.questions, fingerprint = excluded.fingerprint, "
        "reused_from = excluded.reused_from, checked_at = excluded.checked_at",
        [run_id, site, result.status, result.reason[:300], result.path, result.asked, result.found,
         result.available, json.dumps(result.misses, ensure_ascii=False),
         json.dumps(result.questions, ensure_ascii=False), result.fingerprint, result.reused_from,
         iso(utc_now())])


async def self_check(kb: KnowledgeBase, writer: KnowledgeWriter, site: str, embedding_on: bool,
                     json_ld: Sequence[tuple[str, str, str]] = ()) -> CheckResult:
    """The check for the site's running crawl, recorded against that run; never raises for a failed check."""
    run = None
    if not embedding_on:
        result = CheckResult("not_run", "embedding is off")
    else:
        try:
            run = await kb.first("SELECT id FROM crawl_runs WHERE site = ? AND status = 'running' "
                                 "ORDER BY started_at DESC, id DESC LIMIT 1", [site])
            await writer.wait_for_writes()
            if writer.pending_ids:
                result = CheckResult("not_run", f"{len(writer.pending_ids)} vector writes not applied yet")
            else:
                result = await run_check(kb, writer, site, json_ld, run["id"] if run else "")
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            logger.warning("The self-check of %s was not run: %s", site, why)
            result = CheckResult("not_run", why)
    if run is not None:
        try:
            await save_check(kb, run["id"], site, result)
        except Exception as exc:
            logger.warning("The self-check of %s could not be recorded: %s", site,
                           f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
    if result.status != "not_run":
        logger.info("Self-check of %s: %s FAQ questions find their answer in the top %d",
                    site, result.summary(), TOP_K)
    return result


async def last_check(kb: KnowledgeBase, site: str) -> dict[str, Any] | None:
    """The site's latest self-check row, JSON fields decoded (None: never checked)."""
    row = await kb.first("SELECT * FROM self_checks WHERE site = ? ORDER BY checked_at DESC, run_id DESC LIMIT 1",
                         [site])
    if row is None:
        return None
    return {**row, "misses": json.loads(row["misses"]), "questions": json.loads(row["questions"])}


def status_line(check: dict[str, Any] | None) -> str:
    """ "self-check: 17/19 FAQ questions find their answer in the top 4; not: Q? (url: why)"."""
    if check is None:
        return "self-check: not run yet"
    if check["status"] == "not_run":
        return f"self-check: not run ({check['reason']})"
    line = f"self-check: {check['found']}/{check['asked']} FAQ questions find their answer in the top {TOP_K}"
    if check["available"] > check["asked"]:
        line += f" ({check['asked']} of {check['available']} asked)"
    if check["misses"]:
        groups: dict[tuple[str, str], list[str]] = {}  # the misses of one page for one reason, together
        for miss in check["misses"]:
            groups.setdefault((miss["url"], miss["why"]), []).append(miss["question"])
        line += "; not: " + "; ".join(f"{' '.join(questions)} ({url}: {why})"
                                      for (url, why), questions in groups.items())
    return line
