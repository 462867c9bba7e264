"""A retriever's secret that `helppuff serve` does not pass, said where the operator looks: serve's start
lines name each site whose retriever (seed 001) names a Worker secret serve was started without, and
`helppuff rag set http` and `helppuff secret set`, run while serve runs, say when it must be restarted.

The lines are built by helppuff_crawl/devloop/serve_secrets.py (table tests here); the whole path runs
with the real `helppuff serve` (wrangler dev) and FakeRetriever (tests/test_cli_rag.py), a fake of the
owner's search service on 127.0.0.1, which shows what the start line claims: the chat is not asked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from helppuff_crawl.cloudflare.state import LOCAL_ACCOUNT, DeployState
from helppuff_crawl.devloop.serve_secrets import SERVE_BY, RunningServe, running_serve, unset_secret_notices
from tests.conftest import run_helppuff
from tests.devloop import free_port, serving, skip_without_toolchain, sse_events
from tests.test_cli_rag import FakeRetriever, fake  # noqa: F401 (fake: the fixture, used by name)

NAMES = ("SEARCH_TOKEN", "STORED_TOKEN", "LATE_TOKEN")


def _http(token: object) -> str:
    return json.dumps({"knowledge": {"retrieval": {"type": "http", "url": "https://s.example/q", "tokenEnv": token}}})


def _custom(*names: str) -> str:
    return json.dumps({"knowledge": {"retrieval": {"type": "custom", "module": "/m.ts", "secrets": list(names)}}})


def _unset_http(site: str, name: str) -> str:
    return (f"site {site}: its search server's token secret {name} is not set, so the chat cannot ask it "
            f'(it will say "not sure"): helppuff secret set {name}, then restart helppuff serve')


def test_a_line_for_each_site_whose_retriever_names_a_secret_serve_does_not_pass() -> None:
    rows = [
        ("shop", _http("SEARCH_TOKEN")),
        ("given", _http("GIVEN_TOKEN")),
        ("mod", _custom("KEY_A", "GIVEN_TOKEN", "KEY_B", "KEY_A")),
        ("mod1", _custom("KEY_A")),
        ("modok", _custom("GIVEN_TOKEN")),
        ("own", json.dumps({"knowledge": {"retrieval": {"type": "helppuff"}}})),
        ("plain", json.dumps({"backend": {"allowNoOrigin": True}})),
        ("none", None),
        ("broken", "{not json"),
        ("odd", json.dumps({"knowledge": {"retrieval": {"type": "http", "tokenEnv": 7}}})),
        ("list", "[]"),
    ]
    assert unset_secret_notices(rows, ["GIVEN_TOKEN", "RETELL_API_KEY"]) == [
        _unset_http("shop", "SEARCH_TOKEN"),
        'site mod: the secrets KEY_A, KEY_B its retriever module reads are not set, so its search may fail '
        '(the chat will say "not sure"): helppuff secret set KEY_A; helppuff secret set KEY_B, '
        "then restart helppuff serve",
        'site mod1: the secret KEY_A its retriever module reads is not set, so its search may fail '
        '(the chat will say "not sure"): helppuff secret set KEY_A, then restart helppuff serve',
    ]
    assert unset_secret_notices(rows, ["GIVEN_TOKEN", "SEARCH_TOKEN", "KEY_A", "KEY_B"]) == []


def test_a_serve_that_is_not_running_is_not_taken_for_one(tmp_path: Path) -> None:
    state = DeployState(tmp_path)
    assert running_serve(tmp_path) is None  # no state file
    # Its entry stays after serve stops: here this process is alive, but nothing answers on the port.
    state.record_worker(LOCAL_ACCOUNT, {"url": f"http://127.0.0.1:{free_port()}", "by": SERVE_BY,
                                        "pid": os.getpid(), "secrets": []})
    assert running_serve(tmp_path) is None
    state.record_worker(LOCAL_ACCOUNT, {"url": "https://helppuff.acme.workers.dev", "config": "/x.json"})
    assert running_serve(tmp_path) is None  # a deployed Worker, not serve
    (tmp_path / "state.json").write_text("{broken", encoding="utf-8")
    assert running_serve(tmp_path) is None


def test_serve_names_the_site_whose_token_secret_it_lacks_and_the_cli_says_when_to_restart_it(
        tmp_path: Path, fake: tuple[FakeRetriever, str], monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    skip_without_toolchain()
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    search, base = fake
    search.status = 200
    url = f"{base}/query"
    kb = tmp_path / "kb"

    def rag_set(site: str, token: str) -> list[str]:
        done = run_helppuff(tmp_path, "rag", "set", "http", "--site", site, "--url", url, "--token-env", token)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0] == f"{site}: the chat's passages come from {url} (POST, Authorization: Bearer ${token})"
        return lines[1:]

    def ask(token: str) -> str:
        return f"Set the token as the Worker secret {token}: helppuff secret set {token} (reads stdin)"

    for site in ("shop", "stored"):
        assert run_helppuff(tmp_path, "settings", "set", "-", "--site", site,
                            stdin='{"backend": {"allowNoOrigin": true}}').returncode == 0
    assert rag_set("shop", "SEARCH_TOKEN") == [ask("SEARCH_TOKEN")]  # no serve running: nothing about it
    assert rag_set("stored", "STORED_TOKEN") == [ask("STORED_TOKEN")]
    kept = run_helppuff(tmp_path, "secret", "set", "STORED_TOKEN", stdin="tok-stored")
    assert kept.stdout == (f"STORED_TOKEN: stored in {kb / 'worker-secrets.env'} for `helppuff serve`, "
                           "which passes it when it starts\n")
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(kb), "CLOUDFLARE_API_TOKEN": "", "CLOUDFLARE_ACCOUNT_ID": ""}
    port = free_port()
    worker = f"http://127.0.0.1:{port}"

    with serving(kb, env, tmp_path, port) as served:
        out = served.out.read_text().splitlines()
        assert [line for line in out if line.startswith("Warning")] == [
            f"Warning      {_unset_http('shop', 'SEARCH_TOKEN')}"], served.logs()
        assert "Traceback" not in served.err.read_text()
        record = DeployState(kb).account(LOCAL_ACCOUNT)["worker"]
        assert (record["by"], record["url"], record["secrets"]) == ("helppuff serve", worker, ["STORED_TOKEN"])

        # What the line says: the chat does not ask the search, and says it is not sure.
        before = len(search.requests)
        reply = httpx.post(f"{worker}/v1/sites/shop/chat", json={"messages": [
            {"role": "user", "content": "How much is the pipe wrapping?"}]}, timeout=60)
        assert reply.status_code == 200, reply.text
        answer = "".join(data["text"] for event, data in sse_events(reply.text) if event == "delta")
        assert "not sure" in answer.lower(), answer
        assert len(search.requests) == before

        running = f"helppuff serve is running ({worker}) and passes only the secrets it found when it started"
        assert running_serve(kb) == RunningServe(worker, frozenset({"STORED_TOKEN"}))
        assert rag_set("late", "LATE_TOKEN") == [
            ask("LATE_TOKEN"), f"{running}: helppuff secret set LATE_TOKEN, then restart it to pass LATE_TOKEN"]
        assert rag_set("also", "STORED_TOKEN") == [
            f"The Worker secret STORED_TOKEN is set already (kept for helppuff serve in {kb / 'worker-secrets.env'})",
            f"helppuff serve ({worker}) passes STORED_TOKEN already: the chat asks {url} from now on"]
        done = run_helppuff(tmp_path, "secret", "set", "SEARCH_TOKEN", stdin="tok-late")
        assert done.stdout == (f"SEARCH_TOKEN: stored in {kb / 'worker-secrets.env'} for `helppuff serve`; it is "
                               f"running ({worker}) and passes only the secrets it found when it started: "
                               "restart it to pass SEARCH_TOKEN\n")
        assert rag_set("shop", "SEARCH_TOKEN") == [
            f"The Worker secret SEARCH_TOKEN is set already (kept for helppuff serve in {kb / 'worker-secrets.env'})",
            f"{running}: restart it to pass SEARCH_TOKEN"]

    # Stopped: its state file entry stays (helppuff status reads the URL), but it is not taken as running.
    assert running_serve(kb) is None
    assert rag_set("late", "LATE_TOKEN") == [ask("LATE_TOKEN")]
