"""The data side of a deploy: the D1 database, its migrations, the Vectorize index and its metadata
indexes, the site's row, and the crawl queue (with its dead-letter queue and HTTP pull consumer,
kb/crawl_queue.py), each found or created, in that order; the database's and the queue's ids are
recorded in the state file.

The order matters: Vectorize filters only the vectors upserted after a metadata index exists, so the
index and its `category` metadata index come before any crawl writes a vector. A dry run only
reads: it reports what a deploy would create and changes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from helppuff_crawl.kb.crawl_queue import QueueConfig, ensure_queue
from helppuff_crawl.kb.database import (
    BackendConfig,
    KnowledgeBase,
    find_or_create_database,
)
from helppuff_crawl.kb.site_index import take_site
from helppuff_crawl.kb.writer import IndexConfig, KnowledgeWriter
from helppuff_crawl.local.d1 import migration_files

logger = logging.getLogger(__name__)


@dataclass
class DataPlan:
    """What the data side found, created, or (dry run) would create."""

    site: str
    remote: bool
    database: str
    database_id: str | None = None
    database_created: bool = False
    migrations: list[str] = field(default_factory=list)  # applied now, or pending in a dry run
    index: str = ""
    index_created: bool = False
    model: str = ""
    dimensions: int = 0
    queue: str = ""
    queue_id: str | None = None
    queue_made: list[str] = field(default_factory=list)  # made now, or (dry run) to be made
    dry_run: bool = False

    def lines(self) -> list[str]:
        verb = "would create" if self.dry_run else "created"
        where = "Cloudflare" if self.remote else "the local cloud"
        database = (f"D1 {self.database} {self.database_id}" if self.database_id
                    else f"D1 {self.database} (none yet)")
        return [
            f"{self.site} on {where}:",
            f"  {database}{f': {verb}' if self.database_created else ''}",
            f"  migrations: {', '.join(self.migrations) + (' pending' if self.dry_run else ' applied') if self.migrations else 'up to date'}",
            f"  Vectorize {self.index} ({self.dimensions} dimensions, {self.model}, namespace {self.site})"
            f"{f': {verb}, with its category metadata index' if self.index_created else ''}",
            f"  queue {self.queue}{f' {self.queue_id}' if self.queue_id else ''}"
            f"{f': {verb} ' + ', '.join(self.queue_made) if self.queue_made else ''}",
        ]

    def as_dict(self) -> dict[str, Any]:
        return {"site": self.site, "remote": self.remote, "d1_database": self.database,
                "d1_database_id": self.database_id, "d1_created": self.database_created,
                "migrations": self.migrations, "vector_index": self.index, "index_created": self.index_created,
                "model": self.model, "dimensions": self.dimensions, "namespace": self.site, "queue": self.queue,
                "queue_id": self.queue_id, "queue_made": self.queue_made, "dry_run": self.dry_run}


async def deploy_data(settings: Any, site: str, *, dry_run: bool = False) -> DataPlan:
    """Find or create the site's data resources (none in a dry run); the plan of what happened."""
    backend = BackendConfig.from_settings(settings)
    index = IndexConfig.from_settings(settings, backend.remote)
    kb = KnowledgeBase.open(backend)
    writer = KnowledgeWriter(kb, index)
    queue = QueueConfig.from_settings(settings)
    plan = DataPlan(site=site, remote=backend.remote, database=backend.database, index=index.index,
                    model=index.model, dimensions=index.dimensions, queue=queue.name, dry_run=dry_run)
    try:
        if dry_run:
            await _look(kb, writer, backend, plan)
            listed = {q.get("queue_name"): q for q in await kb.client.queues_list()}
            plan.queue_id = str(listed[queue.name]["queue_id"]) if queue.name in listed else None
            plan.queue_made = [f"queue {name}" for name in (queue.dead_letter, queue.name) if name not in listed]
            return plan
        from helppuff_crawl.kb.migrations import apply_migrations

        plan.database_id, plan.database_created = await find_or_create_database(kb.client, backend)
        plan.migrations = await apply_migrations(kb)
        plan.index_created = await kb.client.vectorize_get_index(writer.index) is None
        await take_site(writer, site)
        await writer.wait_for_writes()  # the metadata index in place before any vector is written
        plan.queue_id, plan.queue_made = await ensure_queue(kb.client, queue)
        backend.state.record_queue(backend.account, queue.name, plan.queue_id)
        return plan
    finally:
        await kb.close()


async def _look(kb: KnowledgeBase, writer: KnowledgeWriter, backend: BackendConfig, plan: DataPlan) -> None:
    from helppuff_crawl.kb.migrations import pending_migrations

    found = [db for db in await kb.client.d1_list_databases(backend.database) if db.get("name") == backend.database]
    if found:
        plan.database_id = str(found[0].get("uuid"))
        plan.migrations = await pending_migrations(KnowledgeBase(kb.client, plan.database_id))
    else:
        plan.database_created = True
        plan.migrations = [file.name for file in migration_files()]
    plan.index_created = await kb.client.vectorize_get_index(writer.index) is None
