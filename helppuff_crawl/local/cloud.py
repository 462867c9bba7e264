"""The local cloud: the slice of Cloudflare's REST API the project uses, served from this machine.

`LocalCloud.handle(method, path, body, headers)` answers a request as Cloudflare's API would
(paths under `/client/v4`, the `{"success", "errors", "messages", "result"}` envelope), from
files under a data folder:

    <data_dir>/d1/<name>.sqlite3               one SQLite file per D1 database
    <data_dir>/d1/databases.json               each database's UUID and name
    <data_dir>/vectorize/<index>.sqlite3       one exact vector index per Vectorize index
    <data_dir>/queues/queues.sqlite3           the account's queues (helppuff_crawl.local.queues)

Routes: D1 query/batch, create and list databases (paged as Cloudflare pages them: `page`,
`per_page` 10 to 10,000, `result_info`); Vectorize v2 indexes (create, list, get, info, delete),
metadata indexes (create, list), upsert/insert (NDJSON), query, get_by_ids, delete_by_ids
(helppuff_crawl.local.vectorize: mutations apply `vectorize_delay` seconds after they are accepted,
in order, as Cloudflare applies them asynchronously); Workers AI `run` for the models this machine
has (helppuff_crawl.local.ai; any other model is error 5007, as on Cloudflare); Queues (create, list,
get, consumers, push, batch push, pull, ack: helppuff_crawl.local.queues, shared by every process
that opens the folder, so many `helppuff worker`s pull from one queue); and chat models
through an OpenAI-compatible server when one is configured (helppuff_crawl.local.chat). The model
path is taken as sent: one whose `/` are escaped (`@cf%2Fbaai%2Fbge-m3`, as Cloudflare's SDK sends
it) is not routed, HTTP 400, 7000 "No route for that URI", as Cloudflare answers it.

The client sends most of its calls through Cloudflare's SDK (helppuff_crawl.cloudflare.client), so
most requests that arrive here are the SDK's, exactly as Cloudflare receives them.

As on Cloudflare, a D1 database is addressed by its UUID only: a name where the UUID belongs is
error 7400 "Invalid uuid", an unknown UUID error 7404. A SQLite file found without a UUID (a data
folder from before UUIDs) is given one when the local cloud opens the folder.

The crawler reaches it in-process through `LocalTransport`, so the production client code path
runs in every local crawl and every test.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs

import numpy as np

from helppuff_crawl import settings as declared_settings
from helppuff_crawl.cloudflare.client import Response
from helppuff_crawl.cloudflare.state import LOCAL_ACCOUNT
from helppuff_crawl.local.ai import LocalAI
from helppuff_crawl.local.d1 import MIGRATIONS_DIR, D1Error, D1Overloaded, LocalD1
from helppuff_crawl.local.errors import AIError
from helppuff_crawl.local.queues import LocalQueues, QueueError
from helppuff_crawl.local.ratelimit import RateLimiter
from helppuff_crawl.local.vectorize import (
    INDEX_NAME,
    LocalVectorIndex,
    VectorizeError,
    check_delay,
    check_index_name,
    not_found,
)

logger = logging.getLogger(__name__)

LOCAL_ACCOUNT_ID = LOCAL_ACCOUNT
_ACCOUNT = r"^/accounts/(?P<account>[^/]+)"
_D1_QUERY = re.compile(_ACCOUNT + r"/d1/database/(?P<db>[^/]+)/query$")
_D1_DATABASES = re.compile(_ACCOUNT + r"/d1/database$")
_INDEXES = re.compile(_ACCOUNT + r"/vectorize/v2/indexes$")
_INDEX = re.compile(_ACCOUNT + r"/vectorize/v2/indexes/(?P<index>[^/]+)(?P<action>/.*)?$")
_AI_RUN = re.compile(_ACCOUNT + r"/ai/run/(?P<model>.+)$")
_QUEUES = re.compile(_ACCOUNT + r"/queues$")
_QUEUE = re.compile(_ACCOUNT + r"/queues/(?P<queue>[^/]+)(?P<action>/.*)?$")
# Not Cloudflare's: the local stand-in of the Worker's send_email binding (worker/src/notify-email.ts).
_OUTBOX = re.compile(_ACCOUNT + r"/helppuff/outbox$")
OUTBOX = "outbox"  # <data dir>/outbox: the emails the Worker would have sent, one text file each
# Queues routes under /queues/{id}: (method, action) -> LocalQueues method name (those with a body).
_QUEUE_ROUTES = {
    ("POST", "/consumers"): "create_consumer",
    ("POST", "/messages"): "push",
    ("POST", "/messages/batch"): "push_batch",
    ("POST", "/messages/pull"): "pull",
    ("POST", "/messages/ack"): "ack",
}
# The D1 list's paging (developers.cloudflare.com/api/resources/d1/subresources/database/methods/list/);
# the default page size is not documented, and the client always sends one.
D1_LIST_MIN_PER_PAGE = 10
D1_LIST_MAX_PER_PAGE = 10_000
D1_LIST_DEFAULT_PER_PAGE = 100
_DATABASE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

# Vectorize v2 routes under /indexes/{name}: (method, action) -> LocalCloud method name.
_INDEX_ROUTES = {
    ("GET", ""): "_vectorize_describe",
    ("DELETE", ""): "_vectorize_delete_index",
    ("GET", "/info"): "_vectorize_info",
    ("POST", "/upsert"): "_vectorize_upsert",
    ("POST", "/insert"): "_vectorize_insert",
    ("POST", "/query"): "_vectorize_query",
    ("POST", "/get_by_ids"): "_vectorize_get_by_ids",
    ("POST", "/delete_by_ids"): "_vectorize_delete_by_ids",
    ("POST", "/metadata_index/create"): "_vectorize_create_metadata_index",
    ("GET", "/metadata_index/list"): "_vectorize_list_metadata_indexes",
}


def _envelope(result: Any, status: int = 200, result_info: dict[str, int] | None = None) -> Response:
    body = {"success": True, "errors": [], "messages": [], "result": result}
    if result_info is not None:
        body["result_info"] = result_info
    return Response(status, body)


INTERNAL_ERROR = (10001, "Internal error in the local cloud (see its log)")  # code, message (LocalCloud.serve)


def _error(status: int, code: int, message: str) -> Response:
    return Response(
        status,
        {"success": False, "errors": [{"code": code, "message": message}], "messages": [], "result": None},
    )


def _json_body(body: bytes) -> Any:
    try:
        return json.loads(body or b"{}")
    except ValueError as exc:
        raise VectorizeError(400, 7400, "The request body is not valid JSON") from exc


def _email_text(message: dict[str, Any]) -> str:
    """An email as a text file: its headers, a blank line, its text (what an .eml holds, unencoded)."""
    head = [f"{name}: {' '.join(str(message.get(name.lower(), '')).split())}" for name in ("From", "To", "Subject")]
    return "\n".join([*head, "X-HelpPuff: written by the local stand-in of the send_email binding; not sent", "",
                      str(message.get("text", ""))]) + "\n"


class LocalCloud:
    """Cloudflare's API slice on local files. Thread-safe; one instance per data folder.

    `vectorize_delay`: seconds after which a Vectorize mutation made through this instance is applied
    (None: the project's HELPPUFF_LOCAL_VECTORIZE_DELAY; 0: at once, for tests that need it).
    """

    rate_limiter: RateLimiter | None = None  # the API's rate limit, when one is set (local/ratelimit.py)

    def __init__(self, data_dir: Path, migrations_dir: Path = MIGRATIONS_DIR, ai: LocalAI | None = None,
                 vectorize_delay: float | None = None) -> None:
        self.data_dir = data_dir
        self.vectorize_delay = check_delay(
            declared_settings.HELPPUFF_LOCAL_VECTORIZE_DELAY if vectorize_delay is None else vectorize_delay)
        self.migrations_dir = migrations_dir
        self.ai = ai if ai is not None else LocalAI()
        self.ai.read_stored_vectors(self.stored_vectors)
        self._databases: dict[str, LocalD1] = {}
        self._indexes: dict[str, LocalVectorIndex] = {}
        self._queues: LocalQueues | None = None
        self._lock = threading.Lock()

    # --- the outbox: the local stand-in of the Worker's send_email binding ---------------------

    def _outbox(self, body: bytes) -> Response:
        """Write the email the Worker would have sent to <data dir>/outbox/<time>-<id>.eml; send nothing."""
        message = _json_body(body)
        if not isinstance(message, dict) or not all(isinstance(message.get(k), str) and message.get(k)
                                                    for k in ("from", "to", "subject", "text")):
            return _error(400, 10400, "an email needs from, to, subject and text")
        folder = self.data_dir / OUTBOX
        folder.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path = folder / f"{stamp}-{uuid.uuid4().hex[:8]}.eml"
        path.write_text(_email_text(message), encoding="utf-8")
        logger.info("Local outbox: the email to %s written to %s (not sent)", message["to"], path)
        return _envelope({"path": str(path)})

    # --- D1 databases: a registry of UUID -> name ---------------------------------------

    @property
    def _registry_path(self) -> Path:
        return self.data_dir / "d1" / "databases.json"

    def _registry(self) -> dict[str, dict[str, str]]:
        """{uuid: {"name", "created_at"}}; SQLite files not in it yet are given a UUID now."""
        path = self._registry_path
        try:
            registry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            registry = {}
        except ValueError as exc:
            raise D1Error(f"{path} is not valid JSON: {exc}") from exc
        known = {entry["name"] for entry in registry.values()}
        found = sorted(p.stem for p in path.parent.glob("*.sqlite3")) if path.parent.is_dir() else []
        adopted = [name for name in found if name not in known and _DATABASE_NAME.match(name)]
        for name in adopted:
            registry[str(uuid.uuid4())] = {"name": name, "created_at": _created_at(path.parent / f"{name}.sqlite3")}
        if adopted:
            self._save_registry(registry)
        return registry

    def _save_registry(self, registry: dict[str, dict[str, str]]) -> None:
        path = self._registry_path
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(registry, indent=2, sort_keys=True), encoding="utf-8")
        os.replace(scratch, path)

    def database(self, database_id: str) -> LocalD1:
        """The database with this UUID; a refusal worded as Cloudflare words it when there is none."""
        if not isinstance(database_id, str) or not _UUID.match(database_id):
            raise _D1Refusal(400, 7400, "Invalid property: databaseId => Invalid uuid")
        with self._lock:
            if database_id not in self._databases:
                entry = self._registry().get(database_id)
                if entry is None:
                    raise _D1Refusal(404, 7404, f"The database {database_id} could not be found")
                path = self.data_dir / "d1" / f"{entry['name']}.sqlite3"
                self._databases[database_id] = LocalD1(path, self.migrations_dir)
            return self._databases[database_id]

    def create_database(self, name: str) -> dict[str, Any]:
        """A new database named `name` (error 7502 when the name is taken); its description."""
        if not isinstance(name, str) or not _DATABASE_NAME.match(name):
            raise _D1Refusal(400, 7400, "name must be 1-64 characters of A-Z a-z 0-9 _ -")
        with self._lock:
            registry = self._registry()
            if any(entry["name"] == name for entry in registry.values()):
                raise _D1Refusal(400, 7502, f"A database with name '{name}' already exists")
            database_id = str(uuid.uuid4())
            path = self.data_dir / "d1" / f"{name}.sqlite3"
            self._databases[database_id] = LocalD1(path, self.migrations_dir)
            registry[database_id] = {"name": name, "created_at": _created_at(path)}
            self._save_registry(registry)
            return self._d1_info(database_id, registry[database_id])

    def database_named(self, name: str) -> str:
        """The UUID of the database named exactly `name`, created when there is none."""
        with self._lock:
            found = [i for i, entry in self._registry().items() if entry["name"] == name]
        if found:
            return found[0]
        try:
            return self.create_database(name)["uuid"]
        except _D1Refusal as exc:
            if exc.code != 7502:
                raise
            return self.database_named(name)

    def databases(self, name: str | None = None) -> list[dict[str, Any]]:
        """The databases, those whose name contains `name` when given (as the list route filters)."""
        with self._lock:
            registry = self._registry()
        return [self._d1_info(i, e) for i, e in sorted(registry.items(), key=lambda item: item[1]["name"])
                if not name or name in e["name"]]

    def vector_index(self, name: str) -> LocalVectorIndex:
        """The open index; VectorizeError (404, code 3000) when it was never created."""
        check_index_name(name)
        with self._lock:
            if name not in self._indexes:
                path = self._index_path(name)
                if not path.exists():
                    raise not_found(name)
                self._indexes[name] = LocalVectorIndex(path, delay=self.vectorize_delay)
            return self._indexes[name]

    def stored_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The applied vectors with these ids in any of this account's indexes, by id (a chunk's id
        is its vector's, unique across sites): what the relevance model reads (local/relevance.py)."""
        found: dict[str, np.ndarray] = {}
        wanted = list(dict.fromkeys(ids))
        for path in sorted((self.data_dir / "vectorize").glob("*.sqlite3")):
            if not wanted:
                break
            try:
                index = self.vector_index(path.stem)
            except VectorizeError:
                continue
            for vector in index.get_by_ids(wanted):
                found[vector["id"]] = np.asarray(vector["values"], dtype=np.float32)
            wanted = [i for i in wanted if i not in found]
        return found

    def _index_path(self, name: str) -> Path:
        return self.data_dir / "vectorize" / f"{name}.sqlite3"

    @property
    def queues(self) -> LocalQueues:
        """The account's queues, opened on first use."""
        with self._lock:
            if self._queues is None:
                self._queues = LocalQueues(self.data_dir / "queues" / "queues.sqlite3")
            return self._queues

    def serve(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> Response:
        """`handle`, and a failure of the local cloud's own (a bug, a broken file) answered as a server
        answers one: HTTP 500, INTERNAL_ERROR's code and words, its traceback in the log. So the
        client reports "HTTP 500: 10001: Internal error in the local cloud (see its log)", in process
        (LocalTransport) as over loopback (local/server.py), not a lost connection."""
        try:
            return self.handle(method, path, body, headers)
        except Exception:
            logger.exception("Local cloud failed on %s %s", method, path.partition("?")[0])
            return _error(500, *INTERNAL_ERROR)

    def handle(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> Response:
        if self.rate_limiter is not None and (refused := self.rate_limiter.refuse()) is not None:
            return refused
        path, _, query_string = path.partition("?")
        path = path.removeprefix("/client/v4")
        query = {k: v[-1] for k, v in parse_qs(query_string).items()}
        try:
            return self._route(method, path, query, body, headers or {})
        except VectorizeError as exc:
            return _error(exc.status, exc.code, exc.message)
        except AIError as exc:
            return _error(exc.status, exc.code, exc.message)
        except QueueError as exc:
            return _error(exc.status, exc.code, exc.message)

    def _route(self, method: str, path: str, query: dict[str, str], body: bytes, headers: dict[str, str]) -> Response:
        if _OUTBOX.match(path) and method == "POST":
            return self._outbox(body)
        if (match := _D1_QUERY.match(path)) and method == "POST":
            return self._d1_query(match["db"], body)
        if _D1_DATABASES.match(path):
            if method == "POST":
                return self._d1_create(body)
            if method == "GET":
                return self._d1_list(query)
        if _INDEXES.match(path):
            if method == "POST":
                return self._vectorize_create(body)
            if method == "GET":
                return _envelope(self._vectorize_list())
        if match := _INDEX.match(path):
            handler = _INDEX_ROUTES.get((method, match["action"] or ""))
            if handler is not None:
                return getattr(self, handler)(match["index"], body, query, headers)
        if (match := _AI_RUN.match(path)) and method == "POST":
            if "%2f" in match["model"].lower():  # the SDK's escaped `/`: Cloudflare does not route it
                return _error(400, 7000, "No route for that URI")
            return _envelope(self.ai.run(match["model"], _json_body(body)))
        if _QUEUES.match(path):
            if method == "POST":
                return _envelope(self.queues.create_queue(_queue_body(body)))
            if method == "GET":
                return _envelope(self.queues.list_queues(query.get("name")))
        if match := _QUEUE.match(path):
            action = match["action"] or ""
            if (method, action) == ("GET", ""):
                return _envelope(self.queues.get_queue(match["queue"]))
            if (method, action) == ("GET", "/consumers"):
                return _envelope(self.queues.list_consumers(match["queue"]))
            if name := _QUEUE_ROUTES.get((method, action)):
                return _envelope(getattr(self.queues, name)(match["queue"], _queue_body(body)))
        return _error(404, 7003, f"Could not route to {path}, perhaps your object identifier is invalid?")

    # --- D1 -----------------------------------------------------------------------------

    def _d1_query(self, database_id: str, body: bytes) -> Response:
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            return _error(400, 7400, "The request body is not valid JSON")
        if not isinstance(payload, dict):
            return _error(400, 7400, "The request body must be a JSON object")
        items = payload["batch"] if "batch" in payload else [payload]
        if not isinstance(items, list) or not items:
            return _error(400, 7400, "batch must be a non-empty array of {sql, params}")
        statements: list[tuple[str, list[Any]]] = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("sql"), str):
                return _error(400, 7400, "sql is required")
            params = item.get("params") or []
            if not isinstance(params, list) or not all(p is None or isinstance(p, str) for p in params):
                return _error(400, 7400, "params must be an array of strings")
            statements.append((item["sql"], params))
        try:
            return _envelope(self.database(database_id).query(statements))
        except _D1Refusal as exc:
            return _error(exc.status, exc.code, exc.message)
        except D1Overloaded as exc:  # as D1 answers a query queued too long: a 500, which the client retries
            return _error(500, 7500, str(exc))
        except D1Error as exc:
            return _error(400, 7500, str(exc))

    def _d1_info(self, database_id: str, entry: dict[str, str]) -> dict[str, Any]:
        path = self.data_dir / "d1" / f"{entry['name']}.sqlite3"
        return {
            "uuid": database_id,
            "name": entry["name"],
            "version": "production",
            "created_at": entry["created_at"],
            "file_size": path.stat().st_size if path.exists() else 0,
        }

    def _d1_create(self, body: bytes) -> Response:
        payload = _json_body(body)
        name = payload.get("name") if isinstance(payload, dict) else None
        try:
            return _envelope(self.create_database(name))
        except _D1Refusal as exc:
            return _error(exc.status, exc.code, exc.message)

    def _d1_list(self, query: dict[str, str]) -> Response:
        """A page of the list, as Cloudflare pages it: `page` from 1, `per_page` 10 to 10,000."""
        page = _whole(query.get("page", "1"))
        if page is None or page < 1:
            return _error(400, 7400, f"Invalid property: page => must be a whole number from 1, got {query['page']!r}")
        per_page = _whole(query.get("per_page", str(D1_LIST_DEFAULT_PER_PAGE)))
        if per_page is None or not D1_LIST_MIN_PER_PAGE <= per_page <= D1_LIST_MAX_PER_PAGE:
            return _error(400, 7400, f"Invalid property: per_page => must be a whole number from "
                                     f"{D1_LIST_MIN_PER_PAGE} to {D1_LIST_MAX_PER_PAGE:,}, got {query['per_page']!r}")
        found = self.databases(query.get("name"))
        shown = found[(page - 1) * per_page:page * per_page]
        return _envelope(shown, result_info={"page": page, "per_page": per_page, "count": len(shown),
                                             "total_count": len(found)})

    # --- Vectorize ----------------------------------------------------------------------

    def _vectorize_create(self, body: bytes) -> Response:
        payload = _json_body(body)
        if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
            raise VectorizeError(400, 3002, "name is required")
        config = payload.get("config")
        if not isinstance(config, dict):
            raise VectorizeError(400, 3002, "config is required: {dimensions, metric}")
        name = check_index_name(payload["name"])
        with self._lock:
            index = LocalVectorIndex.create(
                self._index_path(name), name, config.get("dimensions"), config.get("metric"),
                str(payload.get("description") or ""), delay=self.vectorize_delay,
            )
            self._indexes[name] = index
        return _envelope(index.describe())

    def _vectorize_list(self) -> list[dict[str, Any]]:
        folder = self.data_dir / "vectorize"
        names = sorted(p.stem for p in folder.glob("*.sqlite3")) if folder.is_dir() else []
        return [self.vector_index(n).describe() for n in names if INDEX_NAME.match(n)]

    def _vectorize_describe(self, name: str, body: bytes, query: dict[str, str], headers: dict[str, str]) -> Response:
        return _envelope(self.vector_index(name).describe())

    def _vectorize_delete_index(self, name: str, body: bytes, query: dict[str, str], headers: dict[str, str]) -> Response:
        index = self.vector_index(name)
        with self._lock:
            index.close()
            self._indexes.pop(name, None)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{index.path}{suffix}").unlink(missing_ok=True)
        return _envelope(None)

    def _vectorize_info(self, name: str, body: bytes, query: dict[str, str], headers: dict[str, str]) -> Response:
        return _envelope(self.vector_index(name).info())

    def _vectorize_upsert(self, name: str, body: bytes, query: dict[str, str], headers: dict[str, str]) -> Response:
        index = self.vector_index(name)
        vectors = _ndjson(body, headers, discard=query.get("unparsable-behavior") == "discard")
        return _envelope({"mutationId": index.upsert(vectors)})

    def _vectorize_insert(self, name: str, body: bytes, query: dict[str, str], headers: dict[str, str]) -> Response:
        index = self.vector_index(name)
        vectors = _ndjson(body, headers, discard=query.get("unparsable-behavior") == "discard")
        return _envelope({"mutationId": index.insert(vectors)})

    def _vectorize_query(self, name: str, body: bytes, query: dict[str, str], headers: dict[str, str]) -> Response:
        index = self.vector_index(name)
        payload = _json_body(body)
        if not isinstance(payload, dict):
            raise VectorizeError(400, 40006, "the query body must be a JSON object")
        top_k = payload.get("topK", 5)
        return_metadata = payload.get("returnMetadata", "none")
        if return_metadata is True or return_metadata is False:  # the older boolean form
            return_metadata = "all" if return_metadata else "none"
        if return_metadata not in ("none", "indexed", "all"):
            raise VectorizeError(400, 40006, f"returnMetadata must be none, indexed or all, got {return_metadata!r}")
        return_values = bool(payload.get("returnValues", False))
        limit = 50 if return_values or return_metadata == "all" else 100
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= limit:
            raise VectorizeError(400, 40008, f"topK must be an integer 1-{limit} with these return options, got {top_k!r}")
        namespace = payload.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise VectorizeError(400, 40013, "namespace must be a string")
        result = index.query(
            payload.get("vector"), top_k, namespace, return_metadata, return_values, payload.get("filter")
        )
        return _envelope(result)

    def _vectorize_ids(self, body: bytes) -> list[str]:
        payload = _json_body(body)
        ids = payload.get("ids") if isinstance(payload, dict) else None
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise VectorizeError(400, 40010, "ids must be an array of strings")
        return ids

    def _vectorize_get_by_ids(self, name: str, body: bytes, query: dict[str, str], headers: dict[str, str]) -> Response:
        index = self.vector_index(name)
        return _envelope(index.get_by_ids(self._vectorize_ids(body)))

    def _vectorize_delete_by_ids(self, name: str, body: bytes, query: dict[str, str], headers: dict[str, str]) -> Response:
        index = self.vector_index(name)
        return _envelope({"mutationId": index.delete_by_ids(self._vectorize_ids(body))})

    def _vectorize_create_metadata_index(
        self, name: str, body: bytes, query: dict[str, str], headers: dict[str, str]
    ) -> Response:
        index = self.vector_index(name)
        payload = _json_body(body)
        if not isinstance(payload, dict):
            raise VectorizeError(400, 40020, "the body must be {propertyName, indexType}")
        mutation = index.create_metadata_index(payload.get("propertyName"), payload.get("indexType"))
        return _envelope({"mutationId": mutation})

    def _vectorize_list_metadata_indexes(
        self, name: str, body: bytes, query: dict[str, str], headers: dict[str, str]
    ) -> Response:
        indexes = self.vector_index(name).metadata_indexes()
        return _envelope({"metadataIndexes": [{"propertyName": p, "indexType": t} for p, t in sorted(indexes.items())]})

    def close(self) -> None:
        with self._lock:
            for db in self._databases.values():
                db.close()
            self._databases.clear()
            for index in self._indexes.values():
                index.close()
            self._indexes.clear()
            if self._queues is not None:
                self._queues.close()
                self._queues = None


class _D1Refusal(Exception):
    """A D1 request Cloudflare refuses before any SQL runs (bad or unknown database, taken name)."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _queue_body(body: bytes) -> Any:
    try:
        return json.loads(body or b"{}")
    except ValueError as exc:
        raise QueueError(400, 10208, "the request body is not valid JSON") from exc


def _whole(text: str) -> int | None:
    """A query parameter as a whole number ("1000" and "1000.0" alike), or None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() else None


def _created_at(path: Path) -> str:
    when = datetime.fromtimestamp(path.stat().st_ctime, UTC) if path.exists() else datetime.now(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


MAX_UPLOAD_BYTES = 100 * 1024 * 1024  # Vectorize's upload limit (HTTP API)
MAX_UPLOAD_VECTORS = 5000  # vectors per upsert or insert (HTTP API)


def _ndjson(body: bytes, headers: dict[str, str], discard: bool = False) -> list[Any]:
    """The vectors of an NDJSON upsert body, one JSON object a line; refuses a JSON array or object,
    and what Vectorize's HTTP API refuses: over 100 MB, or over 5,000 vectors."""
    if len(body) > MAX_UPLOAD_BYTES:
        raise VectorizeError(413, 40011, f"the upload is {len(body):,} bytes; Vectorize takes at most "
                                         f"{MAX_UPLOAD_BYTES:,} (100 MB) per request")
    ctype = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    if ctype and "ndjson" not in ctype.lower():
        raise VectorizeError(  # Cloudflare names it vectorize.unknown_content_type
            400, 40011, f"vectorize.unknown_content_type - the body is sent as {ctype}; Vectorize expects NDJSON "
            "(one vector object per line, Content-Type: application/x-ndjson)"
        )
    text = body.decode("utf-8", errors="replace").strip()
    if text.startswith("["):
        raise VectorizeError(
            400, 40011, "the body is a JSON array; Vectorize expects NDJSON (one vector object per line, "
            "Content-Type: application/x-ndjson)"
        )
    vectors = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            if discard:
                continue
            raise VectorizeError(400, 40011, f"line {number} of the NDJSON body is not valid JSON: {exc}") from exc
        if isinstance(item, dict) and "vectors" in item and "id" not in item:
            raise VectorizeError(400, 40011, "the body is one JSON object with a vectors list; Vectorize expects "
                                             "NDJSON, one vector object per line")
        vectors.append(item)
    if not vectors:
        raise VectorizeError(400, 40011, "the body holds no vectors: send NDJSON, one vector per line")
    if len(vectors) > MAX_UPLOAD_VECTORS:
        raise VectorizeError(400, 40011, f"{len(vectors)} vectors in one upload; Vectorize's HTTP API takes at "
                                         f"most {MAX_UPLOAD_VECTORS}")
    return vectors


class LocalTransport:
    """Send the client's requests to a LocalCloud in this process.

    Each request runs on a worker thread (SQLite work, and the embedding model, which takes
    seconds for a batch of long chunks), so the event loop, and the crawl on it, keeps going.
    """

    def __init__(self, cloud: LocalCloud) -> None:
        self.cloud = cloud

    async def request(
        self, method: str, path: str, *, content: bytes = b"", headers: dict[str, str] | None = None
    ) -> Response:
        return await asyncio.to_thread(self.cloud.serve, method, path, content, headers or {})

    async def aclose(self) -> None:
        self.cloud.close()
