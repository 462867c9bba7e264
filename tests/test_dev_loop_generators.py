"""Generation by OpenAI, Gemini and Anthropic through the local dev loop: `helppuff crawl` the Acme site
(a real HTTP server on loopback) as three sites, one per backend.type (openai, gemini, anthropic, each with
"retrieval": "helppuff"), run `helppuff serve` with each provider's key and a base URL that points at
FakeProviders, a fake of the three streaming APIs on loopback, and ask each site's chat a question.

The fake checks each API's key header and path, records the request, and streams an answer in the API's own
server-sent events (OpenAI chat.completion.chunk frames and [DONE]; Gemini GenerateContentResponse frames;
Anthropic message_start ... message_stop) made from the request: the first sentence of passage 1 of the
system prompt, cited [1]. worker/test/providers.test.ts holds the Worker to each API's exact request."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tests.devloop import (
    HELPPUFF,
    ROOT,
    crawl_into,
    crawl_with_settings,
    free_port,
    serving,
    sse_events,
)

KEYS = {"openai": "sk-fake-1a2b3c", "gemini": "AIza-fake-4d5e6f", "anthropic": "sk-ant-fake-7a8b9c"}
QUESTION = "How much is the call-out fee?"


def _settings(provider: str) -> str:
    return json.dumps({"backend": {"type": provider, "retrieval": "helppuff", "allowNoOrigin": True}})


@dataclass
class Recorded:
    provider: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeProviders:
    """A fake of OpenAI's, Gemini's and Anthropic's streaming APIs on 127.0.0.1 (one server, by path)."""

    requests: list[Recorded] = field(default_factory=list)

    def system(self, provider: str, body: dict[str, Any]) -> str:
        if provider == "openai":
            return next(m["content"] for m in body["messages"] if m["role"] == "system")
        if provider == "gemini":
            return "".join(p["text"] for p in body["systemInstruction"]["parts"])
        return str(body["system"])

    def answer(self, provider: str, body: dict[str, Any]) -> str:
        found = re.search(r'<passage n="1"[^>]*>\n(.*?)</passage>', self.system(provider, body), re.S)
        if found is None:
            return "I'm not sure; shall someone call you back?"
        # The passage's first two statements: not headings, not a question (an FAQ's answer, not its question).
        sentences = re.split(r"(?<=[.!?])\s+|\n+", found.group(1).replace("**", "").strip())
        statements = [t.strip() for t in sentences if t.strip() and not t.startswith("#") and not t.strip().endswith("?")]
        return f"From the site: {' '.join(statements[:2]).rstrip('.!')} [1]."

    def frames(self, provider: str, body: dict[str, Any]) -> list[str]:
        text = self.answer(provider, body)
        pieces = [text[i:i + 8] for i in range(0, len(text), 8)]
        tokens = len(json.dumps(body)) // 4

        def sse(data: Any, event: str | None = None) -> str:
            return (f"event: {event}\n" if event else "") + f"data: {json.dumps(data)}\n\n"

        if provider == "openai":
            base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1764633600, "model": body["model"]}
            out = [sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})]
            out += [sse({**base, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}) for p in pieces]
            out.append(sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
            out.append(sse({**base, "choices": [], "usage": {"prompt_tokens": tokens, "completion_tokens": len(text) // 4}}))
            return [*out, "data: [DONE]\n\n"]
        if provider == "gemini":
            return [sse({"candidates": [{"content": {"role": "model", "parts": [{"text": p}]}, "index": 0}],
                         "usageMetadata": {"promptTokenCount": tokens, "candidatesTokenCount": (i + 1) * 2}})
                    for i, p in enumerate(pieces)]
        out = [sse({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant",
                                                          "content": [], "model": body["model"],
                                                          "usage": {"input_tokens": tokens, "output_tokens": 1}}},
                   "message_start"),
               sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                   "content_block_start")]
        out += [sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
                    "content_block_delta") for p in pieces]
        out += [sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
                sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": len(text) // 4}},
                    "message_delta"),
                sse({"type": "message_stop"}, "message_stop")]
        return out

    def route(self, path: str, headers: dict[str, str]) -> str | None:
        """Which API the request is for, when its path and key header are that API's."""
        if path == "/openai/v1/chat/completions" and headers.get("authorization") == f"Bearer {KEYS['openai']}":
            return "openai"
        if (re.fullmatch(r"/gemini/v1beta/models/[\w.-]+:streamGenerateContent\?alt=sse", path)
                and headers.get("x-goog-api-key") == KEYS["gemini"]):
            return "gemini"
        if (path == "/anthropic/v1/messages" and headers.get("x-api-key") == KEYS["anthropic"]
                and headers.get("anthropic-version") == "2023-06-01"):
            return "anthropic"
        return None


@pytest.fixture(scope="module")
def fake() -> Iterator[tuple[FakeProviders, str]]:
    providers = FakeProviders()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            headers = {k.lower(): v for k, v in self.headers.items()}
            body = json.loads(self.rfile.read(int(headers.get("content-length", "0"))) or b"{}")
            provider = self.route_for(headers)
            if provider is None:
                self.send_response(401)
                self.end_headers()
                return
            providers.requests.append(Recorded(provider, self.path, headers, body))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for frame in providers.frames(provider, body):
                self.wfile.write(frame.encode())
                self.wfile.flush()

        def route_for(self, headers: dict[str, str]) -> str | None:
            return providers.route(self.path, headers)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield providers, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def worker_url(serve_site, tmp_path_factory, fake) -> Iterator[str]:  # type: ignore[no-untyped-def]
    _, base = fake
    site = serve_site("acme-plumbing")
    tmp = tmp_path_factory.mktemp("generators")
    data_dir = tmp / "kb"
    env = crawl_with_settings(site.url, data_dir, _settings("openai"), site="acme-openai")
    for provider in ("gemini", "anthropic"):
        crawl_into(site.url, data_dir, f"acme-{provider}")
        stored = subprocess.run([HELPPUFF, "settings", "set", "-", "--site", f"acme-{provider}"], cwd=ROOT, env=env,
                                input=_settings(provider), capture_output=True, text=True, check=False)
        assert stored.returncode == 0, stored.stderr
    served_env = {**env, "OPENAI_API_KEY": KEYS["openai"], "OPENAI_BASE_URL": f"{base}/openai/v1",
                  "GEMINI_API_KEY": KEYS["gemini"], "GEMINI_BASE_URL": f"{base}/gemini",
                  "ANTHROPIC_API_KEY": KEYS["anthropic"], "ANTHROPIC_BASE_URL": f"{base}/anthropic"}
    port = free_port()
    with serving(data_dir, served_env, tmp, port):
        yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
def test_the_provider_generates_the_answer_from_the_passages(provider: str, worker_url: str, fake) -> None:  # type: ignore[no-untyped-def]
    providers, _ = fake
    before = len(providers.requests)
    reply = httpx.post(f"{worker_url}/v1/sites/acme-{provider}/chat", timeout=120,
                       json={"messages": [{"role": "user", "content": QUESTION}]})
    assert reply.status_code == 200, reply.text
    events = sse_events(reply.text)
    got = providers.requests[before:]
    assert [r.provider for r in got] == [provider]
    system = providers.system(provider, got[0].body)
    assert '<passage n="1"' in system and "# Rules" in system
    text = "".join(data["text"] for name, data in events if name == "delta")
    assert text == providers.answer(provider, got[0].body).replace(" [1]", "")
    assert "$" in text
    names = [name for name, _ in events]
    assert names[-2:] == ["sources", "done"] and set(names[:-2]) == {"delta"}
    sources = events[-2][1]["sources"]
    assert sources and sources[0]["n"] == 1 and sources[0]["url"].startswith("http://127.0.0.1:")
    done = events[-1][1]
    assert done["model"] == {"openai": "gpt-4.1-mini", "gemini": "gemini-2.5-flash", "anthropic": "claude-haiku-4-5"}[provider]
    assert done["usage"]["neurons"] == 0 and done["usage"]["inputTokens"] > 0
    print(f"\n{provider} ({done['model']}): {text}\n  Sources: {[s['url'] for s in sources]}")


def test_serve_passes_the_provider_variables_only_when_set(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from helppuff_crawl.devloop.server import DevOptions
    from helppuff_crawl.devloop.worker_secrets import secret_lines

    given = {"OPENAI_API_KEY": "sk-1", "OPENAI_BASE_URL": "", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/x"}
    assert secret_lines("", given) == "OPENAI_API_KEY=sk-1\nANTHROPIC_BASE_URL=http://127.0.0.1:9/x\n"
    assert secret_lines("rk", {}) == "RETELL_API_KEY=rk\n"
    with pytest.raises(ValueError, match="GEMINI_API_KEY must be one line"):
        DevOptions(data_dir=tmp_path, provider_vars={"GEMINI_API_KEY": "k\nHELPPUFF_LOCAL_CLOUD_URL=http://elsewhere"})
    with pytest.raises(ValueError, match="is not a provider variable"):
        DevOptions(data_dir=tmp_path, provider_vars={"HELPPUFF_LOCAL_CLOUD_URL": "http://elsewhere"})
