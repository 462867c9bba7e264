"""The knowledge base's D1 database, and the client that reaches it.

Every read and write goes through `CloudflareClient`, to Cloudflare's D1 or to the embedded local cloud
(`open_client` picks by the credentials). One write path for both. The rooms of the knowledge base
(runs.py, pages.py, ...) are functions over a `KnowledgeBase`; SQL stays in this package.

D1 addresses a database by UUID only. The UUID comes from the state file `helppuff deploy` writes
(helppuff_crawl/cloudflare/state.py); the name (HELPPUFF_D1_DATABASE) only finds it there. On Cloudflare a
missing or stale UUID is one line naming `helppuff deploy`; on the local cloud, which has no account
to deploy to, the database is found by its exact name or created on first use, and recorded.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from helppuff_crawl.cloudflare.client import (
    CloudflareClient,
    CloudflareError,
    HttpTransport,
)
from helppuff_crawl.cloudflare.pacing import Rate
from helppuff_crawl.cloudflare.state import LOCAL_ACCOUNT, DeployState

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
    vectorize_delay: float = 0.0  # the local cloud's Vectorize: seconds before a write is applied
    rate_limit: Rate | None = None  # the client's pace (HELPPUFF_CLOUDFLARE_RATE_LIMIT)
    local_rate_limit: Rate | None = None  # the local cloud's limit (HELPPUFF_LOCAL_RATE_LIMIT)

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
        pace = Rate.parse(settings.get("HELPPUFF_CLOUDFLARE_RATE_LIMIT"), "HELPPUFF_CLOUDFLARE_RATE_LIMIT")
        local_limit = Rate.parse(settings.get("HELPPUFF_LOCAL_RATE_LIMIT"), "HELPPUFF_LOCAL_RATE_LIMIT")
        return cls(data_dir=Path(data_dir), database=database, api_token=token, account_id=account,
                   api_base=api_base, vectorize_delay=vectorize_delay, rate_limit=pace, local_rate_limit=local_limit)

    @property
    def remote(self) -> bool:
        return bool(self.api_token)

    @property
    def account(self) -> str:
        """The state file's key for this backend: the account id, or "local"."""
        return self.account_id if self.remote else LOCAL_ACCOUNT

    @property
    def state(self) -> DeployState:
        return DeployState(self.data_dir)


class NotDeployed(ValueError):
    """The D1 database has no UUID in the state file, or the one there is gone: run `helppuff deploy`."""


DEPLOY_HINT = "run `helppuff deploy --site SITE` (`--no-worker` for the data side only) with this data folder"


async def find_or_create_database(client: CloudflareClient, config: BackendConfig) -> tuple[str, bool]:
    """The UUID of the D1 database named exactly `config.database`, created when there is none,
    recorded in the state file; and whether it was created now."""
    name = config.database
    created = False
    matches = [db for db in await client.d1_list_databases(name) if db.get("name") == name]
    if not matches:
        try:
            matches = [await client.d1_create_database(name)]
            created = True
        except CloudflareError as exc:
            if 7502 not in exc.codes:  # 7502: the name was taken meanwhile (another process created it)
                raise
            matches = [db for db in await client.d1_list_databases(name) if db.get("name") == name]
    database_id = str(matches[0].get("uuid") or "") if matches else ""
    if not database_id:
        raise CloudflareError(f"D1 database {name}", 200, [{"code": None, "message": "no uuid in the answer"}])
    config.state.record_database(config.account, name, database_id)
    return database_id, created


def open_client(config: BackendConfig) -> CloudflareClient:
    """The client for Cloudflare when credentials are set, else for the local cloud in-process."""
    if config.remote:
        return CloudflareClient(HttpTransport(config.api_token, config.api_base), config.account_id,
                                rate_limit=config.rate_limit)
    # The local cloud is imported only when it is used: on Cloudflare, its model stack never loads.
    from helppuff_crawl.local.cloud import LOCAL_ACCOUNT_ID, LocalCloud, LocalTransport
    from helppuff_crawl.local.ratelimit import RateLimiter

    cloud = LocalCloud(config.data_dir, vectorize_delay=config.vectorize_delay)
    if config.local_rate_limit is not None:
        cloud.rate_limiter = RateLimiter(config.local_rate_limit)
    return CloudflareClient(LocalTransport(cloud), LOCAL_ACCOUNT_ID, rate_limit=config.rate_limit)


class KnowledgeBase:
    """One D1 database, through `client` (which also reaches Vectorize and Workers AI).

    Built with the database's UUID, or (`open`) with the backend whose state file holds it: then the
    UUID is looked up at the first query, and on the local cloud found or created when absent.
    """

    def __init__(self, client: CloudflareClient, database: str | None = None,
                 config: BackendConfig | None = None) -> None:
        if database is None and config is None:
            raise ValueError("a KnowledgeBase needs the database's UUID or the backend that records it")
        self.client = client
        self._database = database
        self.config = config

    @classmethod
    def open(cls, config: BackendConfig) -> KnowledgeBase:
        return cls(open_client(config), config=config)

    async def database_id(self) -> str:
        """The D1 database's UUID (NotDeployed on Cloudflare when the state file has none)."""
        if self._database is None:
            config = self.config
            assert config is not None
            recorded = config.state.database_id(config.account, config.database)
            if recorded:
                self._database = recorded
            elif config.remote:
                raise NotDeployed(f"D1 database {config.database} has no id in {config.state.path}: "
                                  f"{DEPLOY_HINT}")
            else:
                self._database, _ = await find_or_create_database(self.client, config)
        return self._database

    async def _stale(self, exc: CloudflareError) -> bool:
        """After a 404 for the recorded database: forget it; True when the call may be tried again."""
        config = self.config
        if config is None or exc.status != 404 or 7404 not in exc.codes:
            return False
        config.state.forget_database(config.account, config.database)
        stale, self._database = self._database, None
        if config.remote:
            raise NotDeployed(f"D1 database {config.database} ({stale}, from {config.state.path}) is not on "
                              f"account {config.account_id}: {DEPLOY_HINT}") from exc
        return True

    async def _d1(self, call: Any) -> Any:
        try:
            return await call(await self.database_id())
        except CloudflareError as exc:
            if not await self._stale(exc):
                raise
            return await call(await self.database_id())

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> KnowledgeBase:
        """The knowledge base the project settings name; `async with` closes it."""
        return cls.open(BackendConfig.from_settings(settings))

    async def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """One statement's rows."""
        return await self._d1(lambda database: self.client.d1_query(database, sql, list(params)))

    async def first(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        """One statement's first row, or None."""
        rows = await self.query(sql, params)
        return rows[0] if rows else None

    async def batch(self, statements: Sequence[Statement]) -> list[list[dict[str, Any]]]:
        """Statements as one D1 batch (one transaction); each statement's rows."""
        batch = [(sql, list(params)) for sql, params in statements]
        return await self._d1(lambda database: self.client.d1_batch(database, batch))

    async def close(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
