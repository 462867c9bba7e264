"""The operator's commands, run as a person runs them: separate processes, a real site on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(tmp_path / "kb"), "CLOUDFLARE_API_TOKEN": "",
           "CLOUDFLARE_ACCOUNT_ID": ""}
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["scrapy", "crawl", "site", "-a", "url=ftp://example.com"], "url: not a website address"),
        (["scrapy", "crawl", "site"], "url: required"),
        (["scrapy", "crawl", "site", "-a", "url=example.com", "-a", "max_pages=5000"], "max_pages: must be between"),
        (["scrapy", "crawl", "site", "-a", "url=example.com", "-a", "render_js=sometimes"], "render_js: must be one of"),
        (["scrapy", "crawl", "site", "-a", "url=example.com", "-a", "colour=blue"], "unknown argument colour"),
        (["helppuff", "crawl", "exa mple.com"], "url: not a website address"),
        (["helppuff", "crawl", "example.com", "--max-pages", "0"], "max_pages: must be between"),
        (["helppuff", "discover", "mailto:someone@example.com"], "url: not a website address"),
        # A component refusing a setting stops the crawl before it starts, in one line.
        (["helppuff", "crawl", "http://127.0.0.1:9", "-s", "HELPPUFF_EMBED_MODEL=@cf/x/y"],
         "helppuff crawl: HELPPUFF_EMBED_MODEL must be one of @cf/baai/bge-m3"),
        (["helppuff", "crawl", "http://127.0.0.1:9", "-s", "HELPPUFF_CHUNK_MAX_TOKENS=50"],
         "HELPPUFF_CHUNK_MIN_TOKENS / HELPPUFF_CHUNK_MAX_TOKENS"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    result = _run([str(BIN / args[0]), *args[1:]], tmp_path)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if message in line]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "kb").exists()  # nothing was started


def test_discover_lists_candidates_without_crawling(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    result = _run([str(BIN / "helppuff"), "discover", server.url, "--json"], tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    pages = {p["url"].removeprefix(server.url): p for p in report["pages"]}
    assert pages[""]["category"] == "home" and pages[""]["ticked"]
    assert pages["/services"]["ticked"] and pages["/sitemap-only"]["source"] == "sitemap"
    assert pages["/privacy"] == {**pages["/privacy"], "ticked": False, "reason": "legal page"}
    assert pages["/blog/2023/06/old-news"]["ticked"] is False
    # Discovery only: the home page's own links and the sitemaps, no page beyond them fetched.
    assert "/services/hot-water" in pages and "/quote-calculator" in pages
    assert report["discovery"]["fetches"] <= 50
    assert not (tmp_path / "kb").exists()  # discover writes nothing


def test_crawl_then_status(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    crawl = _run([str(BIN / "helppuff"), "crawl", server.url, "--site", "acme", "--render-js", "never"], tmp_path)
    assert crawl.returncode == 0, crawl.stderr
    assert "done" in crawl.stdout.splitlines()[0]
    status = _run([str(BIN / "helppuff"), "status", "--json"], tmp_path)
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    (site,) = report["sites"]
    assert site["site"] == "acme" and site["last_run"]["status"] == "done"
    assert site["pages"]["ok"] >= 15 and site["pages"]["unticked"] == 3  # /terms is learned now
    assert site["total"] == sum(site["pages"].values()) == site["last_run"]["pages_found"]


def test_crawl_of_a_loopback_site_with_private_addresses_refused(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # `helppuff crawl` allows loopback for a start URL on loopback (test_crawl_then_status), unless told not to.
    server = serve_site("acme-plumbing")
    before = len(server.requests)
    crawl = _run([str(BIN / "helppuff"), "crawl", server.url, "--site", "acme", "--render-js", "never",
                  "-s", "HELPPUFF_ALLOW_PRIVATE_ADDRESSES=false"], tmp_path)
    assert crawl.returncode == 1
    assert "home page skipped: refused: 127.0.0.1 is a loopback address" in crawl.stdout
    assert len(server.requests) == before  # nothing was sent to the site


def test_crawl_of_a_site_that_is_down_records_a_failed_run(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    crawl = _run([str(BIN / "helppuff"), "crawl", f"http://127.0.0.1:{port}", "--site", "down",
                  "-s", "RETRY_TIMES=0"], tmp_path)
    assert crawl.returncode == 1
    status = json.loads(_run([str(BIN / "helppuff"), "status", "--json", "--site", "down"], tmp_path).stdout)
    run = status["sites"][0]["last_run"]
    assert run["status"] == "failed"
    assert "robots.txt" in run["reason"] or "unreachable" in run["reason"]


def test_scrapy_crawl_site_fills_pages_and_crawl_runs(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    server = serve_site("acme-plumbing")
    result = _run([str(BIN / "scrapy"), "crawl", "site", "-a", f"url={server.url}", "-a", "site=acme",
                   "-a", "render_js=never", "-s", "LOG_LEVEL=WARNING"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as conn:
        runs = conn.execute("SELECT status, pages_found, pages_ok FROM crawl_runs").fetchall()
        pages = dict(conn.execute("SELECT status, COUNT(*) FROM pages GROUP BY status").fetchall())
    assert runs == [("done", sum(pages.values()), pages["ok"])]
    assert pages["ok"] >= 15 and pages["unticked"] == 3  # /terms is learned now
