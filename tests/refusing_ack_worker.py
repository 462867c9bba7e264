"""`helppuff worker ARGS...` in a process whose Cloudflare Queues ack is refused once: a fake of the
outside edge (the API answering 500 after the client's own retries), for tests/test_worker.py.

    python tests/refusing_ack_worker.py [worker options...]
"""

from __future__ import annotations

import sys

from helppuff_crawl.cli import main
from helppuff_crawl.cloudflare.client import CloudflareError
from helppuff_crawl.kb.crawl_queue import CrawlQueue

_real_ack = CrawlQueue.ack
_refused: list[str] = []


async def _ack(self: CrawlQueue, lease_id: str) -> None:
    if not _refused:
        _refused.append(lease_id)
        raise CloudflareError(f"queues/{self.queue_id}/messages/ack", 500,
                              [{"code": 10001, "message": "Internal error"}], attempts=4)
    await _real_ack(self, lease_id)


if __name__ == "__main__":
    CrawlQueue.ack = _ack  # type: ignore[method-assign]
    sys.exit(main(["worker", *sys.argv[1:]]))
