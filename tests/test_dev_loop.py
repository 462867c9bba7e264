"""The local dev loop end to end, as an operator runs it: `helppuff crawl` the Acme site (a real
HTTP server on loopback) into a fresh knowledge base, `helppuff serve` the Worker on it (the local
cloud and `wrangler dev` in workerd), and ask it questions over HTTP and through `helppuff search`.
The Worker's dev shims read the very SQLite file and vector index the crawl wrote."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.devloop import HELPPUFF, ROOT, crawl_with_settings, free_port, serving

# The search and the chat answer a request without an Origin (these tests, `helppuff search`) only
# for a site that says so (worker/src/guard.ts): the crawled site's settings while the loop runs.
NO_ORIGIN_OK = json.dumps({"allowNoOrigin": True})


@dataclass
class Loop:
    site_url: str
    worker_url: str
    data_dir: Path
    env: dict[str, str]
    serve: subprocess.Popen[bytes]
    out: Path
    err: Path

    def search(self, query: str, **extra: Any) -> dict[str, Any]:
        reply = httpx.post(f"{self.worker_url}/v1/sites/acme/search", json={"query": query, **extra}, timeout=60)
        assert reply.status_code == 200, reply.text
        return reply.json()

    def paths(self, answer: dict[str, Any]) -> list[str]:
        """Each passage's page path (no anchor); the facts passage keeps its helppuff:// URL."""
        return [p["url"].split("#")[0].removeprefix(self.site_url) or "/" for p in answer["passages"]]

    def logs(self) -> str:
        return f"stdout:\n{self.out.read_text()}\nstderr:\n{self.err.read_text()}"


@pytest.fixture(scope="module")
def loop(serve_site, tmp_path_factory) -> Iterator[Loop]:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    tmp = tmp_path_factory.mktemp("devloop")
    data_dir = tmp / "kb"
    env = crawl_with_settings(server.url, data_dir, NO_ORIGIN_OK)
    port = free_port()
    with serving(data_dir, env, tmp, port) as served:
        yield Loop(server.url, f"http://127.0.0.1:{port}", data_dir, env, served.process, served.out, served.err)


def test_serve_prints_where_everything_is(loop: Loop) -> None:
    lines = loop.out.read_text().splitlines()
    assert lines[0].startswith("Local cloud  http://127.0.0.1:") and lines[0].endswith(f"(knowledge base: {loop.data_dir})")
    assert lines[1] == f"Worker       {loop.worker_url}  (POST /v1/sites/<site>/search)"
    db = sqlite3.connect(loop.data_dir / "d1" / "helppuff.sqlite3")
    try:
        (chunks,) = db.execute("SELECT COUNT(*) FROM chunks WHERE site = 'acme'").fetchone()
    finally:
        db.close()
    assert chunks > 10
    assert lines[2] == "Chat model   none: extractive answers (--chat-url URL for an OpenAI-compatible server)"
    assert lines[3] == f"Site         acme: {chunks} chunks, @local/multilingual-e5-small"
    # No OWNER_TOKEN secret stored: the dashboard's line says it is off and how to turn it on.
    assert lines[4] == (f"Dashboard    {loop.worker_url}/admin  (off: no OWNER_TOKEN secret; "
                        "helppuff secret set OWNER_TOKEN, then restart helppuff serve)")


@pytest.mark.parametrize(
    ("question", "pages", "within"),
    [
        # Both pages state the fee: "An after-hours call-out is $180 plus parts and labour."
        ("how much is an after-hours call-out", {"/pricing", "/emergency-plumbing"}, 1),
        ("are your plumbers licensed", {"/faq"}, 4),
        ("do you fix hot water systems", {"/services/hot-water", "/services"}, 4),
        ("what's your phone number", {"helppuff://facts", "/contact"}, 4),
        ("my drain is blocked, can you clear it?", {"/services/blocked-drains"}, 4),
    ],
)
def test_the_right_page_comes_first_or_in_the_top_4(loop: Loop, question: str, pages: set[str], within: int) -> None:
    answer = loop.search(question)
    assert set(loop.paths(answer)[:within]) & pages, (question, loop.paths(answer))
    # Every stage ran: the vectors, and the local relevance model as the reranker.
    assert answer["degraded"] == []
    assert answer["scores"] == "reranker"


def test_helppuff_search_through_the_worker(loop: Loop) -> None:
    result = subprocess.run([HELPPUFF, "search", "are your plumbers licensed", "--site", "acme", "--url",
                             loop.worker_url, "--json", "--limit", "2"],
                            cwd=ROOT, env=loop.env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert [p["n"] for p in answer["passages"]] == [1, 2]
    assert loop.paths(answer)[0] == "/faq"
    assert answer["passages"][0]["band"] == "confident"  # the FAQ's own answer: the local relevance model is sure
    text = subprocess.run([HELPPUFF, "search", "are your plumbers licensed", "--site", "acme", "--url",
                           loop.worker_url, "--limit", "1"],
                          cwd=ROOT, env=loop.env, capture_output=True, text=True, check=False)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[:2] == [
        f"1. {answer['passages'][0]['score']:.4f}  {answer['passages'][0]['band']}  Frequently Asked Questions | Acme Plumbing",
        f"   {loop.site_url}/faq",
    ]


def test_each_retriever_alone(loop: Loop) -> None:
    # The hot-water page is a close vector and a keyword hit. The services page's line "Hot water
    # system repairs and replacement" answers as directly, and the relevance model may put it first.
    by_vectors = loop.paths(loop.search("do you fix hot water systems", mode="vectors"))
    assert by_vectors[0] in ("/services/hot-water", "/services") and "/services/hot-water" in by_vectors[:4]
    assert "/services/hot-water" in loop.paths(loop.search("do you fix hot water systems", mode="keywords"))[:4]
    # "phone" is a keyword of the facts passage, and multilingual-e5-small finds it by meaning too:
    # the relevance model keeps it either way.
    assert loop.paths(loop.search("what's your phone number", mode="keywords"))[0] == "helppuff://facts"
    assert loop.paths(loop.search("what's your phone number", mode="vectors"))[0] == "helppuff://facts"


def test_the_worker_reads_the_crawls_sqlite_file_live(loop: Loop) -> None:
    # A settings row written straight into the crawl's SQLite file changes the very next answer.
    db = sqlite3.connect(loop.data_dir / "d1" / "helppuff.sqlite3")
    try:
        with db:
            db.execute("UPDATE site_settings SET settings = ? WHERE site = 'acme'",
                       [json.dumps({"allowNoOrigin": True, "retrieval": {"finalK": 1, "rerankerModel": None}})])
        answer = loop.search("do you fix hot water systems")
        assert len(answer["passages"]) == 1 and answer["degraded"] == []
    finally:
        with db:
            db.execute("UPDATE site_settings SET settings = ? WHERE site = 'acme'", [NO_ORIGIN_OK])
        db.close()


def _helppuff(loop: Loop, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run([HELPPUFF, *args], cwd=ROOT, env=loop.env, input=stdin, capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _chat(loop: Loop, question: str) -> str:
    reply = httpx.post(f"{loop.worker_url}/v1/sites/acme/chat", json={"messages": [{"role": "user", "content": question}]},
                       timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.text


def test_a_question_the_site_cannot_answer_is_a_gap_the_owner_answers(loop: Loop) -> None:
    question = "Do you teach salsa dancing lessons?"
    try:
        assert loop.search(question)["passages"] == []
        assert "not sure" in _chat(loop, question)
        # The Worker records the gap in the background (waitUntil): it lands just after the answer.
        gaps: list[dict[str, Any]] = []
        for _ in range(100):
            gaps = json.loads(_helppuff(loop, "knowledge", "gaps", "--site", "acme", "--json"))
            if gaps:
                break
        assert [(g["question"], g["asked"], g["state"]) for g in gaps] == [(question, 1, "open")]
        answered = _helppuff(loop, "knowledge", "answer", gaps[0]["id"], "--site", "acme",
                             "--text", "Not us, but our neighbours at Richmond Dance Studio run salsa classes on Fridays.")
        answer_id = answered.split("own answer ")[1].split()[0]
        # The very next search finds the owner's answer (the serving process sees the new vector).
        found = loop.search(question)
        assert loop.paths(found)[0] == f"helppuff://answers/{answer_id}", loop.paths(found)
        assert "Richmond Dance Studio" in _chat(loop, question)
        assert json.loads(_helppuff(loop, "knowledge", "gaps", "--site", "acme", "--json")) == []
    finally:
        _helppuff(loop, "settings", "set", "-", "--site", "acme", stdin=NO_ORIGIN_OK)


def test_a_recrawl_request_through_the_worker_is_a_job_a_worker_runs(loop: Loop) -> None:
    secret = "0123456789abcdef-recrawl"
    with sqlite3.connect(loop.data_dir / "d1" / "helppuff.sqlite3") as db:
        db.execute("DELETE FROM crawl_requests")  # the loop's crawl queued a retry of its failed pages
    _helppuff(loop, "settings", "set", "-", "--site", "acme",
              stdin=json.dumps({"allowNoOrigin": True, "knowledge": {"recrawlSecret": secret}}))
    try:
        url = f"{loop.worker_url}/v1/sites/acme/recrawl"
        refused = httpx.post(url, headers={"authorization": "Bearer wrong-secret-0000000"}, timeout=60)
        assert refused.status_code == 401, refused.text
        pricing = f"{loop.site_url}/pricing"
        queued = httpx.post(url, headers={"authorization": f"Bearer {secret}"},
                            json={"urls": [pricing, "https://elsewhere.example/x"]}, timeout=60)
        assert queued.status_code == 202, queued.text
        body = queued.json()
        assert (body["kind"], body["urls"], body["sent"], [r["url"] for r in body["refused"]]) == (
            "urls", [pricing], True, ["https://elsewhere.example/x"])
        again = httpx.post(url, headers={"authorization": f"Bearer {secret}"}, json={"urls": [pricing]}, timeout=60)
        assert (again.json()["request"], again.json()["asked"], again.json()["sent"]) == (body["request"], 2, False)
        plan = json.loads(_helppuff(loop, "schedule", "--dry-run", "--json"))
        assert [(p["site"], p["due"]) for p in plan] == [("acme", False)]
        assert plan[0]["why"].startswith(f"a crawl job is queued (request {body['request']}")
        # The Worker sent it to the local cloud's queue: a worker takes it and recrawls that page only.
        ran = _helppuff(loop, "worker", "--once", "-s", "HELPPUFF_QUEUE_RETRIES=false")
        assert ran.startswith(f"job {body['request']} (acme, urls, 1 page): run ") and "done" in ran, ran
    finally:
        _helppuff(loop, "settings", "set", "-", "--site", "acme", stdin=NO_ORIGIN_OK)
        db = sqlite3.connect(loop.data_dir / "d1" / "helppuff.sqlite3")
        with db:
            db.execute("DELETE FROM crawl_requests")
        db.close()


def test_a_site_never_crawled_is_refused_as_it_registers_no_origin(loop: Loop) -> None:
    reply = httpx.post(f"{loop.worker_url}/v1/sites/nobody/search", json={"query": "hi"}, timeout=60)
    assert reply.status_code == 403
    assert reply.json() == {"error": "requests must come from the site's web pages (no Origin header)"}


def test_the_search_takes_the_chats_origin_allowlist(loop: Loop) -> None:
    url = f"{loop.worker_url}/v1/sites/acme/search"
    refused = httpx.post(url, json={"query": "hi"}, headers={"origin": "https://evil.example"}, timeout=60)
    assert refused.status_code == 403, refused.text
    assert refused.json() == {"error": "origin https://evil.example may not use this site's chat"}
    assert "access-control-allow-origin" not in refused.headers


def test_ask_prints_the_chats_answer_with_its_sources(loop: Loop) -> None:
    asked = subprocess.run([HELPPUFF, "ask", "How much is a call-out?", "--site", "acme", "--url", loop.worker_url],
                           cwd=ROOT, env=loop.env, capture_output=True, text=True, check=False)
    assert asked.returncode == 0, asked.stderr
    lines = asked.stdout.splitlines()
    sources = lines.index("Sources:")
    assert sources >= 1 and lines[0].strip()  # the answer, then where it came from
    assert any(f"{loop.site_url}/pricing" in line for line in lines[sources + 1:]), asked.stdout
    refused = subprocess.run([HELPPUFF, "ask", "hi", "--site", "acme", "--url", loop.worker_url, "--origin",
                              "https://evil.example"], cwd=ROOT, env=loop.env, capture_output=True, text=True, check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == ("helppuff ask: the Worker answered HTTP 403: "
                                      "origin https://evil.example may not use this site's chat")


def test_zz_serve_stops_cleanly_on_sigterm(loop: Loop) -> None:
    # Runs last in this module (the fixture's own cleanup then has nothing left to stop).
    os.killpg(loop.serve.pid, signal.SIGTERM)
    assert loop.serve.wait(timeout=60) == 0, loop.logs()
    assert "Stopping." in loop.err.read_text()
    with pytest.raises(httpx.ConnectError):
        httpx.post(f"{loop.worker_url}/v1/sites/acme/search", json={"query": "hi"}, timeout=10)

