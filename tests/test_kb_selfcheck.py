"""The self-check after every crawl (kb/selfcheck.py): the site's own FAQ questions asked of the knowledge base
just built, end to end on tests/sites/northside-dental (FAQPage JSON-LD and a <details> accordion) served on
127.0.0.1, crawled into a real local knowledge base (MiniLM: the fastest local model).

The site is crawled once for the module; each test that crawls again does so into its own copy of that
knowledge base.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from helppuff_crawl.kb.selfcheck import Question, choose, question_line, status_line
from tests.conftest import (
    SITES,
    kb_rows,
    local_kb,
    make_crawler,
    project_settings,
    run_async,
    run_helppuff,
)
from tests.sitesserver import SiteServer

MODEL = "@local/all-minilm-l6-v2"


GAP_QUESTION = "What is a gap payment?"
GAP_JSON_LD = json.dumps({"@context": "https://schema.org", "@type": "FAQPage", "mainEntity": [{
    "@type": "Question", "name": GAP_QUESTION, "acceptedAnswer": {
        "@type": "Answer", "text": "The difference between our fee and your health fund's rebate."}}]})
GAP_JSON_LD = f'<script type="application/ld+json">{GAP_JSON_LD}</script>\n'


def _settings(kb_parent: Path, **overrides: Any) -> Any:
    return project_settings(kb_parent, HELPPUFF_EMBED_MODEL=MODEL, HELPPUFF_LOCAL_VECTORIZE_DELAY=0.0,
                            HELPPUFF_RENDER_JS="never", **overrides)


def _check(kb: Path, run_id: str) -> dict[str, Any]:
    (row,) = kb_rows(kb, "SELECT * FROM self_checks WHERE run_id = ?", run_id)
    return {**row, "misses": json.loads(row["misses"]), "questions": json.loads(row["questions"])}


def _copy_kb(crawled: Path, tmp_path: Path) -> Path:
    shutil.copytree(crawled / "kb", tmp_path / "kb")
    return tmp_path


@pytest.fixture(scope="module")
def site_copy(tmp_path_factory) -> Iterator[tuple[SiteServer, Path]]:  # type: ignore[no-untyped-def]
    """A copy of the site (a test may edit it for its own crawl), served on 127.0.0.1 for the module."""
    root = tmp_path_factory.mktemp("site") / "dental"
    shutil.copytree(SITES / "northside-dental", root)
    # FAQPage JSON-LD on a page that shows its question as an ordinary heading (no FAQ chunk holds it).
    fees = root / "fees.html"
    fees.write_text(fees.read_text(encoding="utf-8").replace("</head>", GAP_JSON_LD + "</head>", 1), encoding="utf-8")
    with SiteServer(root) as server:
        yield server, root


@pytest_twisted.async_fixture(scope="module")
async def crawled(site_copy, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The first crawl: (site URL, knowledge base parent folder, stats)."""
    server, _ = site_copy
    parent = tmp_path_factory.mktemp("selfcheck")
    crawler = make_crawler(_settings(parent))
    await crawler.crawl(url=server.url, site="dental")
    return server.url, parent, crawler.stats.get_stats()


@contextmanager
def _faq_without(root: Path, question: str) -> Iterator[None]:
    """The copy's FAQ page without `question` (its accordion item and its JSON-LD pair), for one crawl."""
    page = root / "faq.html"
    html = page.read_text(encoding="utf-8")
    q = re.escape(question)
    edited = re.sub(rf'<details class="faq-item">\s*<summary>{q}</summary>.*?</details>\s*', "", html, flags=re.S)
    edited = re.sub(rf'\{{\s*"@type": "Question",\s*"name": "{q}".*?\}}\s*\}},\s*', "", edited, flags=re.S)
    assert question not in edited  # the test can fail: the edit took
    page.write_text(edited, encoding="utf-8")
    try:
        yield
    finally:
        page.write_text(html, encoding="utf-8")


# --- pure parts -------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "question"), [
    ("## FAQ\n\n**Do you bulk bill?**\n\nYes, for children.", "Do you bulk bill?"),
    ("__Open on weekends?__\nSaturdays 8-12.", "Open on weekends?"),
    ("### How often should I come in?\n\nEvery six months.", "How often should I come in?"),
    ("## Can I pay later?\n\n**Do you take cards？**\n\nYes.", "Do you take cards？"),  # the bold line wins
    ("## Fees\n\nA check-up is $95. **Why?** Because.", ""),  # bold inside a paragraph is no question line
    ("Plain text with no question.", ""),
])
def test_the_question_of_an_faq_chunk_is_its_bold_line_or_its_question_heading(text: str, question: str) -> None:
    assert question_line(text) == question


def test_questions_are_chosen_in_turn_from_each_page_up_to_the_cap() -> None:
    many = [Question(f"q{n}?", "https://x.example/faq", "faq chunk") for n in range(5)]
    one = [Question("other?", "https://x.example/about", "json-ld")]
    chosen = choose(many + one, cap=3)
    assert [(q.url.rsplit("/", 1)[1], q.text) for q in chosen] == [("about", "other?"), ("faq", "q0?"),
                                                                   ("faq", "q1?")]
    assert len(choose(many + one)) == 6


def test_the_status_line_names_each_miss() -> None:
    check = {"status": "done", "found": 17, "asked": 19, "available": 25,
             "misses": [{"question": "Do you bulk bill?", "url": "https://x.example/faq", "why": "gone"}]}
    assert status_line(check) == ("self-check: 17/19 FAQ questions find their answer in the top 4 (19 of 25 asked); "
                                  "not: Do you bulk bill? (https://x.example/faq: gone)")
    lost = [{"question": q, "url": "https://x.example/faq", "why": "its page is no longer learned"}
            for q in ("Do you bulk bill?", "Is there parking?")]
    check = {**check, "misses": [*lost, {"question": "Open late?", "url": "https://x.example/", "why": "top 4: ..."}]}
    assert status_line(check).endswith("; not: Do you bulk bill? Is there parking? (https://x.example/faq: its page is "
                                       "no longer learned); Open late? (https://x.example/: top 4: ...)")
    assert status_line({"status": "not_run", "reason": "AIError: down"}) == "self-check: not run (AIError: down)"
    assert status_line(None) == "self-check: not run yet"


@pytest_twisted.inlineCallbacks
def test_a_question_that_left_the_site_is_carried_for_three_checks_then_dropped(tmp_path):  # type: ignore[no-untyped-def]
    from helppuff_crawl.kb.selfcheck import CARRY_CHECKS, site_questions

    async def scenario() -> list[list[tuple[str, str, int]]]:
        kb = local_kb(tmp_path)
        try:
            for url, status, run in (("https://x.example/faq", "ok", "now"), ("https://x.example/old", "gone", "now"),
                                     ("https://x.example/fees", "unchanged", "before")):
                await kb.query("INSERT INTO pages (site, url, status, run_id, updated_at) VALUES ('x', ?, ?, ?, 'now')",
                               [url, status, run])
            await kb.query("INSERT INTO chunks (id, site, url, ordinal, heading_path, text, is_faq, updated_at) "
                           "VALUES ('c1', 'x', 'https://x.example/faq', 0, '[]', '**Do you deliver?**\n\nYes.', 1, "
                           "'now')")
            asked = [{"question": "Open late?", "url": "https://x.example/faq", "source": "faq chunk", "carried": 0},
                     {"question": "Any parking?", "url": "https://x.example/old", "source": "faq chunk", "carried": 0},
                     # JSON-LD of a page this (targeted) crawl did not fetch: it still stands.
                     {"question": "Gap fee?", "url": "https://x.example/fees", "source": "json-ld", "carried": 0}]
            seen = []
            for n in range(CARRY_CHECKS + 1):
                await kb.query("INSERT INTO self_checks (run_id, site, status, questions, checked_at) "
                               "VALUES (?, 'x', 'done', ?, ?)", [f"r{n}", json.dumps(asked), f"2026-12-01T0{n}"])
                # The JSON-LD pair a chunk holds is asked once, as the chunk's.
                questions = await site_questions(kb, "x", [("https://x.example/faq", "Do you deliver?", "Yes.")], "now")
                seen.append([(q.text, q.source, q.carried) for q in questions])
                asked = [{"question": q.text, "url": q.url, "source": q.source, "carried": q.carried}
                         for q in questions]
            return seen
        finally:
            await kb.close()

    seen = yield run_async(scenario())
    assert seen[0] == [("Do you deliver?", "faq chunk", 0), ("Open late?", "earlier", 1), ("Any parking?", "lost", 1),
                       ("Gap fee?", "json-ld", 0)]
    assert seen[CARRY_CHECKS - 1][1:] == [("Open late?", "earlier", CARRY_CHECKS), ("Any parking?", "lost", CARRY_CHECKS),
                                          ("Gap fee?", "json-ld", 0)]
    assert seen[CARRY_CHECKS] == [("Do you deliver?", "faq chunk", 0), ("Gap fee?", "json-ld", 0)]


# --- end to end ----------------------------------------------------------------------------------


def test_the_sites_faq_questions_find_their_own_answers_after_the_crawl(crawled) -> None:  # type: ignore[no-untyped-def]
    url, parent, stats = crawled
    check = _check(parent / "kb", stats["helppuff/run_id"])
    assert check["status"] == "done", check
    assert check["path"] == f"vectorize topK 4, namespace dental, {MODEL} (query form)"
    asked = {q["question"]: q for q in check["questions"]}
    # The accordion's questions (and the JSON-LD's, which the page shows) are asked, each of the FAQ page.
    html = (Path(__file__).parent / "sites" / "northside-dental" / "faq.html").read_text(encoding="utf-8")
    for question in ("Are you accepting new patients?", "Do you bulk bill?", "Will a filling hurt?"):
        assert question in html
        assert asked[question]["url"] == url + "/faq"
    assert {q["source"] for q in check["questions"] if q["url"] == url + "/faq"} == {"faq chunk"}
    # The JSON-LD pair no FAQ chunk holds is asked too; its own answer is a passage of its page.
    assert asked[GAP_QUESTION] == {"question": GAP_QUESTION, "url": url + "/fees", "source": "json-ld", "carried": 0}
    assert check["asked"] == len(asked) == check["available"] >= 9
    assert check["found"] == check["asked"], check["misses"]
    assert stats["helppuff/store/self_check"] == f"{check['found']}/{check['asked']}"
    (run,) = kb_rows(parent / "kb", "SELECT status FROM crawl_runs WHERE id = ?", stats["helppuff/run_id"])
    assert run["status"] == "done"


@pytest_twisted.inlineCallbacks
def test_an_unchanged_recrawl_reuses_the_last_check_with_no_embedding_call(crawled, tmp_path):  # type: ignore[no-untyped-def]
    url, parent, first = crawled
    tmp_path = _copy_kb(parent, tmp_path)
    crawler = make_crawler(_settings(tmp_path))
    yield crawler.crawl(url=url, site="dental")
    stats = crawler.stats.get_stats()
    check = _check(tmp_path / "kb", stats["helppuff/run_id"])
    before = _check(tmp_path / "kb", first["helppuff/run_id"])
    assert check["status"] == "reused" and check["reused_from"] == first["helppuff/run_id"]
    assert (check["found"], check["asked"], check["misses"]) == (before["found"], before["asked"], before["misses"])
    # Every page unchanged: the local AI was not called at all (no page, no question embedded).
    assert stats.get("helppuff/store/status/unchanged", 0) > 0 and not stats.get("helppuff/store/status/ok")
    assert stats.get("helppuff/cloudflare/calls/ai", 0) == 0
    assert stats.get("helppuff/cloudflare/calls/vectorize", 0) >= 1  # the counters are live: the crawl checked its index


@pytest_twisted.inlineCallbacks
def test_questions_whose_answer_page_is_excluded_show_as_misses(crawled, tmp_path):  # type: ignore[no-untyped-def]
    url, parent, first = crawled
    tmp_path = _copy_kb(parent, tmp_path)
    crawler = make_crawler(_settings(tmp_path, HELPPUFF_EXCLUDE=["**/privacy**", "**/faq"]))
    yield crawler.crawl(url=url, site="dental")
    stats = crawler.stats.get_stats()
    check = _check(tmp_path / "kb", stats["helppuff/run_id"])
    before = _check(tmp_path / "kb", first["helppuff/run_id"])
    assert check["status"] == "done"
    missed = {m["question"]: m for m in check["misses"]}
    on_faq = [q["question"] for q in before["questions"] if q["url"] == url + "/faq"]
    assert on_faq and set(on_faq) <= set(missed)
    assert missed[on_faq[0]]["why"] == "its page is no longer learned"
    assert check["found"] == check["asked"] - len(check["misses"]) < check["asked"]
    # helppuff knowledge status shows it, in words and in --json.
    shown = run_helppuff(tmp_path, "knowledge", "status", "--site", "dental")
    line = f"self-check: {check['found']}/{check['asked']} FAQ questions find their answer in the top 4; not: "
    assert line in shown.stdout, shown.stdout + shown.stderr
    assert f"not: {' '.join(on_faq)} ({url}/faq: its page is no longer learned)" in shown.stdout
    as_json = run_helppuff(tmp_path, "knowledge", "status", "--site", "dental", "--json")
    (entry,) = json.loads(as_json.stdout)["sites"]
    assert entry["self_check"]["run_id"] == stats["helppuff/run_id"]
    assert entry["self_check"]["misses"] == check["misses"]


@pytest_twisted.inlineCallbacks
def test_a_question_whose_answer_left_its_page_shows_as_a_miss(crawled, site_copy, tmp_path):  # type: ignore[no-untyped-def]
    url, parent, first = crawled
    _, root = site_copy
    tmp_path = _copy_kb(parent, tmp_path)
    gone = "Is there parking?"
    with _faq_without(root, gone):
        crawler = make_crawler(_settings(tmp_path))
        yield crawler.crawl(url=url, site="dental")
    stats = crawler.stats.get_stats()
    check = _check(tmp_path / "kb", stats["helppuff/run_id"])
    assert check["status"] == "done"
    asked = {q["question"]: q for q in check["questions"]}
    assert asked[gone] == {"question": gone, "url": url + "/faq", "source": "earlier", "carried": 1}
    (miss,) = check["misses"]
    assert miss["question"] == gone and miss["url"] == url + "/faq"
    assert miss["why"].startswith("no longer an FAQ question of its page; top 4: ")
    assert url + "/faq" not in miss["why"].split("top 4: ", 1)[1].split(", ")
    assert (check["found"], check["asked"]) == (check["asked"] - 1, _check(tmp_path / "kb", first["helppuff/run_id"])["asked"])


@pytest_twisted.inlineCallbacks
def test_a_failing_embedding_model_records_the_check_not_run_and_the_crawl_succeeds(  # type: ignore[no-untyped-def]
        crawled, tmp_path, monkeypatch):
    from helppuff_crawl.local.ai import AIError, LocalAI

    url, parent, _ = crawled
    tmp_path = _copy_kb(parent, tmp_path)
    # No earlier check to reuse: this crawl's check must embed its questions.
    import sqlite3
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as conn:
        conn.execute("DELETE FROM self_checks")
    calls: list[Any] = []
    real_run = LocalAI.run

    def failing_for_questions(self: Any, model: str, payload: Any) -> Any:
        """A fake at the edge: the local model fails for search queries (texts without a passage's prefix)."""
        calls.append(payload)
        texts = payload.get("text") if isinstance(payload, dict) else None
        if isinstance(texts, list) and not any("\n---\n" in t for t in texts):
            # A 4xx, which the client does not retry (a 5xx would be retried, with backoff, 8 times first).
            raise AIError(400, 3010, "fake: Invalid or incomplete input for the model")
        return real_run(self, model, payload)

    monkeypatch.setattr(LocalAI, "run", failing_for_questions)
    crawler = make_crawler(_settings(tmp_path))
    yield crawler.crawl(url=url, site="dental")
    stats = crawler.stats.get_stats()
    assert calls, "the check never reached the local model"
    check = _check(tmp_path / "kb", stats["helppuff/run_id"])
    assert check["status"] == "not_run"
    assert "3010" in check["reason"] and "fake: Invalid or incomplete input" in check["reason"]
    assert stats["helppuff/store/self_check"].startswith("not run: ")
    assert "helppuff/store/finish_error" not in stats
    (run,) = kb_rows(tmp_path / "kb", "SELECT status FROM crawl_runs WHERE id = ?", stats["helppuff/run_id"])
    assert run["status"] == "done"
