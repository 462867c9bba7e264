"""`helppuff status`: for a site whose backend.type is retell, the Retell custom function to paste into
Retell, with the Worker's URL from the state file (deploy's, else serve's, else a placeholder said as
such); and `helppuff serve`'s env file passing RETELL_API_KEY to the Worker only when it is set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.cloudflare.state import LOCAL_ACCOUNT, DeployState
from helppuff_crawl.devloop.server import DevOptions
from helppuff_crawl.devloop.worker_secrets import secret_lines
from tests.conftest import run_helppuff

RETELL = {"backend": {"type": "retell", "retrieval": "helppuff"}}


def _store(tmp_path: Path, site: str, config: dict[str, Any]) -> None:
    path = tmp_path / f"{site}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    stored = run_helppuff(tmp_path, "settings", "set", str(path), "--site", site)
    assert stored.returncode == 0, stored.stdout + stored.stderr


def _status(tmp_path: Path, site: str, *more: str) -> Any:
    shown = run_helppuff(tmp_path, "status", "--site", site, *more)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    return shown


def _entry(tmp_path: Path, site: str) -> dict[str, Any]:
    return json.loads(_status(tmp_path, site, "--json").stdout)["sites"][0]  # type: ignore[no-any-return]


def _expected_function(url: str) -> dict[str, Any]:
    return {
        "name": "search_knowledge_base",
        "description": ("Search the business's website knowledge base (its pages, documents and own answers) "
                        "for what the caller asks about the business: services, prices, areas, hours, bookings, "
                        "policies. Returns the matching passages as text, each with its title and source; "
                        "answer only from them, and say so when nothing was found."),
        "url": url,
        "method": "POST",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": (
                "The caller's question as a short search on its own, e.g. \"how much is a call-out on weekends\".")}},
            "required": ["query"],
        },
    }


def test_a_retell_site_without_a_worker_url_gets_the_placeholder_said_as_such(tmp_path: Path) -> None:
    _store(tmp_path, "acme", RETELL)
    entry = _entry(tmp_path, "acme")
    assert entry["retell"] == {
        "function": _expected_function("<worker url>/v1/sites/acme/retell/kb"),
        "worker_url": None,
        "worker_url_from": "none yet: `helppuff deploy` (or `helppuff serve` here) records it",
    }
    lines = _status(tmp_path, "acme").stdout.splitlines()
    assert [line for line in lines if "Retell" in line] == [
        "  Retell: custom function search_knowledge_base at <worker url>/v1/sites/acme/retell/kb "
        "(<worker url> is a placeholder: none yet: `helppuff deploy` (or `helppuff serve` here) records it); "
        "`helppuff status --json` prints its definition"]


@pytest.mark.parametrize(("details", "source"), [
    ({"url": "https://helppuff.acme.workers.dev", "config": "/x/wrangler.deploy.json"}, "helppuff deploy"),
    ({"url": "http://127.0.0.1:8787/", "by": "helppuff serve"}, "helppuff serve"),
])
def test_the_function_url_is_the_workers_from_the_state_file(tmp_path: Path, details: dict[str, str],
                                                             source: str) -> None:
    _store(tmp_path, "acme", RETELL)
    DeployState(tmp_path / "kb").record_worker(LOCAL_ACCOUNT, details)
    entry = _entry(tmp_path, "acme")
    base = details["url"].rstrip("/")
    assert entry["retell"]["function"] == _expected_function(f"{base}/v1/sites/acme/retell/kb")
    assert (entry["retell"]["worker_url"], entry["retell"]["worker_url_from"]) == (details["url"], source)
    assert (f"  Retell: custom function search_knowledge_base at {base}/v1/sites/acme/retell/kb; "
            "`helppuff status --json` prints its definition") in _status(tmp_path, "acme").stdout.splitlines()


@pytest.mark.parametrize("config", [
    {"backend": {"allowNoOrigin": True}},
    {"backend": {"type": "openai", "retrieval": "helppuff"}},
    {"backend": {"type": "workers-ai"}},
])
def test_a_site_of_another_backend_has_no_retell_function(tmp_path: Path, config: dict[str, Any]) -> None:
    _store(tmp_path, "acme", config)
    assert "retell" not in _entry(tmp_path, "acme")
    assert "Retell" not in _status(tmp_path, "acme").stdout


def test_a_retell_config_without_retrieval_is_refused_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "helppuff.json"
    path.write_text('{"backend": {"type": "retell"}}', encoding="utf-8")
    checked = run_helppuff(tmp_path, "config", "check", str(path))
    assert checked.returncode == 1
    assert checked.stdout.splitlines()[1:] == [
        '  backend.retrieval: missing; must be "helppuff" when backend.type is retell']


def test_serve_passes_retell_api_key_only_when_set(tmp_path: Path) -> None:
    assert secret_lines("key_0f3e2d1c") == "RETELL_API_KEY=key_0f3e2d1c\n"
    assert secret_lines("") == ""
    options = DevOptions(data_dir=tmp_path, retell_api_key="key_0f3e2d1c")
    assert "key_0f3e2d1c" not in repr(options)
    with pytest.raises(ValueError, match="RETELL_API_KEY must be one line"):
        DevOptions(data_dir=tmp_path, retell_api_key="key\nHELPPUFF_LOCAL_CLOUD_URL=http://elsewhere")
