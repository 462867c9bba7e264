"""The local cloud: the slice of Cloudflare's REST API the project uses, served from this machine.

`LocalCloud.handle(method, path, body, headers)` answers a request as Cloudflare's API would
(paths under `/client/v4`, the `{"success", "errors", "messages", "result"}` envelope), from
files under a data folder:

    <data_dir>/d1/<database_id>.sqlite3        one SQLite file per D1 database (local id = name)
    <data_dir>/vectorize/<index>.sqlite3       one exact vector index per Vectorize index

Routes: D1 query/batch, create and list databases; Vectorize v2 indexes (create, list, get, info,
delete), metadata indexes (create, list), upsert/insert (NDJSON), query, get_by_ids,
delete_by_ids (helppuff_crawl.local.vectorize: mutations apply `vectorize_delay` seconds after
they are accepted, in order, as Cloudflare applies them asynchronously); Workers AI `run` for the
models this machine has (helppuff_crawl.local.ai; any other model is error 5007, as on Cloudflare), and chat models
through an OpenAI-compatible server when one is configured (helppuff_crawl.local.chat). The model path is
taken as sent: an escaped `%40cf%2Fbaai%2Fbge-m3` is an unknown model here as it is there.

The crawler reaches it in-process through `LocalTransport`, so the production client code path
runs in every local crawl and every test.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from helppuff_crawl import settings as declared_settings
from helppuff_crawl.cloudflare.client import Response
from helppuff_crawl.local.ai import LocalAI
from helppuff_crawl.local.d1 import MIGRATIONS_DIR, D1Error, LocalD1
from helppuff_crawl.local.errors import AIError
from helppuff_crawl.local.vectorize import (
    INDEX_NAME,
    LocalVectorIndex,
    VectorizeError,
    check_delay,
    check_index_name,
    not_found,
)

logger = logging.getLogger(__name__)

LOCAL_ACCOUNT_ID = "local"
_ACCOUNT = r"^/accounts/(?P<account>[^/]+)"
_D1_QUERY = re.compile(_ACCOUNT + r"/d1/database/(?P<db>[^/]+)/query$")
_D1_DATABASES = re.compile(_ACCOUNT + r"/d1/database$")
_INDEXES = re.compile(_ACCOUNT + r"/vectorize/v2/indexes$")
_INDEX = re.compile(_ACCOUNT + r"/vectorize/v2/indexes/(?P<index>[^/]+)(?P<action>/.*)?$")
_AI_RUN = re.compile(_ACCOUNT + r"/ai/run/(?P<model>.+)$")
_DATABASE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

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


def _envelope(result: Any, status: int = 200) -> Response:
    return Response(status, {"success": True, "errors": [], "messages": [], "result": result})


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


class LocalCloud:
    """Cloudflare's API slice on local files. Thread-safe; one instance per data folder.

    `vectorize_delay`: seconds after which a Vectorize mutation made through this instance is applied
    (None: the project's HELPPUFF_LOCAL_VECTORIZE_DELAY; 0: at once, for tests that need it).
    """

    def __init__(self, data_dir: Path, migrations_dir: Path = MIGRATIONS_DIR, ai: LocalAI | None = None,
                 vectorize_delay: float | None = None) -> None:
        self.data_dir = data_dir
        self.vectorize_delay = check_delay(
            declared_settings.HELPPUFF_LOCAL_VECTORIZE_DELAY if vectorize_delay is None else vectorize_delay)
        self.migrations_dir = migrations_dir
        self.ai = ai if ai is not None else LocalAI()
        self._databases: dict[str, LocalD1] = {}
        self._indexes: dict[str, LocalVectorIndex] = {}
        self._lock = threading.Lock()

    def database(self, database_id: str) -> LocalD1:
        if not _DATABASE_ID.match(database_id):
            raise ValueError(f"invalid D1 database id {database_id!r}")
        with self._lock:
            if database_id not in self._databases:
                path = self.data_dir / "d1" / f"{database_id}.sqlite3"
                self._databases[database_id] = LocalD1(path, self.migrations_dir)
            return self._databases[database_id]

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

    def _index_path(self, name: str) -> Path:
        return self.data_dir / "vectorize" / f"{name}.sqlite3"

    def handle(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> Response:
        path, _, query_string = path.partition("?")
        path = path.removeprefix("/client/v4")
        query = {k: v[-1] for k, v in parse_qs(query_string).items()}
        try:
            return self._route(method, path, query, body, headers or {})
        except VectorizeError as exc:
            return _error(exc.status, exc.code, exc.message)
        except AIError as exc:
            return _error(exc.status, exc.code, exc.message)

    def _route(self, method: str, path: str, query: dict[str, str], body: bytes, headers: dict[str, str]) -> Response:
        if (match := _D1_QUERY.match(path)) and method == "POST":
            return self._d1_query(match["db"], body)
        if _D1_DATABASES.match(path):
            if method == "POST":
                return self._d1_create(body)
            if method == "GET":
                return self._d1_list(query.get("name"))
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
            return _envelope(self.ai.run(match["model"], _json_body(body)))
        return _error(404, 7003, f"Could not route to {path}, perhaps your object identifier is invalid?")

    # --- D1 -----------------------------------------------------------------------------

    def _d1_query(self, database_id: str, body: bytes) -> Response:
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            return _error(400, 7400, "The request body is not valid JSON")
        if "batch" in payload:
            items = payload["batch"]
        else:
            items = [payload]
        statements: list[tuple[str, list[Any]]] = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("sql"), str):
                return _error(400, 7400, "sql is required")
            params = item.get("params") or []
            if not all(p is None or isinstance(p, str) for p in params):
                return _error(400, 7400, "params must be an array of strings")
            statements.append((item["sql"], params))
        try:
            return _envelope(self.database(database_id).query(statements))
        except ValueError as exc:
            return _error(404, 7404, str(exc))
        except D1Error as exc:
            return _error(400, 7500, str(exc))

    def _d1_info(self, path: Path) -> dict[str, Any]:
        stat = path.stat()
        return {
            "uuid": path.stem,
            "name": path.stem,
            "version": "production",
            "created_at": datetime.fromtimestamp(stat.st_ctime, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "file_size": stat.st_size,
        }

    def _d1_create(self, body: bytes) -> Response:
        payload = _json_body(body)
        name = payload.get("name") if isinstance(payload, dict) else None
        if not isinstance(name, str) or not _DATABASE_ID.match(name):
            return _error(400, 7400, "name must be 1-64 characters of A-Z a-z 0-9 _ -")
        path = self.data_dir / "d1" / f"{name}.sqlite3"
        if path.exists():
            return _error(400, 7502, f"A database with name '{name}' already exists")
        self.database(name)  # a local database's id is its name
        return _envelope(self._d1_info(path))

    def _d1_list(self, name: str | None) -> Response:
        folder = self.data_dir / "d1"
        paths = sorted(folder.glob("*.sqlite3")) if folder.is_dir() else []
        return _envelope([self._d1_info(p) for p in paths if not name or name in p.stem])

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


def _ndjson(body: bytes, headers: dict[str, str], discard: bool = False) -> list[Any]:
    """The vectors of an NDJSON upsert body, one JSON object a line; refuses a JSON array or object."""
    ctype = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    if ctype and "ndjson" not in ctype.lower():
        raise VectorizeError(
            400, 40011, f"the body is sent as {ctype}; Vectorize expects NDJSON (one vector object per line, "
            "Content-Type: application/x-ndjson)"
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
        return await asyncio.to_thread(self.cloud.handle, method, path, content, headers or {})

    async def aclose(self) -> None:
        self.cloud.close()
