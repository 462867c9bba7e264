"""The Worker secrets `helppuff deploy` names when the deployed Worker lacks them
(helppuff_crawl/deploy/secrets_needed.py): which each site's settings need, the lines for the missing
ones (names only), and, where the secrets cannot be listed (the local cloud has no Workers), a line
saying they were not checked and which are needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest_twisted

from helppuff_crawl.cli.deploy import _missing_secrets
from helppuff_crawl.deploy.secrets_needed import missing_secret_lines, needed_secrets, secret_names
from tests.conftest import run_async, run_helppuff
from tests.crawlers import project_defaults

ROWS = [
    ("acme", json.dumps({"backend": {"type": "openai"}})),
    ("bakery", json.dumps({"type": "retell"})),  # a bare backend object
    ("plumber", json.dumps({"knowledge": {"retrieval": {"source": "http", "url": "https://search.example/q",
                                                        "tokenEnv": "PLUMBER_SEARCH_TOKEN"}}})),
    ("plain", None),
]


def test_each_site_adds_the_secrets_its_settings_need() -> None:
    needed = needed_secrets(ROWS)
    assert list(needed) == ["OWNER_TOKEN", "OPENAI_API_KEY", "RETELL_API_KEY", "PLUMBER_SEARCH_TOKEN"]
    assert "dashboard" in needed["OWNER_TOKEN"] and "site acme answers with openai" in needed["OPENAI_API_KEY"]
    lines = missing_secret_lines(needed, secret_names([{"name": "OWNER_TOKEN", "type": "secret_text"},
                                                       {"name": "RETELL_API_KEY", "type": "secret_text"}]))
    assert [line.split()[1] for line in lines] == ["OPENAI_API_KEY", "PLUMBER_SEARCH_TOKEN"]
    assert all(line.startswith("  Secret ") and "helppuff secret set" in line for line in lines)


@pytest_twisted.inlineCallbacks
def test_secrets_that_cannot_be_listed_are_named_as_not_checked(tmp_path: Path):  # type: ignore[no-untyped-def]
    assert run_helppuff(tmp_path, "status").returncode == 0  # the database, with its migrations
    settings = {**project_defaults(), "HELPPUFF_DATA_DIR": str(tmp_path / "kb")}
    missing, lines = yield run_async(_missing_secrets(settings, "helppuff"))
    assert missing == []
    assert len(lines) == 1 and lines[0].startswith("  Secrets: not checked (") and lines[0].endswith("needed: OWNER_TOKEN")
