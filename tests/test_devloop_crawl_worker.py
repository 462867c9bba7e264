"""The crawl worker `helppuff serve` runs beside the Worker (helppuff_crawl/devloop/crawl_worker.py):
a real `helppuff worker` process on serve's knowledge base takes a job asked for after it started
(a test site served on loopback), runs its crawl, and stops on SIGTERM with serve."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helppuff_crawl.devloop.crawl_worker import POLL_SECONDS, CrawlWorker, worker_command
from tests.conftest import kb_rows
from tests.test_worker import _env, _jobs, _known_sites, _recrawl, _wait


def test_the_command_is_the_worker_on_serves_knowledge_base(tmp_path: Path) -> None:
    command = worker_command(tmp_path / "kb", "helppuff")
    assert command[1:] == ["worker", "-s", f"HELPPUFF_DATA_DIR={tmp_path / 'kb'}", "-s", "HELPPUFF_D1_DATABASE=helppuff",
                           "-s", f"HELPPUFF_QUEUE_POLL={POLL_SECONDS:g}"]


def test_serves_worker_runs_a_job_asked_for_after_it_started(serve_site, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve_site("acme-plumbing")
    _known_sites(tmp_path, server.url, ["acme"])
    for name, value in _env(tmp_path).items():
        if os.environ.get(name) != value:
            monkeypatch.setenv(name, value)
    worker = CrawlWorker(tmp_path / "kb", "helppuff")
    worker.start()
    try:
        assert worker.running()
        request = _recrawl(tmp_path, "acme")  # as the dashboard asks: a row and a message on the local queue
        _wait(lambda: next((job for job in _jobs(tmp_path) if job["id"] == request and job["handled_at"]), None),
              240, "the job handled", (), tmp_path)
    finally:
        worker.stop()
    assert not worker.running()
    runs = kb_rows(tmp_path / "kb", "SELECT status FROM crawl_runs WHERE id NOT LIKE 'seed-%'")
    assert runs == [{"status": "done"}]
