"""A crawl killed with SIGKILL mid-crawl, then started again, ends with D1 and Vectorize
consistent (no orphan vectors, no missing ones), and the killed run is marked failed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from bench.sitegen import GeneratedSite

ROOT = Path(__file__).resolve().parent.parent
HELPPUFF = str(Path(sys.executable).parent / "helppuff")


def _ok_pages(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM pages WHERE status = 'ok'").fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def test_kill_9_mid_crawl_then_recrawl_is_consistent(tmp_path: Path) -> None:
    site = GeneratedSite(40, delay=0.05)
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(tmp_path / "kb"), "CLOUDFLARE_API_TOKEN": "",
           "CLOUDFLARE_ACCOUNT_ID": ""}
    args = [HELPPUFF, "crawl", site.url, "--site", "gen", "--render-js", "never",
            "-s", "HELPPUFF_EMBED_BATCH_SIZE=4", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1",
            "-s", "AUTOTHROTTLE_ENABLED=False"]
    db = tmp_path / "kb" / "d1" / "helppuff.sqlite3"
    try:
        first = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Wait (by polling the real database, a bounded number of times) until pages are being written.
        for _ in range(600):
            if _ok_pages(db) >= 6 or first.poll() is not None:
                break
            time.sleep(0.1)
        assert first.poll() is None, "the crawl ended before it could be killed"
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        killed_at = _ok_pages(db)
        assert 6 <= killed_at < 41

        second = subprocess.run(args + ["--json"], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        assert second.returncode == 0, second.stderr[-2000:]
        run = json.loads(second.stdout)
        assert run["status"] == "done"
        status = subprocess.run([HELPPUFF, "knowledge", "status", "--json", "--site", "gen"], cwd=ROOT, env=env,
                                capture_output=True, text=True, check=False)
        report = json.loads(status.stdout)["sites"][0]
        assert report["consistency"]["consistent"], report["consistency"]
        assert report["consistency"]["chunks"] == report["consistency"]["vectors"] == report["vectors"] > 40
        assert report["pages"]["ok"] + report["pages"].get("unchanged", 0) == 41
        with sqlite3.connect(db) as conn:
            runs = conn.execute("SELECT status, reason FROM crawl_runs ORDER BY started_at, id").fetchall()
        assert runs[0][0] == "failed" and "abandoned" in runs[0][1]
        assert runs[1][0] == "done"
    finally:
        site.close()
