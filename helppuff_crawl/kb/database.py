"""The knowledge base's D1 database, and the client that reaches it.

Every read and write goes through `CloudflareClient`, to Cloudflare's D1 or to the embedded local cloud
(`open_client` picks by the credentials). One write path for both. The rooms of the knowledge base
(runs.py, pages.py, ...) are functions over a `KnowledgeBase`; SQL stays in this package.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from helppuff_crawl.cloudflare.client import CloudflareClient, HttpTransport

logger = logging.getLogger(__name__)

Statement = tuple[str, Sequence[Any]]


@dataclass(frozen=True)
class BackendConfig:
    """Where the knowledge base is: Cloudflare (token and account) or the local cloud (a folder)."""

    data_dir: Path
    database: str
    api_token: str
    account_id: str
    api_base: str
    vectorize_delay: float  # the local cloud's Vectorize: seconds before a write is applied

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> BackendConfig:
        """From the project's settings (helppuff_crawl/settings.py declares each with its default)."""
        token = settings.get("HELPPUFF_CLOUDFLARE_API_TOKEN") or ""
        account = settings.get("HELPPUFF_CLOUDFLARE_ACCOUNT_ID") or ""
        if bool(token) != bool(account):
            raise ValueError(
                "CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID go together: set both, or neither for the local cloud"
            )
        database = str(settings.get("HELPPUFF_D1_DATABASE") or "")
        if not database:
            raise ValueError("HELPPUFF_D1_DATABASE must name the D1 database")
        data_dir = str(settings.get("HELPPUFF_DATA_DIR") or "")
        if not data_dir:
            raise ValueError("HELPPUFF_DATA_DIR must name the local cloud's folder")
        api_base = str(settings.get("HELPPUFF_CLOUDFLARE_API_BASE") or "")
        if token and not api_base:
            raise ValueError("HELPPUFF_CLOUDFLARE_API_BASE must be the Cloudflare API's base URL")
        delay = settings.get("HELPPUFF_LOCAL_VECTORIZE_DELAY")
        try:
            vectorize_delay = float(delay)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            vectorize_delay = math.nan
        if not (math.isfinite(vectorize_delay) and vectorize_delay >= 0):
            raise ValueError(f"HELPPUFF_LOCAL_VECTORIZE_DELAY must be seconds >= 0, got {delay!r}")
        return cls(data_dir=Path(data_dir), database=database, api_token=token, account_id=account,
                   api_base=api_base, vectorize_delay=vectorize_delay)

    @property
    def remote(self) -> bool:
        return bool(self.api_token)


def open_client(config: BackendConfig) -> CloudflareClient:
    """The client for Cloudflare when credentials are set, else for the local cloud in-process."""
    if config.remote:
        return CloudflareClient(HttpTransport(config.api_token, config.api_base), config.account_id)
    # The local cloud is imported only when it is used: on Cloudflare, its model stack never loads.
    from helppuff_crawl.local.cloud import LOCAL_ACCOUNT_ID, LocalCloud, LocalTransport

    cloud = LocalCloud(config.data_dir, vectorize_delay=config.vectorize_delay)
    return CloudflareClient(LocalTransport(cloud), LOCAL_ACCOUNT_ID)


class KnowledgeBase:
    """One D1 database, through `client` (which also reaches Vectorize and Workers AI)."""

    def __init__(self, client: CloudflareClient, database: str) -> None:
        self.client = client
        self.database = database

    @classmethod
    def open(cls, config: BackendConfig) -> KnowledgeBase:
        return cls(open_client(config), config.database)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> KnowledgeBase:
        """The knowledge base the project settings name; `async with` closes it."""
        return cls.open(BackendConfig.from_settings(settings))

    async def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """One statement's rows."""
        return await self.client.d1_query(self.database, sql, list(params))

    async def first(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        """One statement's first row, or None."""
        rows = await self.query(sql, params)
        return rows[0] if rows else None

    async def batch(self, statements: Sequence[Statement]) -> list[list[dict[str, Any]]]:
        """Statements as one D1 batch (one transaction); each statement's rows."""
        return await self.client.d1_batch(self.database, [(sql, list(params)) for sql, params in statements])

    async def close(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
