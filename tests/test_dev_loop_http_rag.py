"""An HTTP retriever through the local dev loop (seed 001, "Over HTTP (no code)"), as an owner tries one:
`helppuff rag set http` points the site at their search service, `helppuff secret set` keeps its token (before
serve starts: serve passes the secrets it finds then), and `helppuff serve` runs the real Worker (wrangler dev)
with no chat model, so the answer is the passages' sentences quoted (worker/src/chat/extractive.ts). The search
service is FakeRetriever (tests/test_cli_rag.py), a fake on 127.0.0.1 that records each request and answers
seed 001's {"passages": [...]}. Seed 001: the retriever decides what is relevant, and its passages are
numbered, quoted and cited: the chat quotes the passage's sentence and lists it in Sources (linked by its url,
or by its title alone when it has none), and the search route returns it as it came.
worker/test/rag-extractive.test.ts holds the Worker to the same in workerd, shape by shape."""

from __future__ import annotations

import os
from pathlib import Path

import httpx

from tests.conftest import run_helppuff
from tests.devloop import free_port, serving, skip_without_toolchain, sse_events
from tests.test_cli_rag import FakeRetriever, fake  # noqa: F401 (fake: the fixture, used by name)

TOKEN = "tok-fake-9c8b7a"
SENTENCE = "Our zebra-striped pipe wrapping costs $42 per metre."
ZEBRA = {"passages": [
    {"title": "Zebra tariffs", "content": SENTENCE, "url": "https://example.org/zebra", "score": 0.9}]}
QUESTION = "How much is the zebra-striped pipe wrapping?"


def _sources(events: list[tuple[str, dict]]) -> list[dict]:
    """The Sources event's passages as n, title and url."""
    sources = next(data for event, data in events if event == "sources")["sources"]
    return [{key: source[key] for key in ("n", "title", "url")} for source in sources]


def test_an_http_retriever_s_passage_is_quoted_and_cited_by_the_served_worker(
        tmp_path: Path, fake: tuple[FakeRetriever, str]) -> None:  # noqa: F811
    skip_without_toolchain()
    search, base = fake
    search.status = 200
    search.reply = ZEBRA
    assert run_helppuff(tmp_path, "settings", "set", "-", "--site", "shop",
                        stdin='{"backend": {"allowNoOrigin": true}}').returncode == 0
    done = run_helppuff(tmp_path, "rag", "set", "http", "--site", "shop", "--url", f"{base}/query",
                        "--token-env", "SEARCH_TOKEN")
    assert done.returncode == 0, done.stderr
    assert run_helppuff(tmp_path, "secret", "set", "SEARCH_TOKEN", stdin=TOKEN).returncode == 0
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(tmp_path / "kb"), "CLOUDFLARE_API_TOKEN": "",
           "CLOUDFLARE_ACCOUNT_ID": ""}
    env.pop("SEARCH_TOKEN", None)
    port = free_port()
    worker = f"http://127.0.0.1:{port}"

    with serving(tmp_path / "kb", env, tmp_path, port) as served:
        reply = httpx.post(f"{worker}/v1/sites/shop/chat", json={"messages": [{"role": "user", "content": QUESTION}]},
                           timeout=60)
        assert reply.status_code == 200, reply.text
        assert search.requests[-1]["authorization"] == f"Bearer {TOKEN}"
        assert search.requests[-1]["body"]["question"] == QUESTION
        events = sse_events(reply.text)
        answer = "".join(data["text"] for event, data in events if event == "delta")
        assert SENTENCE in answer, f"{answer!r}\n{served.logs()}"
        assert "not sure" not in answer.lower()
        assert "callback" not in [event for event, _ in events]
        assert _sources(events) == [{"n": 1, "title": "Zebra tariffs", "url": "https://example.org/zebra"}]
        assert [event for event, _ in events][-1] == "done"

        found = httpx.post(f"{worker}/v1/sites/shop/search", json={"query": QUESTION}, timeout=60)
        assert found.status_code == 200, found.text
        body = found.json()
        assert body["scores"] == "retriever"
        [passage] = body["passages"]
        assert passage["title"] == "Zebra tariffs"
        assert passage["url"] == "https://example.org/zebra"
        assert passage["text"] == SENTENCE
        assert passage["score"] == 0.9

        # Seed 001's url is optional: a passage without one is quoted and cited by its title, unlinked.
        search.reply = {"passages": [{"title": "Zebra tariffs", "content": SENTENCE}]}
        events = sse_events(httpx.post(f"{worker}/v1/sites/shop/chat",
                                    json={"messages": [{"role": "user", "content": QUESTION}]}, timeout=60).text)
        assert SENTENCE in "".join(data["text"] for event, data in events if event == "delta")
        assert _sources(events) == [{"n": 1, "title": "Zebra tariffs", "url": ""}]
