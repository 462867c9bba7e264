"""`helppuff worker ARGS...` in a process where Cloudflare refuses one call once: a fake of the outside
edge (the API answering 500 after the client's own retries), for tests/test_worker.py.

    python tests/refusing_worker.py ack|beat [worker options...]

`ack`: the first Cloudflare Queues ack is refused. `beat`: the first D1 query that beats a job (the
worker telling D1 it is alive while its crawl runs) is refused.
"""

from __future__ import annotations

import sys
from typing import Any

from helppuff_crawl.cli import main
from helppuff_crawl.cloudflare.client import CloudflareError
from helppuff_crawl.kb import jobs
from helppuff_crawl.kb.crawl_queue import CrawlQueue

_real_ack = CrawlQueue.ack
_real_beat = jobs.beat
_refused: list[str] = []


async def _ack(self: CrawlQueue, lease_id: str) -> None:
    if not _refused:
        _refused.append(lease_id)
        raise CloudflareError(f"queues/{self.queue_id}/messages/ack", 500,
                              [{"code": 10001, "message": "Internal error"}], attempts=4)
    await _real_ack(self, lease_id)


async def _beat(kb: Any, request_id: str, me: str | None = None) -> None:
    if not _refused:
        _refused.append(request_id)
        raise CloudflareError("d1/database/query", 500, [{"code": 7500, "message": "Internal error"}], attempts=4)
    await _real_beat(kb, request_id, me)


if __name__ == "__main__":
    refuse, options = sys.argv[1], sys.argv[2:]
    if refuse == "ack":
        CrawlQueue.ack = _ack  # type: ignore[method-assign]
    elif refuse == "beat":
        jobs.beat = _beat  # type: ignore[assignment]
    else:
        sys.exit(f"refusing_worker.py: refuse `ack` or `beat`, not {refuse!r}")
    sys.exit(main(["worker", *options]))
