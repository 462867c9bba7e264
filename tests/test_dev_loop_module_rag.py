"""A module retriever through the local dev loop (seed 001, "In TypeScript"), as an owner tries one: `helppuff
scaffold rag --use --site shop` writes rag.ts calling their search service, `helppuff secret set MY_SEARCH_KEY`
keeps its key, and `helppuff serve` bundles the module into the real Worker (wrangler dev, the entry file
helppuff_crawl/deploy/entry.py writes). The chat then answers from what the module returns, cited in Sources;
the search service is FakeRetriever (tests/test_cli_rag.py), a fake on 127.0.0.1 that records each request and
answers the scaffold's {"results": [...]}. When it fails the module throws, and the chat says it is not sure
and never fails. worker/test/rag-module.test.ts holds the Worker to the exact request, ctx and checks."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx

from tests.conftest import run_helppuff
from tests.devloop import HELPPUFF, ROOT, free_port, serving, skip_without_toolchain, sse_events
from tests.test_cli_rag import FakeRetriever, fake  # noqa: F401 (fake: the fixture, used by name)

KEY = "key-fake-0a1b2c"


def test_a_module_retriever_answers_the_chat_through_the_served_worker(
        tmp_path: Path, fake: tuple[FakeRetriever, str]) -> None:  # noqa: F811
    skip_without_toolchain()
    search, base = fake
    search.status = 200
    search.reply = {"results": [
        {"title": "Prices", "text": "Our callout fee is $99 on weekdays.", "url": "https://acme.com/prices", "score": 0.8},
        {"title": "Trap", "text": "Click here.", "url": "javascript:alert(1)"},
    ]}
    site = tmp_path / "site"
    assert run_helppuff(tmp_path, "settings", "set", "-", "--site", "shop",
                        stdin='{"backend": {"allowNoOrigin": true}}').returncode == 0
    made = run_helppuff(tmp_path, "scaffold", "rag", "--use", "--site", "shop", "--out", str(site / "rag.ts"),
                        "--config", str(site / "helppuff.json"), "--search-url", f"{base}/query")
    assert made.returncode == 0, made.stderr
    assert run_helppuff(tmp_path, "secret", "set", "MY_SEARCH_KEY", stdin=KEY).returncode == 0
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(tmp_path / "kb"), "CLOUDFLARE_API_TOKEN": "",
           "CLOUDFLARE_ACCOUNT_ID": ""}
    env.pop("MY_SEARCH_KEY", None)
    port = free_port()
    worker = f"http://127.0.0.1:{port}"

    def chat(question: str) -> str:
        reply = httpx.post(f"{worker}/v1/sites/shop/chat", json={"messages": [{"role": "user", "content": question}]},
                           timeout=60)
        assert reply.status_code == 200, reply.text
        return reply.text

    with serving(tmp_path / "kb", env, tmp_path, port) as served:
        assert f"Module retriever bundled: {site / 'rag.ts'} (site shop)" in served.logs()
        answer = chat("What is your callout fee?")
        assert search.requests[-1] == {
            "path": "/query", "authorization": f"Bearer {KEY}", "content-type": "application/json",
            "body": {"query": "What is your callout fee?", "limit": search.requests[-1]["body"]["limit"]}}
        assert isinstance(search.requests[-1]["body"]["limit"], int)
        events = sse_events(answer)
        sources = next(data for event, data in events if event == "sources")
        assert {"n": 1, "title": "Prices", "url": "https://acme.com/prices", "band": "confident"} in sources["sources"]
        assert "error" not in [event for event, _ in events]

        shown = subprocess.run([HELPPUFF, "rag", "test", "price of a blocked drain", "--site", "shop", "--url", worker,
                                "--limit", "3"], cwd=ROOT, env=env, capture_output=True, text=True, check=False,
                               timeout=120)
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.splitlines()
        assert lines[0] == "1. 0.8000  confident  Prices" and lines[1].strip() == "https://acme.com/prices"
        assert lines[3] == "2. 0.0000  confident  Trap" and lines[4].strip() == ""  # its javascript: url dropped
        assert search.requests[-1]["body"] == {"query": "price of a blocked drain", "limit": 3}

        search.status = 500  # the module throws `search 500`: no passages, not sure, never an error
        failed = chat("What is your callout fee?")
        assert "not sure" in failed.lower()
        assert "error" not in [event for event, _ in sse_events(failed)]
        answer = json.loads(subprocess.run([HELPPUFF, "rag", "test", "prices", "--site", "shop", "--url", worker,
                                            "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                                           check=False, timeout=120).stdout)
        assert answer["passages"] == []
        assert answer["degraded"] == ["retriever-failed: my-knowledge: the search threw: search 500; no passages"]
