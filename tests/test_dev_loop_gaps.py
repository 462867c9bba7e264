"""Knowledge gaps through the local dev loop, as an owner meets them: `helppuff crawl` the Acme site (a
real HTTP server on loopback), `helppuff secret set OWNER_TOKEN`, `helppuff serve` the Worker (the local
cloud, no chat model: the extractive answers, so today's rule, an empty search, finds the gap), then a
question the site cannot answer. The new gap reaches the site's webhook (a real HTTP receiver on
loopback) as `knowledge.gap`, its signature checked as a receiver checks it; the owner's routes list it
(behind the token) and answer it; `helppuff knowledge gaps` shows what the Worker recorded; and once a
`helppuff worker` has run the crawl job the answer asked for, the search finds the owner's answer."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.devloop import HELPPUFF, ROOT, crawl_with_settings, free_port, serving

TOKEN = "owner-0123456789abcdef"
SECRET = "gap-hook-secret-0123456789"
QUESTION = "Do you teach salsa dancing lessons?"


class Receiver(ThreadingHTTPServer):
    """A webhook receiver: every POST's headers and exact body bytes, answered 204."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the handler's name)
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


def signature_ok(headers: dict[str, str], body: bytes, secret: str, tolerance: int = 300) -> bool:
    """The check a receiver makes: HMAC-SHA256(secret, "<timestamp>." + body), fresh, compared in constant time."""
    timestamp = headers.get("x-helppuff-timestamp", "")
    expected = "sha256=" + hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return abs(time.time() - int(timestamp or 0)) <= tolerance and hmac.compare_digest(
        headers.get("x-helppuff-signature", ""), expected)


@dataclass
class GapLoop:
    worker_url: str
    data_dir: Path
    env: dict[str, str]
    receiver: Receiver

    def helppuff(self, *args: str, stdin: str | None = None) -> str:
        result = subprocess.run([HELPPUFF, *args], cwd=ROOT, env=self.env, input=stdin, capture_output=True,
                                text=True, check=False)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def owner(self, method: str, path: str, token: str = TOKEN, **extra: Any) -> httpx.Response:
        return httpx.request(method, f"{self.worker_url}/v1/sites/acme/knowledge/{path}",
                             headers={"authorization": f"Bearer {token}"}, timeout=60, **extra)


@pytest.fixture(scope="module")
def gap_loop(serve_site, tmp_path_factory) -> Iterator[GapLoop]:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    tmp = tmp_path_factory.mktemp("devloop-gaps")
    receiver = Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    settings = {"backend": {"allowNoOrigin": True, "leads": {"webhookUrl": hook, "webhookSecret": SECRET}}}
    data_dir = tmp / "kb"
    env = crawl_with_settings(server.url, data_dir, json.dumps(settings))
    stored = subprocess.run([HELPPUFF, "secret", "set", "OWNER_TOKEN"], cwd=ROOT, env=env, input=TOKEN,
                            capture_output=True, text=True, check=False)
    assert stored.returncode == 0, stored.stderr
    port = free_port()
    try:
        with serving(data_dir, env, tmp, port):
            yield GapLoop(f"http://127.0.0.1:{port}", data_dir, env, receiver)
    finally:
        receiver.shutdown()
        receiver.server_close()


def test_a_new_gap_is_sent_listed_answered_and_learned(gap_loop: GapLoop) -> None:
    loop = gap_loop
    search = httpx.post(f"{loop.worker_url}/v1/sites/acme/search", json={"query": QUESTION}, timeout=60).json()
    assert search["passages"] == []
    chat = httpx.post(f"{loop.worker_url}/v1/sites/acme/chat",
                      json={"messages": [{"role": "user", "content": QUESTION}]}, timeout=60)
    assert chat.status_code == 200 and "not sure" in chat.text

    # The gap and its event come in the background (waitUntil), just after the answer.
    gaps: list[dict[str, Any]] = []
    for _ in range(100):
        listed = loop.owner("GET", "gaps")
        assert listed.status_code == 200, listed.text
        gaps = listed.json()["gaps"]
        if gaps and loop.receiver.received:
            break
        time.sleep(0.1)
    assert [(g["question"], g["asked"], g["state"], g["answerId"]) for g in gaps] == [(QUESTION, 1, "open", None)]
    gap = gaps[0]
    assert len(loop.receiver.received) == 1
    headers, body = loop.receiver.received[0]
    assert headers["x-helppuff-event"] == "knowledge.gap" and headers["x-helppuff-delivery"] == gap["id"]
    assert signature_ok(headers, body, SECRET)
    assert not signature_ok(headers, body, "another-secret-0123456789")
    assert json.loads(body) == {"event": "knowledge.gap", "site": "acme", "gap": {
        "id": gap["id"], "question": QUESTION, "asked": 1, "firstAskedAt": gap["firstAskedAt"]}}

    # Asked again: counted, not sent again.
    httpx.post(f"{loop.worker_url}/v1/sites/acme/chat", json={"messages": [{"role": "user", "content": QUESTION.lower()}]},
               timeout=60)
    for _ in range(100):
        if loop.owner("GET", "gaps").json()["gaps"][0]["asked"] == 2:
            break
        time.sleep(0.1)
    assert loop.owner("GET", "gaps").json()["gaps"][0]["asked"] == 2
    assert len(loop.receiver.received) == 1

    assert loop.owner("GET", "gaps", token="owner-wrong-0000000000").status_code == 401
    with sqlite3.connect(loop.data_dir / "d1" / "helppuff.sqlite3") as db:
        db.execute("DELETE FROM crawl_requests")  # the crawl queued a retry of its failed pages
    text = "Not us, but our neighbours at Richmond Dance Studio run salsa classes on Fridays."
    answered = loop.owner("POST", f"gaps/{gap['id']}/answer", json={"text": text})
    assert answered.status_code == 201, answered.text
    reply = answered.json()
    answer_id = reply["answer"]["id"]
    assert reply["gap"] == {"id": gap["id"], "state": "answered", "answerId": answer_id}
    assert reply["job"]["kind"] == "urls" and reply["job"]["sent"] is True
    assert reply["searchable"] == f"once a helppuff worker has run crawl job {reply['job']['request']} (queued)"

    # `helppuff knowledge` reads what the Worker wrote.
    every = json.loads(loop.helppuff("knowledge", "gaps", "--site", "acme", "--all", "--json"))
    assert [(g["id"], g["state"], g["answer_id"], g["asked"]) for g in every] == [(gap["id"], "answered", answer_id, 2)]
    assert json.loads(loop.helppuff("knowledge", "gaps", "--site", "acme", "--json")) == []
    answers = loop.helppuff("knowledge", "answers", "--site", "acme")
    assert QUESTION in answers and answer_id in answers

    ran = loop.helppuff("worker", "--once", "-s", "HELPPUFF_QUEUE_RETRIES=false")
    assert ran.startswith(f"job {reply['job']['request']} (acme, urls, 1 page): run ") and "done" in ran, ran
    found = httpx.post(f"{loop.worker_url}/v1/sites/acme/search", json={"query": QUESTION}, timeout=60).json()
    assert found["passages"] and found["passages"][0]["url"] == f"helppuff://answers/{answer_id}", found
