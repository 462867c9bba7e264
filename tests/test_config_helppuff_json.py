"""helppuff.json: checked against its schema with every problem named by field, the shared cases
the Worker's readers are held to as well, and `helppuff config` / `helppuff crawl --config`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl import settings as project
from helppuff_crawl.config.helppuff_json import (
    SCHEMA_PATH,
    ConfigError,
    config_problems,
    listed_files,
    parse_config,
    read_config,
    schema,
    website_arguments,
)
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


# --- knowledge.files stay inside the folder of helppuff.json ------------------------------------


def _site_folder(tmp_path: Path) -> Path:
    """tmp_path/site holding helppuff.json's documents, beside tmp_path/private holding a secret."""
    site, private = tmp_path / "site", tmp_path / "private"
    (site / "docs").mkdir(parents=True)
    private.mkdir()
    (private / "secret.txt").write_text("Server password: hunter2\n", encoding="utf-8")
    (site / "parking.md").write_text("# Parking\n\nTwo free spaces behind the workshop.\n", encoding="utf-8")
    (site / "docs" / "vouchers.txt").write_text("Gift vouchers\nSold at the front counter.\n", encoding="utf-8")
    (site / "docs" / "secret.txt").symlink_to(private / "secret.txt")  # a link that leads out
    (site / "private").symlink_to(private, target_is_directory=True)  # a folder on the way that leads out
    (site / "prices.md").symlink_to(site / "parking.md")  # a link that stays inside
    return site


def _config(folder: Path, files: list[str]) -> Path:
    path = folder / "helppuff.json"
    path.write_text(json.dumps({"backend": {"allowNoOrigin": True}, "knowledge": {"files": files}}), encoding="utf-8")
    return path


def test_listed_files_inside_the_folder_are_kept_with_their_own_names(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    site = _site_folder(tmp_path)
    entries = ["parking.md", "docs/vouchers.txt", "docs/../parking.md", "./prices.md", "missing.pdf"]
    path = _config(site, entries)
    assert listed_files(path, read_config(path)) == [site / entry for entry in entries]
    # helppuff.json named relative to the working folder: its entries are still relative to its own folder.
    monkeypatch.chdir(tmp_path)
    assert listed_files(Path("site/helppuff.json"), read_config(path)) == [site / entry for entry in entries]


@pytest.mark.parametrize(("entry", "how"), [
    pytest.param("../private/secret.txt", "with '..'", id="dot-dot"),
    pytest.param("docs/../../private/secret.txt", "with '..'", id="dot-dot-in-the-middle"),
    pytest.param("..", "with '..'", id="the-parent-itself"),
    pytest.param("docs/secret.txt", "through a symbolic link, to {private}/secret.txt", id="symlink"),
    pytest.param("private/secret.txt", "through a symbolic link, to {private}/secret.txt", id="symlinked-folder"),
])
def test_a_listed_file_outside_the_folder_is_refused_naming_the_entry(tmp_path: Path, entry: str, how: str) -> None:
    site = _site_folder(tmp_path)
    path = _config(site, ["parking.md", entry])
    with pytest.raises(ConfigError) as caught:
        read_config(path)
    how = how.format(private=(tmp_path / "private").resolve())
    assert caught.value.problems == [(f"knowledge.files.1: {entry!r} leads outside the folder of helppuff.json "
                                      f"({site}) {how}; only files inside it can be listed")]


def test_a_listed_file_in_a_loop_of_symbolic_links_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    site = _site_folder(tmp_path)
    (site / "a.md").symlink_to(site / "b.md")
    (site / "b.md").symlink_to(site / "a.md")
    path = _config(site, ["a.md"])
    with pytest.raises(ConfigError) as caught:
        read_config(path)
    problems = [problem.split(": ")[:2] for problem in caught.value.problems]
    assert problems == [["knowledge.files.0", "'a.md' cannot be resolved"]]


@pytest.mark.parametrize("entry", ["/etc/passwd", "{private}/secret.txt", "{site}/parking.md", "C:\\secret.txt",
                                   "\\\\server\\share\\secret.txt"])
def test_an_absolute_listed_file_is_refused_even_inside_the_folder(tmp_path: Path, entry: str) -> None:
    site = _site_folder(tmp_path)
    entry = entry.format(private=tmp_path / "private", site=site)
    path = _config(site, [entry])
    with pytest.raises(ConfigError) as caught:
        listed_files(path, parse_config(path.read_text(encoding="utf-8")))
    assert caught.value.problems == [(f"knowledge.files.0: {entry!r} is an absolute path; name the file relative "
                                      f"to the folder of helppuff.json ({site})")]


def test_config_check_names_every_listed_file_outside_the_folder(tmp_path: Path) -> None:
    site = _site_folder(tmp_path)
    path = _config(site, ["../private/secret.txt", "parking.md", "/etc/passwd", "docs/secret.txt"])
    checked = run_helppuff(tmp_path, "config", "check", str(path))
    assert checked.returncode == 1
    lines = checked.stdout.splitlines()
    assert lines[0] == f"{path}: 3 problems"
    assert [line.split(":")[0] for line in lines[1:]] == ["  knowledge.files.0", "  knowledge.files.2",
                                                          "  knowledge.files.3"]
    assert checked.stderr == ""


def test_config_apply_refuses_a_file_outside_the_folder_in_one_line_and_stores_nothing(tmp_path: Path) -> None:
    site = _site_folder(tmp_path)
    applied = run_helppuff(tmp_path, "config", "apply", str(_config(site, ["parking.md"])), "--site", "acme")
    assert applied.returncode == 0, applied.stdout + applied.stderr

    def stored() -> tuple[Any, ...]:
        kb = tmp_path / "kb"
        return (kb_rows(kb, "SELECT * FROM site_settings"), kb_rows(kb, "SELECT * FROM knowledge_files"),
                kb_rows(kb, "SELECT * FROM chunks"))

    before = stored()
    path = site / "helppuff.json"
    for entry in ["../private/secret.txt", str(tmp_path / "private" / "secret.txt"), "docs/secret.txt"]:
        path.write_text(json.dumps({"backend": {"allowNoOrigin": False},
                                    "knowledge": {"files": ["docs/vouchers.txt", entry]}}), encoding="utf-8")
        refused = run_helppuff(tmp_path, "config", "apply", str(path), "--site", "acme")
        assert refused.returncode == 2 and refused.stdout == "", entry
        assert refused.stderr.startswith(f"helppuff config: {path}: knowledge.files.1: {entry!r} "), refused.stderr
        assert len(refused.stderr.splitlines()) == 1 and "Traceback" not in refused.stderr
        # Nothing stored, nothing uploaded or removed: not the new settings, not vouchers.txt, not the secret.
        assert stored() == before
    assert not any("hunter2" in row["text"] for row in before[2])
