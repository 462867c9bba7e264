"""`helppuff worker`s as real processes on one local cloud queue: two side by side take each job once;
one killed with kill -9 mid-job leaves its job to another after the visibility timeout, with no run
left running; SIGTERM finishes in hand, records the run stopped and puts the job back; a job that
keeps failing ends dead with its reason in `helppuff status`; a crawl's failed pages come back as a
delayed retry job; an ack refused once does not end a long-running worker."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.clock import iso, utc_now
from tests.conftest import kb_rows, run_helppuff

HELPPUFF = str(Path(sys.executable).parent / "helppuff")
ROOT = Path(__file__).parent.parent
SMALL = {"knowledge": {"website": {"renderJs": "never", "maxPages": 4}}}


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "HELPPUFF_DATA_DIR": str(tmp_path / "kb"), "CLOUDFLARE_API_TOKEN": "",
            "CLOUDFLARE_ACCOUNT_ID": "", "HELPPUFF_EMBED_MODEL": "@local/all-minilm-l6-v2", **extra}


def _known_sites(tmp_path: Path, start_url: str, sites: list[str], config: dict[str, Any] = SMALL) -> None:
    """Sites the knowledge base knows: a finished run each (where a crawl starts), and their helppuff.json."""
    assert run_helppuff(tmp_path, "status").returncode == 0  # the database, with its migrations
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as db:
        for site in sites:
            db.execute("INSERT INTO crawl_runs (id, site, start_url, status, started_at, finished_at, heartbeat_at) "
                       "VALUES (?, ?, ?, 'done', '2026-11-01T10:00:00Z', '2026-11-01T10:05:00Z', "
                       "'2026-11-01T10:05:00Z')", [f"seed-{site}", site, start_url])
            db.execute("INSERT INTO site_settings (site, settings, updated_at) VALUES (?, ?, '2026-11-01T10:00:00Z')",
                       [site, json.dumps(config)])


def _recrawl(tmp_path: Path, site: str, *args: str) -> str:
    done = run_helppuff(tmp_path, "recrawl", "--site", site, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[1]  # "job <id> for <site>: ..."


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(*args: str, **env: str) -> subprocess.Popen[str]:
        process = subprocess.Popen([HELPPUFF, "worker", *args], cwd=ROOT, env=_env(tmp_path, **env),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.communicate()


def _wait(predicate: Callable[[], Any], timeout: float, what: str,
          watch: tuple[subprocess.Popen[str], ...] = (), tmp_path: Path | None = None) -> Any:
    """predicate()'s first true value; on timeout, the watched workers are stopped and what they
    printed (and the jobs' rows) goes into the failure, so that a slow or stuck run says which."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.2)
    report = [f"timed out waiting for {what} after {timeout:.0f} s"]
    for process in watch:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        report.append(f"worker {process.pid} (exit {process.returncode}) stdout:\n{out}\nstderr (end):\n{err[-4000:]}")
    if tmp_path is not None:
        report += [f"job {job}" for job in _jobs(tmp_path)]
        report += [f"run {run}" for run in kb_rows(tmp_path / "kb", "SELECT id, site, status, reason, pid, started_at, "
                                                                    "finished_at, heartbeat_at FROM crawl_runs")]
    raise AssertionError("\n".join(report))


def _jobs(tmp_path: Path) -> list[dict[str, Any]]:
    return kb_rows(tmp_path / "kb", "SELECT * FROM crawl_requests ORDER BY requested_at, id")


def test_two_workers_take_each_job_once(serve_site, tmp_path: Path, workers) -> None:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    sites = [f"shop{i}" for i in range(4)]
    _known_sites(tmp_path, server.url, sites)
    requests = [_recrawl(tmp_path, site) for site in sites]
    pair = [workers("-s", "HELPPUFF_QUEUE_POLL=0.3", "-s", "HELPPUFF_QUEUE_RETRIES=false") for _ in range(2)]
    # The four jobs asked for (a page that failed under load would add a delayed retry job: not this test's).
    _wait(lambda: all(job["handled_at"] for job in _jobs(tmp_path) if job["id"] in requests), 240,
          "every job handled", tuple(pair), tmp_path)
    for process in pair:
        process.send_signal(signal.SIGTERM)
    outputs = [process.communicate(timeout=60) for process in pair]
    assert [process.returncode for process in pair] == [0, 0], outputs
    lines = [line for out, _ in outputs for line in out.splitlines()]
    assert sorted(line.split()[1] for line in lines) == sorted(requests)  # each job once, by one worker
    assert all("done (finished)" in line for line in lines), lines
    assert all(out.strip() for out, _ in outputs), "both workers took jobs"
    runs = kb_rows(tmp_path / "kb", "SELECT site, status, COUNT(*) AS n FROM crawl_runs WHERE id NOT LIKE 'seed-%' "
                                    "GROUP BY site, status ORDER BY site")
    assert [(r["site"], r["status"], r["n"]) for r in runs] == [(site, "done", 1) for site in sites]
    handled = {job["id"]: job for job in _jobs(tmp_path)}
    takers = {handled[request]["taken_by"] for request in requests}
    assert len(takers) == 2 and all(handled[r]["run_id"] for r in requests)


def test_a_worker_killed_mid_job_leaves_it_to_another(serve_site, tmp_path: Path, workers) -> None:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    _known_sites(tmp_path, server.url, ["slow"], {"knowledge": {"website": {"renderJs": "never", "maxPages": 8}}})
    request = _recrawl(tmp_path, "slow")
    fast_expiry = ("-s", "HELPPUFF_QUEUE_VISIBILITY=4", "-s", "HELPPUFF_RUN_STALE_AFTER=3",
                   "-s", "HELPPUFF_RUN_HEARTBEAT=1", "-s", "HELPPUFF_QUEUE_POLL=0.3", "-s", "DOWNLOAD_DELAY=1",
                   "-s", "HELPPUFF_QUEUE_RETRIES=false")
    first = workers(*fast_expiry)
    running = _wait(lambda: kb_rows(tmp_path / "kb", "SELECT id, pid FROM crawl_runs WHERE status = 'running'"),
                    60, "the first worker's crawl to start", (first,), tmp_path)
    crawl_pid = int(running[0]["pid"])
    first.kill()  # kill -9: no ack, no release
    first.communicate()
    _wait(lambda: not _alive(crawl_pid), 10, "the crawl to die with its worker")
    assert _jobs(tmp_path)[0]["handled_at"] is None

    second = workers(*fast_expiry)
    job = _wait(lambda: next((j for j in _jobs(tmp_path) if j["handled_at"]), None), 120, "the job redone",
                (second,), tmp_path)
    second.send_signal(signal.SIGTERM)
    out, err = second.communicate(timeout=60)
    # Delivered again once the visibility timeout passed; put back while the dead worker's beat was
    # still fresh (at most HELPPUFF_RUN_STALE_AFTER), then taken and done.
    lines = out.splitlines()
    assert all(line == f"job {request} (slow): another worker is on it; back in the queue" for line in lines[:-1]), out
    assert lines[-1].startswith(f"job {request} (slow, full): run ") and "done (finished)" in lines[-1], out + err
    assert job["attempts"] == 2 and job["taken_by"].endswith(f":{second.pid}")
    runs = kb_rows(tmp_path / "kb", "SELECT id, status, reason FROM crawl_runs WHERE id NOT LIKE 'seed-%' "
                                    "ORDER BY started_at, id")
    assert [r["status"] for r in runs] == ["failed", "done"] and runs[0]["reason"].startswith("abandoned: ")
    assert runs[1]["id"] == job["run_id"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigterm_stops_the_crawl_and_puts_the_job_back(serve_site, tmp_path: Path, workers) -> None:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    _known_sites(tmp_path, server.url, ["slow"], {"knowledge": {"website": {"renderJs": "never", "maxPages": 10}}})
    request = _recrawl(tmp_path, "slow")
    worker = workers("-s", "DOWNLOAD_DELAY=1", "-s", "HELPPUFF_QUEUE_RETRIES=false")
    _wait(lambda: kb_rows(tmp_path / "kb", "SELECT id FROM crawl_runs WHERE status = 'running'"), 60, "the crawl",
          (worker,), tmp_path)
    time.sleep(2)  # a page or two in hand
    worker.send_signal(signal.SIGTERM)
    out, err = worker.communicate(timeout=90)
    assert worker.returncode == 0, err
    assert out.startswith(f"job {request} (slow, full): interrupted (run ") and "back in the queue" in out, out
    stopped = kb_rows(tmp_path / "kb", "SELECT status, reason, pages_found FROM crawl_runs WHERE status != 'done' "
                                       "OR id NOT LIKE 'seed-%'")
    assert len(stopped) == 1 and stopped[0]["status"] == "failed" and stopped[0]["reason"].startswith("interrupted: ")
    # Put back at once: the next worker takes it and finishes it.
    again = run_helppuff(tmp_path, "worker", "--once", "-s", "HELPPUFF_QUEUE_RETRIES=false")
    assert again.returncode == 0 and again.stdout.startswith(f"job {request} (slow, full): run "), again.stdout
    assert _jobs(tmp_path)[0]["handled_at"] and _jobs(tmp_path)[0]["attempts"] == 2


def test_a_job_that_keeps_failing_is_given_up_with_its_reason(tmp_path: Path, workers) -> None:  # type: ignore[no-untyped-def]
    _known_sites(tmp_path, "http://127.0.0.1:9/", ["down"])  # nothing listens on port 9
    request = _recrawl(tmp_path, "down")
    worker = workers("-s", "HELPPUFF_QUEUE_MAX_RETRIES=1", "-s", "HELPPUFF_RETRY_DELAYS=1",
                     "-s", "HELPPUFF_QUEUE_POLL=0.3", "-s", "HELPPUFF_QUEUE_RETRIES=false",
                     "-s", "RETRY_TIMES=0", "-s", "DOWNLOAD_TIMEOUT=3")
    _wait(lambda: _jobs(tmp_path)[0]["dead_at"], 180, "the job given up", (worker,), tmp_path)
    worker.send_signal(signal.SIGTERM)
    out, _ = worker.communicate(timeout=60)
    lines = out.splitlines()
    assert lines[0].startswith(f"job {request} (down, full): failed (run ") and "tried again in 1 s" in lines[0]
    assert lines[1].startswith(f"job {request} (down, full): given up: failed 2 times; last: run ")
    status = run_helppuff(tmp_path, "status", "--site", "down")
    assert f"dead job {request} (full), given up" in status.stdout and "after 2 tries: failed 2 times" in status.stdout
    assert json.loads(run_helppuff(tmp_path, "status", "--json").stdout)["sites"][0]["dead_jobs"][0]["id"] == request


def test_failed_pages_come_back_as_one_delayed_retry_job(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    crawled = run_helppuff(tmp_path, "crawl", server.url, "--site", "acme", "--render-js", "never")
    assert crawled.returncode == 0, crawled.stderr
    failed = kb_rows(tmp_path / "kb", "SELECT url, next_retry_at FROM pages WHERE next_retry_at IS NOT NULL ORDER BY url")
    assert failed, "the fixture site has pages that fail (a 503)"
    jobs = [job for job in _jobs(tmp_path) if job["handled_at"] is None]
    assert len(jobs) == 1 and jobs[0]["kind"] == "retry" and jobs[0]["queued_for"] == jobs[0]["not_before"]
    assert sorted(json.loads(jobs[0]["urls"])) == [row["url"] for row in failed]
    assert jobs[0]["not_before"] == min(row["next_retry_at"] for row in failed) > iso(utc_now())
    # Not due: a worker takes nothing yet; a full recrawl asked now replaces it, due at once.
    assert run_helppuff(tmp_path, "worker", "--once").stdout == ""
    replaced = run_helppuff(tmp_path, "recrawl", "--site", "acme")
    assert replaced.stdout.startswith(f"job {jobs[0]['id']} for acme: full, due ")
    assert "sent to the queue" in replaced.stdout  # due earlier than the retry's message: sent again


def test_a_job_naming_pages_recrawls_those_pages_only(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    model = ("-s", "HELPPUFF_EMBED_MODEL=@local/all-minilm-l6-v2", "-s", "HELPPUFF_QUEUE_RETRIES=false")
    crawled = run_helppuff(tmp_path, "crawl", server.url, "--site", "acme", "--render-js", "never", *model)
    assert crawled.returncode == 0, crawled.stderr
    before = {row["url"]: row for row in kb_rows(tmp_path / "kb", "SELECT url, run_id, fetched_at FROM pages")}
    named = [f"{server.url}/services", f"{server.url}/contact"]
    asked = run_helppuff(tmp_path, "recrawl", "--site", "acme", *named, "https://elsewhere.example/x", *model)
    assert asked.stdout.splitlines()[0] == "refused https://elsewhere.example/x: not on " + server.url.split("//")[1]
    seen = len(server.requests)
    done = run_helppuff(tmp_path, "worker", "--once", *model)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("job ") and "(acme, urls, 2 pages): run " in done.stdout and "done" in done.stdout
    assert sorted(server.requests[seen:]) == ["/contact", "/robots.txt", "/services"]
    after = {row["url"]: row for row in kb_rows(tmp_path / "kb", "SELECT url, run_id, fetched_at FROM pages")}
    changed = {url for url in after if after[url] != before.get(url)}
    assert changed == {normal for normal in after if normal.endswith(("/services", "/contact"))}


def _refusing_worker(serve_site, tmp_path: Path, refuse: str, *options: str) -> tuple[str, subprocess.Popen[str]]:  # type: ignore[no-untyped-def]
    """A recrawl of the served acme site asked for, and a worker that Cloudflare refuses `refuse` once
    (tests/refusing_worker.py); the job's id and the worker."""
    server = serve_site("acme-plumbing")
    _known_sites(tmp_path, server.url, ["acme"])
    request = _recrawl(tmp_path, "acme")
    worker = subprocess.Popen([sys.executable, str(ROOT / "tests" / "refusing_worker.py"), refuse, *options],
                              cwd=ROOT, env={**_env(tmp_path), "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    return request, worker


def test_a_refused_ack_does_not_end_a_long_running_worker(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # A worker whose first ack Cloudflare Queues refuses (tests/refusing_worker.py: a fake of that
    # edge, after the client's own retries), its crawl a real `helppuff crawl` child.
    request, worker = _refusing_worker(serve_site, tmp_path, "ack", "-s", "HELPPUFF_QUEUE_VISIBILITY=2",
                                       "-s", "HELPPUFF_QUEUE_POLL=0.3")
    try:
        # The message comes back after its lease, finds its job done, and is acknowledged then.
        _wait(lambda: any(r["status"] == "done" for r in kb_rows(tmp_path / "kb", "SELECT status FROM crawl_runs "
                                                                  "WHERE id NOT LIKE 'seed-%'")), 90, "the crawl")
        # The 2 s lease ends, the message is pulled again and acknowledged: the queue is empty.
        queue = tmp_path / "kb" / "queues" / "queues.sqlite3"
        _wait(lambda: sqlite3.connect(queue).execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0,
              60, "the message acknowledged")
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
    assert worker.returncode == 1, out + err  # a message it could not acknowledge is reported, not fatal
    assert "queue: queues/" in err and "HTTP 500: 10001: Internal error (after 4 attempts)" in err, err
    assert "comes back when its lease ends" in err and "Traceback" not in err, err
    assert out.strip().splitlines()[-1] == f"job {request} (acme): already done; message acknowledged", out + err
    assert _jobs(tmp_path)[0]["handled_at"] is not None


def test_a_refused_beat_does_not_abandon_the_crawl(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # The worker's first beat of its job is refused by D1 (tests/refusing_worker.py: a fake of that edge,
    # after the client's own retries) while a real `helppuff crawl` child runs, a page a second.
    request, worker = _refusing_worker(serve_site, tmp_path, "beat", "-s", "HELPPUFF_RUN_HEARTBEAT=0.5",
                                       "-s", "HELPPUFF_QUEUE_POLL=0.3", "-s", "DOWNLOAD_DELAY=1",
                                       "-s", "HELPPUFF_QUEUE_RETRIES=false")
    job = _wait(lambda: _jobs(tmp_path)[0]["handled_at"] and _jobs(tmp_path)[0], 120, "the job done", (worker,), tmp_path)
    worker.send_signal(signal.SIGTERM)
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, out + err
    assert f"job {request}: beat not recorded: d1/database/query: HTTP 500: 7500: Internal error (after 4 attempts); " \
           "the crawl goes on" in err and "Traceback" not in err, err
    assert out.startswith(f"job {request} (acme, full): run ") and "done (finished)" in out, out + err
    assert job["attempts"] == 1 and job["taken_by"].endswith(f":{worker.pid}") and job["beat_at"]
    runs = kb_rows(tmp_path / "kb", "SELECT id, status FROM crawl_runs WHERE id NOT LIKE 'seed-%'")
    assert [(r["id"], r["status"]) for r in runs] == [(job["run_id"], "done")]


def test_a_discover_job_lists_the_pages_of_a_site_added_from_the_dashboard(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    assert run_helppuff(tmp_path, "status").returncode == 0  # the database, with its migrations
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as db:  # as the dashboard adds a site
        db.execute("INSERT INTO site_discoveries (site, start_url, asked_at) VALUES ('newshop', ?, ?)",
                   [server.url, iso(utc_now())])
        db.execute("INSERT INTO site_settings (site, settings, updated_at) VALUES ('newshop', ?, ?)",
                   [json.dumps({"knowledge": {"website": {"exclude": ["/team-members"]}}}), iso(utc_now())])
    request = _recrawl(tmp_path, "newshop", "--discover")
    done = run_helppuff(tmp_path, "worker", "--once", "-s", "HELPPUFF_QUEUE_RETRIES=false")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"job {request} (newshop, discover): discovered ") and "ticked)" in done.stdout
    (row,) = kb_rows(tmp_path / "kb", "SELECT * FROM site_discoveries")
    pages = {page["url"].removeprefix(server.url): page for page in json.loads(row["pages"])}
    assert (row["state"], row["reason"], row["start_url"]) == ("done", "", server.url)
    assert pages["/pricing"]["ticked"] is True and pages["/pricing"]["category"] == "pricing"
    assert pages["/team-members"]["ticked"] is False  # the site's stored exclude glob, as its crawl would
    assert "team-members" in pages["/team-members"]["reason"]
    assert kb_rows(tmp_path / "kb", "SELECT COUNT(*) AS n FROM crawl_runs") == [{"n": 0}]  # nothing crawled
    assert kb_rows(tmp_path / "kb", "SELECT COUNT(*) AS n FROM pages") == [{"n": 0}]


def test_a_discover_that_finds_nothing_says_why(tmp_path: Path) -> None:
    assert run_helppuff(tmp_path, "status").returncode == 0
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as db:
        db.execute("INSERT INTO site_discoveries (site, start_url, asked_at) VALUES ('down', 'http://127.0.0.1:9/', ?)",
                   [iso(utc_now())])
    request = _recrawl(tmp_path, "down", "--discover")
    done = run_helppuff(tmp_path, "worker", "--once", "-s", "HELPPUFF_QUEUE_RETRIES=false", "-s", "RETRY_TIMES=0")
    assert done.stdout.startswith(f"job {request} (down, discover): discovered nothing: "), done.stdout
    (row,) = kb_rows(tmp_path / "kb", "SELECT state, reason, pages FROM site_discoveries")
    assert (row["state"], row["pages"]) == ("failed", "[]") and row["reason"]
    assert [job["handled_at"] is not None for job in _jobs(tmp_path)] == [True]  # the owner asks again


def test_a_detect_job_reads_the_business_details_from_the_pages_kept(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    crawled = run_helppuff(tmp_path, "crawl", server.url, "--site", "acme", "--render-js", "never")
    assert crawled.returncode == 0, crawled.stderr
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as db:  # a detail the crawl read, lost
        db.execute("DELETE FROM facts WHERE site = 'acme' AND key IN ('email', 'emails')")
        db.execute("DELETE FROM crawl_requests")  # the crawl's delayed retry of its failed pages: not this test's
    before = kb_rows(tmp_path / "kb", "SELECT COUNT(*) AS n FROM crawl_runs")
    request = _recrawl(tmp_path, "acme", "--detect")
    done = run_helppuff(tmp_path, "worker", "--once", "-s", "HELPPUFF_QUEUE_RETRIES=false")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"job {request} (acme, detect): read ") and "stored: email" in done.stdout, done.stdout
    assert kb_rows(tmp_path / "kb", "SELECT source FROM facts WHERE site = 'acme' AND key = 'email'") == [{"source": "crawl"}]
    assert kb_rows(tmp_path / "kb", "SELECT COUNT(*) AS n FROM crawl_runs") == before  # nothing crawled
