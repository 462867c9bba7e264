"""Usage in the knowledge base: a retried usage write whose first answer was lost adds once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest_twisted

from helppuff_crawl.kb.usage import add_usage
from tests.conftest import local_kb, run_async


class _AnswerLostOnce:
    """A LocalTransport whose first usage write is carried out but its answer lost (a read timeout)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.lost = 0

    async def request(self, method: str, path: str, *, content: bytes = b"", headers: Any = None) -> Any:
        reply = await self.inner.request(method, path, content=content, headers=headers)
        if b"usage_writes" in content and not self.lost:
            self.lost += 1
            raise httpx.ReadTimeout("the answer was lost")
        return reply

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _usage_scenario(tmp_path: Path) -> None:
    kb = local_kb(tmp_path)
    flaky = _AnswerLostOnce(kb.client.transport)
    kb.client.transport = flaky
    kb.client.backoff = 0.0
    assert await add_usage(kb, "run-1:embed", "s", "embed", "@cf/baai/bge-m3", 2, 500, 0, 6.0) is False
    assert flaky.lost == 1  # the first attempt committed, its answer was lost, the retry added nothing
    assert await add_usage(kb, "run-1:embed", "s", "embed", "@cf/baai/bge-m3", 2, 500, 0, 6.0) is False
    assert await add_usage(kb, "run-2:embed", "s", "embed", "@cf/baai/bge-m3", 1, 100, 0, 1.5) is True
    rows = await kb.query("SELECT calls, input_tokens, neurons FROM usage_daily WHERE site = 's'")
    assert rows == [{"calls": 3, "input_tokens": 600, "neurons": 7.5}]
    # Keys older than USAGE_KEY_DAYS are pruned by the next addition.
    await kb.query("UPDATE usage_writes SET day = '2020-01-01' WHERE id = 'run-1:embed'")
    assert await add_usage(kb, "run-3:embed", "s", "embed", "@cf/baai/bge-m3", 1, 100, 0, 1.5) is True
    keys = await kb.query("SELECT id FROM usage_writes ORDER BY id")
    assert [row["id"] for row in keys] == ["run-2:embed", "run-3:embed"]
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_a_retried_usage_write_adds_once(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_usage_scenario(tmp_path))
