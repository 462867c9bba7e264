"""The owner's own answers and the knowledge gaps, through `helppuff knowledge ...` as an operator
runs it, on the local knowledge base (real SQLite, the bundled embedding model)."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from helppuff_crawl.kb.gaps import gap_key
from tests.conftest import kb_rows, run_helppuff

ROOT = Path(__file__).resolve().parent.parent
HELPPUFF = str(Path(sys.executable).parent / "helppuff")




def _ok(tmp_path: Path, *args: str) -> str:
    result = run_helppuff(tmp_path, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _passages(tmp_path: Path, url_prefix: str) -> list[dict[str, object]]:
    return kb_rows(tmp_path / "kb", "SELECT c.url, c.title, c.is_faq, c.text, v.state FROM chunks c "
                                    "LEFT JOIN vectors v ON v.id = c.id WHERE c.url LIKE ? ORDER BY c.url",
                   f"{url_prefix}%")


def test_an_own_answer_is_a_searchable_passage_that_a_crawl_keeps(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    added = _ok(tmp_path, "knowledge", "add", "--site", "acme", "--title", "Is there parking?",
                "--text", "Yes: two free spaces behind the workshop, off Lane Street.")
    answer_id = added.split("own answer ")[1].split()[0]
    assert [(p["url"], p["title"], p["is_faq"], p["state"]) for p in _passages(tmp_path, "helppuff://answers/")] == [
        (f"helppuff://answers/{answer_id}", "Is there parking?", 1, "live")]
    listed = json.loads(_ok(tmp_path, "knowledge", "answers", "--site", "acme", "--json"))
    assert [(a["id"], a["title"]) for a in listed] == [(answer_id, "Is there parking?")]
    # A crawl of the site leaves the own answer where it is, and the knowledge base consistent.
    server = serve_site("acme-plumbing")
    _ok(tmp_path, "crawl", server.url, "--site", "acme", "--render-js", "never")
    assert len(_passages(tmp_path, "helppuff://answers/")) == 1
    status = json.loads(_ok(tmp_path, "knowledge", "status", "--site", "acme", "--json"))["sites"][0]
    assert status["consistency"]["consistent"] and status["chunks"] == status["vectors"]
    _ok(tmp_path, "knowledge", "remove", answer_id, "--site", "acme")
    assert _passages(tmp_path, "helppuff://answers/") == []
    assert json.loads(_ok(tmp_path, "knowledge", "answers", "--site", "acme", "--json")) == []


GAPS = [  # as the Worker records them
    ("g1", "acme", "Do you fix pool pumps?", 1, "2026-11-01T09:00:00Z", "2026-11-01T09:00:00Z"),
    ("g2", "acme", "Can I pay with Afterpay?", 3, "2026-11-02T09:00:00Z", "2026-11-29T09:00:00Z"),
    ("g3", "acme", "Do you service Geelong?", 2, "2026-11-03T09:00:00Z", "2026-11-28T09:00:00Z"),
    ("g4", "other", "Not acme's question", 9, "2026-11-03T09:00:00Z", "2026-11-28T09:00:00Z"),
]


def test_gaps_are_answered_or_dismissed(tmp_path: Path) -> None:
    _ok(tmp_path, "knowledge", "gaps", "--site", "acme")  # creates the database
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as conn:
        conn.executemany("INSERT INTO knowledge_gaps (id, site, question, key, asked, first_asked_at, last_asked_at) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)", [(*g[:3], gap_key(g[2]), *g[3:]) for g in GAPS])
    assert _ok(tmp_path, "knowledge", "gaps", "--site", "acme").splitlines() == [
        "acme: 3 open questions the assistant could not answer",
        "g2  asked 3x, last 2026-11-29  Can I pay with Afterpay?",
        "g3  asked 2x, last 2026-11-28  Do you service Geelong?",
        "g1  asked 1x, last 2026-11-01  Do you fix pool pumps?",
    ]
    assert json.loads(_ok(tmp_path, "knowledge", "status", "--site", "acme", "--json"))["sites"][0]["owner"] == {
        "own_answers": 0, "files": 0, "files_failed": 0, "open_gaps": 3, "open_leads": 0, "recrawl_requested": 0}
    answered = _ok(tmp_path, "knowledge", "answer", "g2", "--site", "acme",
                   "--text", "Yes, Afterpay is accepted for jobs over $200.")
    answer_id = answered.split("own answer ")[1].split()[0]
    _ok(tmp_path, "knowledge", "dismiss", "g1", "--site", "acme")
    # An answered question is neither answered again nor dismissed (the Worker's routes answer 409).
    for again in (["answer", "g2", "--text", "No."], ["dismiss", "g2"]):
        refused = run_helppuff(tmp_path, "knowledge", *again, "--site", "acme")
        assert refused.returncode == 2 and f"gap 'g2' is already answered (own answer {answer_id})" in refused.stderr
    assert _ok(tmp_path, "knowledge", "status", "--site", "acme").splitlines()[1] == (
        "  1 own answer, 1 open question (knowledge gaps)")
    assert [g["id"] for g in json.loads(_ok(tmp_path, "knowledge", "gaps", "--site", "acme", "--json"))] == ["g3"]
    every = {g["id"]: g for g in json.loads(_ok(tmp_path, "knowledge", "gaps", "--site", "acme", "--all", "--json"))}
    assert (every["g2"]["state"], every["g2"]["answer_id"], every["g1"]["state"]) == ("answered", answer_id, "dismissed")
    passage = _passages(tmp_path, "helppuff://answers/")
    assert passage[0]["title"] == "Can I pay with Afterpay?" and "Afterpay is accepted" in str(passage[0]["text"])
    # Removing the answer puts its question back on the list.
    _ok(tmp_path, "knowledge", "remove", answer_id, "--site", "acme")
    assert [g["id"] for g in json.loads(_ok(tmp_path, "knowledge", "gaps", "--site", "acme", "--json"))] == ["g2", "g3"]


def test_bad_input_is_a_clear_error_and_adds_nothing(tmp_path: Path) -> None:
    empty = run_helppuff(tmp_path, "knowledge", "add", "--site", "acme", "--title", "  ", "--text", "x")
    assert empty.returncode == 2 and "title: say what the answer is about" in empty.stderr
    blank = run_helppuff(tmp_path, "knowledge", "add", "--site", "acme", "--title", "Parking?", "--text", " \n")
    assert blank.returncode == 2 and "text: the answer is empty" in blank.stderr
    unknown = run_helppuff(tmp_path, "knowledge", "answer", "nope", "--site", "acme", "--text", "x")
    assert unknown.returncode == 2 and "gap 'nope': no question of acme has that id" in unknown.stderr
    missing = run_helppuff(tmp_path, "knowledge", "remove", "nope", "--site", "acme")
    assert missing.returncode == 2 and "no own answer of acme has that id" in missing.stderr
    assert json.loads(_ok(tmp_path, "knowledge", "answers", "--site", "acme", "--json")) == []


def test_gap_key_ignores_case_punctuation_and_spacing() -> None:
    assert gap_key("  Can I pay with AFTERPAY?? ") == gap_key("can i pay with afterpay") == "can i pay with afterpay"
    assert gap_key("Do you service St. Kilda—today?") == "do you service st kilda today"
    assert gap_key("Ｆｕｌｌ width") == "full width"
