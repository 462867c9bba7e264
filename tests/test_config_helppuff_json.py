"""helppuff.json: checked against its schema with every problem named by field, the shared cases
the Worker's readers are held to as well, and `helppuff config` / `helppuff crawl --config`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl import settings as project
from helppuff_crawl.config.helppuff_json import SCHEMA_PATH, config_problems, parse_config, schema, website_arguments
from helppuff_crawl.web.categories import DEFAULT_EXCLUDE
from tests.conftest import kb_rows, run_helppuff

CASES = json.loads((SCHEMA_PATH.parent / "cases.json").read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", CASES, ids=[case["about"] for case in CASES])
def test_shared_cases(case: dict[str, Any]) -> None:
    problems = config_problems(case["config"])
    assert (problems == []) == case["valid"], problems


def test_every_problem_is_named_by_its_field_in_file_order() -> None:
    problems = config_problems({"backend": {
        "timezone": "Mars/Olympus", "retrieval": {"finalK": 50, "finalk": 3},
        "leads": {"webhookUrl": "http://example.com/x", "webhookSecret": "short"}}})
    assert problems == [
        "backend.leads.webhookSecret: 'short' is too short",
        "backend.leads.webhookUrl: 'http://example.com/x' is not an https:// URL (http:// only on 127.0.0.1, "
        "localhost or [::1])",
        "backend.retrieval: Additional properties are not allowed ('finalk' was unexpected)",
        "backend.retrieval.finalK: 50 is greater than the maximum of 20",
        "backend.timezone: 'Mars/Olympus' is not a time zone, e.g. \"Australia/Melbourne\"",
    ]


def test_the_crawl_defaults_in_the_schema_are_the_crawlers() -> None:
    website = schema()["properties"]["knowledge"]["properties"]["website"]["properties"]
    assert website["maxPages"]["default"] == project.HELPPUFF_MAX_PAGES
    assert website["renderJs"]["default"] == project.HELPPUFF_RENDER_JS
    assert website["exclude"]["default"] == list(DEFAULT_EXCLUDE)


def test_website_arguments_are_only_those_given() -> None:
    config = parse_config('{"knowledge": {"website": {"maxPages": 5, "exclude": [], "schedule": "weekly"}}}')
    assert website_arguments(config) == {"max_pages": 5, "exclude": []}
    assert website_arguments({}) == {}


def test_config_check_and_schema_commands(tmp_path: Path) -> None:
    good = tmp_path / "helppuff.json"
    good.write_text(json.dumps(CASES[1]["config"]), encoding="utf-8")
    checked = run_helppuff(tmp_path, "config", "check", str(good))
    assert checked.returncode == 0 and checked.stdout == f"{good}: fine\n"
    bad = tmp_path / "bad.json"
    bad.write_text('{"backend": {"maxAnswerSentences": 21, "tools": {"callback": "yes"}}}', encoding="utf-8")
    refused = run_helppuff(tmp_path, "config", "check", str(bad))
    assert refused.returncode == 1
    assert refused.stdout.splitlines() == [
        f"{bad}: 2 problems",
        "  backend.maxAnswerSentences: 21 is greater than the maximum of 20",
        "  backend.tools.callback: 'yes' is not of type 'boolean'",
    ]
    printed = run_helppuff(tmp_path, "config", "schema")
    assert json.loads(printed.stdout) == schema()


def test_crawl_takes_knowledge_website_from_the_config_and_the_command_line_wins(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    config = tmp_path / "helppuff.json"
    config.write_text(json.dumps({"knowledge": {"website": {
        "exclude": ["**/blog**"], "renderJs": "never", "maxPages": 40}}}), encoding="utf-8")
    crawl = run_helppuff(tmp_path, "crawl", server.url, "--site", "acme", "--config", str(config), "--max-pages", "6")
    assert crawl.returncode == 0, crawl.stdout + crawl.stderr
    pages = {row["url"].removeprefix(server.url): row for row in kb_rows(tmp_path / "kb", "SELECT * FROM pages")}
    assert pages["/blog"]["ticked"] == 0 and pages["/blog"]["tick_reason"] == "exclude glob '**/blog**'"
    run = kb_rows(tmp_path / "kb", "SELECT * FROM crawl_runs")[0]
    assert 0 < run["pages_ok"] <= 6  # --max-pages 6 beats the config's 40; the home page is one of the 6
    assert sum(row["reason"] == "over max_pages (6)" for row in pages.values()) > 0
    assert all(row["rendered"] == 0 for row in pages.values())
    broken = tmp_path / "broken.json"
    broken.write_text('{"knowledge": {"website": {"maxPages": 5000}}}', encoding="utf-8")
    refused = run_helppuff(tmp_path, "crawl", server.url, "--config", str(broken))
    assert refused.returncode == 2
    assert "knowledge.website.maxPages: 5000 is greater than the maximum of 1000" in refused.stderr


def test_config_apply_stores_the_settings_and_keeps_the_listed_files_in_step(tmp_path: Path) -> None:
    docs = tmp_path / "site"
    docs.mkdir()
    (docs / "parking.md").write_text("# Parking\n\nTwo free spaces behind the workshop.\n", encoding="utf-8")
    (docs / "vouchers.txt").write_text("Gift vouchers\nSold at the front counter.\n", encoding="utf-8")
    (docs / "by-hand.md").write_text("# Warranty\n\nTwelve months on workmanship.\n", encoding="utf-8")
    config = docs / "helppuff.json"

    def apply(files: list[str]) -> Any:
        config.write_text(json.dumps({"backend": {"allowNoOrigin": True}, "knowledge": {"files": files}}), encoding="utf-8")
        return run_helppuff(tmp_path, "config", "apply", str(config), "--site", "acme")

    def files() -> dict[str, Any]:
        listed = run_helppuff(tmp_path, "knowledge", "files", "--site", "acme", "--json")
        return {row["name"]: (row["status"], row["listed"]) for row in json.loads(listed.stdout)}

    first = apply(["parking.md", "vouchers.txt"])
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.splitlines()[1:] == ["  parking.md: learned, 1 passage", "  vouchers.txt: learned, 1 passage"]
    stored = json.loads(run_helppuff(tmp_path, "settings", "show", "--site", "acme", "--json").stdout)["settings"]
    assert stored["backend"] == {"allowNoOrigin": True}
    hand = run_helppuff(tmp_path, "knowledge", "upload", str(docs / "by-hand.md"), "--site", "acme")
    assert hand.returncode == 0, hand.stderr
    # vouchers.txt taken out of the list, parking.md changed, a listed file missing: only what the list says moves.
    (docs / "parking.md").write_text("# Parking\n\nThree free spaces behind the workshop.\n", encoding="utf-8")
    second = apply(["parking.md", "gone.pdf"])
    assert second.returncode == 1
    assert second.stdout.splitlines()[1:] == [
        "  parking.md: learned, 1 passage",
        "  gone.pdf: not learned: cannot read the file: No such file or directory",
        "  vouchers.txt: removed (no longer in knowledge.files)",
    ]
    assert files() == {"parking.md": ("ok", 1), "by-hand.md": ("ok", 0)}
    texts = [row["text"] for row in kb_rows(tmp_path / "kb", "SELECT text FROM chunks WHERE url LIKE 'helppuff://file/%'")]
    assert any("Three free spaces" in text for text in texts) and not any("Two free spaces" in text for text in texts)
    again = apply(["parking.md"])
    assert again.stdout.splitlines()[1:] == ["  parking.md: unchanged"]
