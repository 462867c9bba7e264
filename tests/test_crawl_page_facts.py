"""End to end: crawl tests/sites/bayside-bikes, whose opening hours are written only in its footer and whose
email only in the contact page's text, and see the gaps filled; then `helppuff knowledge facts detect`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest_twisted

from helppuff_crawl.kb.facts_table import set_owner_fact
from helppuff_crawl.kb.facts_detect import DEFAULT_MODEL
from helppuff_crawl.text.hours import DAYS
from tests.conftest import (
    local_kb,
    make_crawler,
    project_settings,
    run_async,
    run_helppuff,
)
from tests.devloop import free_port

FOOTER_HOURS = {day: [["08:00", "17:30"]] if day in DAYS[:5] else [["09:00", "12:00"]] if day == "Saturday" else []
                for day in DAYS}


def _facts(tmp_path: Path) -> dict[str, dict[str, object]]:
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as conn:
        rows = conn.execute("SELECT key, value, source, source_url FROM facts WHERE site = 'bayside'").fetchall()
    return {key: {"value": json.loads(value), "source": source, "source_url": url} for key, value, source, url in rows}


def _passage(tmp_path: Path) -> str:
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as conn:
        (text,) = conn.execute("SELECT text FROM chunks WHERE site = 'bayside' AND url = 'helppuff://facts'").fetchone()
    return str(text)


async def _owner_email(tmp_path: Path) -> None:
    kb = local_kb(tmp_path / "kb")
    await set_owner_fact(kb, "bayside", "email", "owner@baysidebikes.example")
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_a_crawl_fills_the_footer_hours_and_keeps_the_owners_email(serve_site, tmp_path: Path):  # type: ignore[no-untyped-def]
    server = serve_site("bayside-bikes")
    yield run_async(_owner_email(tmp_path))
    crawler = make_crawler(project_settings(tmp_path))
    yield crawler.crawl(url=server.url, site="bayside", render_js="never")
    stats = crawler.stats.get_stats()
    facts = _facts(tmp_path)
    assert facts["hours"] == {"value": FOOTER_HOURS, "source": "crawl", "source_url": f"{server.url}/contact"}
    assert facts["email"]["value"] == "owner@baysidebikes.example" and facts["email"]["source"] == "owner"
    assert facts["telephone"]["value"] == "+61 3 9555 0142"  # the structured one, not the text's
    # The contact page's sentence, from the street to the postcode.
    assert facts["address"] == {"value": "41 Beach Road, Sandringham VIC 3191", "source": "crawl",
                                "source_url": f"{server.url}/contact"}
    assert (stats["helppuff/store/page_facts_kept"], stats["helppuff/store/page_facts_dropped"]) == (2, 0)
    passage = _passage(tmp_path)
    assert "| Monday | 08:00-17:30 |" in passage and "| Saturday | 09:00-12:00 |" in passage
    assert "- Email: owner@baysidebikes.example" in passage

    # On demand, from the stored pages (no footer there): what the pages say, and nothing replaced.
    detect = run_helppuff(tmp_path, "knowledge", "facts", "detect", "--site", "bayside", "--json")
    assert detect.returncode == 0, detect.stderr
    report = json.loads(detect.stdout)
    assert report["reader"] == "rules" and report["gaps"] == [] and report["kept"] == []
    assert {c["key"]: c["reason"] for c in report["known"]} == {"telephone": "known already",
                                                                "email": "known: the owner's",
                                                                "address": "known already"}
    assert report["known"][1]["value"] == "workshop@baysidebikes.example"
    text = run_helppuff(tmp_path, "knowledge", "facts", "detect", "--site", "bayside", "--dry-run")
    assert text.returncode == 0, text.stderr
    assert "with the rule-based reader" in text.stdout and "missing: nothing" in text.stdout
    assert "dry run: nothing kept" in text.stdout
    # A chat model named but not answering (nothing listens on the port): the rules read the pages,
    # and the report says the model failed, not that there is none.
    port = free_port()
    failed = run_helppuff(tmp_path, "knowledge", "facts", "detect", "--site", "bayside", "--dry-run",
                          "-s", f"HELPPUFF_LOCAL_CHAT_URL=http://127.0.0.1:{port}/v1")
    assert failed.returncode == 0, failed.stderr
    assert (f"with the rule-based reader (the chat model {DEFAULT_MODEL} failed: see the note)"
            in failed.stdout), failed.stdout
    assert f"note: the model {DEFAULT_MODEL} failed (AIError: Local chat server http://127.0.0.1:{port}" in failed.stdout
    assert _facts(tmp_path) == facts
