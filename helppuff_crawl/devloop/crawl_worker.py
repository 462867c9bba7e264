"""The crawl worker `helppuff serve` runs beside the Worker, so that the jobs the dashboard, the
webhooks and the cron trigger ask for are run on this machine as the crawl container runs them in
production: `helppuff worker` (helppuff_crawl/cli/worker.py) in a process of its own, on serve's
knowledge base (HELPPUFF_DATA_DIR), pulling the local cloud's queue every HELPPUFF_QUEUE_POLL seconds
(1 s here: a job asked from the dashboard starts within about a second).

Its job lines go to serve's stdout. It is stopped with serve: SIGTERM (the crawl in hand stops at
the pages it has, the job is released and its message put back), SIGKILL after a grace period; and
it gets SIGTERM if serve dies without stopping it (Linux's PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path

logger = logging.getLogger(__name__)

POLL_SECONDS = 1.0
STOP_GRACE_SECONDS = 30.0


def worker_command(data_dir: Path, database: str) -> list[str]:
    """The `helppuff worker` serve starts: the same knowledge base, a short poll."""
    helppuff = str(Path(sys.executable).parent / "helppuff")
    return [helppuff, "worker", "-s", f"HELPPUFF_DATA_DIR={data_dir}", "-s", f"HELPPUFF_D1_DATABASE={database}",
            "-s", f"HELPPUFF_QUEUE_POLL={POLL_SECONDS:g}"]


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """In a child process, before it starts: `sig` when its parent dies (Linux's PR_SET_PDEATHSIG).
    A crawl gets SIGKILL when its worker dies; serve's worker gets SIGTERM (devloop/crawl_worker.py)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, sig)  # 1: PR_SET_PDEATHSIG


class CrawlWorker:
    """`helppuff worker` as serve's child, started and stopped with it."""

    def __init__(self, data_dir: Path, database: str) -> None:
        self.command = worker_command(data_dir, database)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> int:
        """Start it; its pid."""
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL,
                                        preexec_fn=partial(die_with_parent, signal.SIGTERM))
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """SIGTERM, then SIGKILL after `grace` seconds."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            logger.warning("the crawl worker did not stop within %.0f s: killing it", grace)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait()
