"""How long crawl jobs wait in the queue with one `helppuff worker` and with several, for the same jobs.

    .venv/bin/python bench/worker_queue.py [--sites 10] [--workers 1,3] [--pages 4] [--model @local/all-minilm-l6-v2]

A fixture site (tests/sites/acme-plumbing) is served on 127.0.0.1; SITES sites of it are made known to
a fresh local knowledge base (a finished run each, with a helppuff.json of at most PAGES pages, no
rendering), a full crawl job is queued for each with `helppuff recrawl`, and then N workers are started
side by side on the local cloud's queue, each a real process. When every job is handled the workers are
stopped (SIGTERM). Per round, from the jobs' rows (whole seconds, as D1 stores them): how long each job
waited from its request until a worker took it (median and max), how long its crawl took (median), and
the round's wall time from the first request to the last job handled. The same jobs run in each round,
each round on a fresh knowledge base. A benchmark, not a test: the machine's cores bound the speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.sitesserver import SiteServer  # noqa: E402

HELPPUFF = str(Path(sys.executable).parent / "helppuff")


def _seconds(later: str, earlier: str) -> float:
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return (datetime.strptime(later, stamp) - datetime.strptime(earlier, stamp)).total_seconds()


def round_of(server: SiteServer, workers: int, sites: int, pages: int, model: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="helppuff-bench-queue-") as folder:
        env = {**os.environ, "HELPPUFF_DATA_DIR": str(Path(folder) / "kb"), "CLOUDFLARE_API_TOKEN": "",
               "CLOUDFLARE_ACCOUNT_ID": "", "HELPPUFF_EMBED_MODEL": model, "HF_HUB_OFFLINE": "1"}
        subprocess.run([HELPPUFF, "status"], env=env, cwd=ROOT, check=True, capture_output=True)
        config = json.dumps({"knowledge": {"website": {"renderJs": "never", "maxPages": pages}}})
        names = [f"shop{i:02d}" for i in range(sites)]
        with sqlite3.connect(Path(folder) / "kb" / "d1" / "helppuff.sqlite3") as db:
            for name in names:
                db.execute("INSERT INTO crawl_runs (id, site, start_url, status, started_at, finished_at, heartbeat_at) "
                           "VALUES (?, ?, ?, 'done', '2026-11-01T10:00:00Z', '2026-11-01T10:05:00Z', "
                           "'2026-11-01T10:05:00Z')", [f"seed-{name}", name, server.url])
                db.execute("INSERT INTO site_settings (site, settings, updated_at) VALUES (?, ?, '2026-11-01T10:00:00Z')",
                           [name, config])
        for name in names:
            subprocess.run([HELPPUFF, "recrawl", "--site", name], env=env, cwd=ROOT, check=True, capture_output=True)
        started = time.monotonic()
        procs = [subprocess.Popen([HELPPUFF, "worker", "-s", "HELPPUFF_QUEUE_POLL=0.5", "-s", "HELPPUFF_QUEUE_RETRIES=false"],
                                  env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                 for _ in range(workers)]
        database = Path(folder) / "kb" / "d1" / "helppuff.sqlite3"

        def jobs() -> list[dict[str, Any]]:
            conn = sqlite3.connect(database)
            conn.row_factory = sqlite3.Row
            try:
                return [dict(r) for r in conn.execute("SELECT * FROM crawl_requests")]
            finally:
                conn.close()

        while not all(job["handled_at"] for job in jobs()):
            time.sleep(0.5)
        wall = time.monotonic() - started
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        lines = [line for proc in procs for line in proc.communicate()[0].splitlines()]
        rows = jobs()
    waits = [_seconds(job["taken_at"], job["requested_at"]) for job in rows]
    crawls = [_seconds(job["handled_at"], job["taken_at"]) for job in rows]
    done = sum("done" in line for line in lines)
    return {"workers": workers, "jobs": len(rows), "done": done, "wait_median": statistics.median(waits),
            "wait_max": max(waits), "crawl_median": statistics.median(crawls), "wall": wall,
            "takers": len({job["taken_by"] for job in rows})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=10)
    parser.add_argument("--workers", default="1,3")
    parser.add_argument("--pages", type=int, default=4)
    parser.add_argument("--model", default="@local/all-minilm-l6-v2")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    print(f"{args.sites} full crawl jobs of <= {args.pages} pages each ({args.model}), on {os.cpu_count()} cores")
    print(f"{'workers':>7} {'done':>6} {'wait median s':>14} {'wait max s':>11} {'crawl median s':>15} "
          f"{'wall s':>8} {'took jobs':>10}")
    results = []
    with SiteServer(ROOT / "tests" / "sites" / "acme-plumbing") as server:
        for count in counts:
            r = round_of(server, count, args.sites, args.pages, args.model)
            results.append(r)
            print(f"{r['workers']:>7} {r['done']:>3}/{r['jobs']:<2} {r['wait_median']:>14.0f} {r['wait_max']:>11.0f} "
                  f"{r['crawl_median']:>15.0f} {r['wall']:>8.1f} {r['takers']:>10}", flush=True)
    if len(results) > 1:
        base = results[0]
        for r in results[1:]:
            print(f"{r['workers']} workers against {base['workers']}: wait median x{r['wait_median'] / max(base['wait_median'], 1):.2f}, "
                  f"wall x{r['wall'] / base['wall']:.2f}")


if __name__ == "__main__":
    main()
