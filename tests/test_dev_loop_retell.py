"""The Retell custom function through the local dev loop, as an owner tries it before pasting it into
Retell: `helppuff crawl` the Acme site (a real HTTP server on loopback), store a retell backend, run
`helppuff serve` with RETELL_API_KEY in its environment, take the function from `helppuff status
--json`, and call its URL as Retell does: `{name, call, args}` signed with X-Retell-Signature (signed
here as Retell's SDK signs, `v=<ms>,d=<hex HMAC-SHA256(key, body + ms)>`; worker/test/retell.test.ts
holds the Worker's check to the SDK's own sign and verify)."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.devloop import HELPPUFF, ROOT, crawl_with_settings, free_port, serving

KEY = "key_5e4d3c2b1a09f8e7d6c5"
RETELL = json.dumps({"backend": {"type": "retell", "retrieval": "helppuff"}})


@dataclass
class Voice:
    function: dict[str, Any]
    site_url: str
    status_text: str


def _sign(body: str, key: str, stamp: int) -> str:
    return f"v={stamp},d={hmac.new(key.encode(), (body + str(stamp)).encode(), hashlib.sha256).hexdigest()}"


@pytest.fixture(scope="module")
def voice(serve_site, tmp_path_factory) -> Iterator[Voice]:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    tmp = tmp_path_factory.mktemp("retell")
    data_dir = tmp / "kb"
    env = crawl_with_settings(server.url, data_dir, RETELL)
    with serving(data_dir, {**env, "RETELL_API_KEY": KEY}, tmp, free_port()):
        status = subprocess.run([HELPPUFF, "status", "--site", "acme", "--json"], cwd=ROOT, env=env,
                                capture_output=True, text=True, check=False)
        assert status.returncode == 0, status.stderr
        text = subprocess.run([HELPPUFF, "status", "--site", "acme"], cwd=ROOT, env=env,
                              capture_output=True, text=True, check=False).stdout
        yield Voice(json.loads(status.stdout)["sites"][0]["retell"]["function"], server.url, text)


def _call(voice: Voice, query: str, signature: str | None = "sign") -> httpx.Response:
    body = json.dumps({"name": voice.function["name"], "call": {"call_id": "call_1"}, "args": {"query": query}})
    headers = {"content-type": "application/json"}
    if signature == "sign":
        headers["x-retell-signature"] = _sign(body, KEY, int(time.time() * 1000))
    elif signature is not None:
        headers["x-retell-signature"] = signature
    return httpx.post(voice.function["url"], content=body, headers=headers, timeout=60)


def test_status_prints_the_function_at_the_served_worker(voice: Voice) -> None:
    assert voice.function["url"].startswith("http://127.0.0.1:")
    assert voice.function["url"].endswith("/v1/sites/acme/retell/kb")
    assert voice.function["parameters"]["required"] == ["query"]
    assert f"  Retell: custom function search_knowledge_base at {voice.function['url']}; " in voice.status_text


def test_a_signed_call_gets_the_passages_as_text(voice: Voice) -> None:
    reply = _call(voice, "How much is the call-out fee?")
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"] == "text/plain; charset=utf-8"
    assert reply.text.startswith('Passages from the business\'s website for "How much is the call-out fee?":\n\n[1] ')
    assert f"Source: {voice.site_url}/pricing" in reply.text
    assert "$" in reply.text


def test_unsigned_wrongly_signed_and_old_calls_are_refused(voice: Voice) -> None:
    assert _call(voice, "hours?", None).status_code == 401
    body = json.dumps({"args": {"query": "hours?"}})
    assert _call(voice, "hours?", _sign(body, KEY, int(time.time() * 1000))).status_code == 401  # another body
    old = int(time.time() * 1000) - 6 * 60 * 1000
    body = json.dumps({"name": voice.function["name"], "call": {"call_id": "call_1"}, "args": {"query": "hours?"}})
    reply = httpx.post(voice.function["url"], content=body, timeout=60,
                       headers={"content-type": "application/json", "x-retell-signature": _sign(body, KEY, old)})
    assert reply.status_code == 401


def test_nothing_sure_is_said_and_the_closest_passages_are_marked(voice: Voice) -> None:
    # Words no page has: the local relevance model is sure of nothing, and the agent is told so
    # (worker/src/bands.ts; with no passage at all, one sentence says so: worker/test/retell.test.ts).
    reply = _call(voice, "xyzzy quux")
    assert reply.status_code == 200, reply.text
    lines = reply.text.split("\n")
    assert lines[0] == 'Nothing in the business\'s website answers "xyzzy quux" for certain. The closest passages:'
    titles = [i for i, line in enumerate(lines) if line.startswith("[")]
    assert titles
    assert all(lines[i + 1] == "Match: only the closest found; it may not answer this exactly" for i in titles)

