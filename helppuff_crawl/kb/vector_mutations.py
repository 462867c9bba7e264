"""The Vectorize mutations a writer made and has not seen applied yet, and the wait for them.

Vectorize applies writes asynchronously: an upsert or delete returns a mutation id, and the change
is visible to queries and get_by_ids once the index's processedUpToMutation (GET .../info) has
reached it; mutations apply in order. Nothing the knowledge base decides reads a vector back (which
vectors can be reused, what is stale, what to mend: all of it is read from the manifest in D1,
kb/writer.py), so a write not applied yet cannot be misread. `VectorMutations` keeps one writer's
mutations not yet seen applied (`last`, `pending_ids`), each with what to read back to see it applied:
`wait()` polls info until processedUpToMutation reaches the last one (or a later writer's mutation
has passed it and the last write is visible), bounded by `wait` seconds (HELPPUFF_VECTORIZE_WAIT).
The writer's `consistency()` waits so, then reports a vector whose write has not been applied yet as
pending, never as missing.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from helppuff_crawl import settings as declared_settings

if TYPE_CHECKING:
    from helppuff_crawl.cloudflare.client import CloudflareClient

logger = logging.getLogger(__name__)

_FIRST_POLL, _LONGEST_POLL = 0.25, 2.0  # seconds between polls of the index's info: a quarter of the time waited


def vectorize_wait(settings: Mapping[str, Any]) -> float:
    """HELPPUFF_VECTORIZE_WAIT: seconds to wait for Vectorize to apply a writer's writes; ValueError
    naming it when it is not a number >= 0."""
    return _seconds("HELPPUFF_VECTORIZE_WAIT", settings.get("HELPPUFF_VECTORIZE_WAIT"))


def _seconds(name: str, value: Any) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"{name} must be seconds >= 0, got {value!r}")
    return seconds


@dataclass(frozen=True)
class _Mutation:
    """A Vectorize mutation the writer made: its id, the vector ids it writes or deletes, and what
    to read back to see it applied (the last vectors upserted, or ids deleted)."""

    id: str
    ids: frozenset[str]
    upserted: Mapping[str, Sequence[float]]
    deleted: tuple[str, ...]


class VectorMutations:
    """One writer's mutations of the Vectorize index `index`, oldest first, until seen applied.

    `wait`: seconds `wait()` waits by default (None: the project's HELPPUFF_VECTORIZE_WAIT).
    """

    def __init__(self, client: CloudflareClient, index: str, wait: float | None = None) -> None:
        self.client = client
        self.index = index
        self.wait_seconds = _seconds("wait", declared_settings.HELPPUFF_VECTORIZE_WAIT if wait is None else wait)
        self.last: str | None = None  # the last mutation id Vectorize gave the writer
        self._pending: dict[str, _Mutation] = {}  # made and not seen applied, oldest first
        self._unnamed = 0

    def made(self, mutation: str | None, ids: Iterable[str] = (),
             upserted: Mapping[str, Sequence[float]] | None = None, deleted: Sequence[str] = ()) -> None:
        """Vectorize answered a write with `mutation`: it writes (or deletes) `ids`; `upserted` or
        `deleted` are the few vectors read back to see it applied."""
        if not mutation:  # no id given back: only reading the write back can show it applied
            self._unnamed += 1
            mutation = f"(unnamed mutation {self._unnamed})"
        self.last = mutation
        self._pending[mutation] = _Mutation(mutation, frozenset(ids), dict(upserted or {}), tuple(deleted))

    @property
    def pending_ids(self) -> set[str]:
        """Ids of the vectors written or deleted whose mutation is not seen applied yet."""
        return {vid for mutation in self._pending.values() for vid in mutation.ids}

    def _applied_up_to(self, mutation: str) -> None:
        """Mutations apply in order: `mutation` and every one made before it are applied."""
        while self._pending:
            first = next(iter(self._pending))
            del self._pending[first]
            if first == mutation:
                return

    async def _visible(self, mutation: _Mutation) -> bool:
        """Whether get_by_ids shows what `mutation` wrote (its last vectors, with their values) or
        deleted."""
        if mutation.upserted:
            got = {v["id"]: v.get("values") or []
                   for v in await self.client.vectorize_get_by_ids(self.index, list(mutation.upserted))}
            return all(vid in got and _same_values(got[vid], values) for vid, values in mutation.upserted.items())
        if mutation.deleted:
            return not await self.client.vectorize_get_by_ids(self.index, list(mutation.deleted))
        return False

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait until Vectorize has applied every mutation made, at most `timeout` seconds (None:
        `self.wait_seconds`); True when they are, False when some are still pending.

        Polls the index's info until processedUpToMutation is the last mutation made. Other
        writers on the same index can move it past ours between two polls: when it has moved to a
        mutation not ours, the last write is read back, and seen applied, so is every earlier one.
        """
        if not self._pending:
            return True
        loop = asyncio.get_running_loop()
        started = loop.time()
        waited = self.wait_seconds if timeout is None else timeout
        deadline = started + waited
        seen = None
        while True:
            processed = (await self.client.vectorize_index_info(self.index)).get("processedUpToMutation")
            if processed in self._pending:
                self._applied_up_to(processed)
            elif processed and processed != seen:
                last = next(reversed(self._pending.values()))
                if await self._visible(last):
                    self._applied_up_to(last.id)
            seen = processed
            if not self._pending:
                return True
            left = deadline - loop.time()
            if left <= 0:
                logger.warning("Vectorize index %s has not applied %d of this writer's vector writes after %.0f s "
                               "(last mutation %s): they are pending", self.index, len(self.pending_ids),
                               waited, self.last)
                return False
            await asyncio.sleep(min(left, _LONGEST_POLL, max(_FIRST_POLL, (loop.time() - started) / 4)))


def _same_values(stored: Sequence[float], sent: Sequence[float]) -> bool:
    """Vectorize keeps float32: the values read back equal those sent, to float32 precision."""
    got, want = np.asarray(stored, dtype=np.float32), np.asarray(sent, dtype=np.float32)
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-6, atol=1e-7))
