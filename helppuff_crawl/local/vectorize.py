"""Vectorize v2 on a local SQLite file: an exact vector index, the embedded default's Vectorize.

One SQLite file per index, beside the D1 files: `<data_dir>/vectorize/<index>.sqlite3`, holding the
index config, its metadata indexes, and the vectors (float32 blobs, namespace, metadata JSON).
A query is an exact scan with numpy over the vectors of the namespace (all of them when no
namespace is given), after the metadata filter; scores follow the index metric:

    cosine        cosine similarity, best first (highest)
    dot-product   inner product, best first (highest)
    euclidean     distance, best first (lowest)

Filters work as Vectorize's do: only properties with a metadata index can be filtered on (a filter
on any other property matches nothing, as it does on Cloudflare), with the operators $eq (also
implicit: `{"category": "pricing"}`), $ne, $in, $nin, $lt, $lte, $gt, $gte; several properties are
ANDed. Strings are compared on their first 64 bytes, as Vectorize indexes them.

Mutations apply at once (Cloudflare applies them asynchronously) and return a mutation id as v2
does. Errors carry Cloudflare's codes where they are known (40012 for a vector of the wrong
dimension, 40006 for such a query vector, 3000 for a missing index); the other codes are this
module's own, in the same ranges.
"""

from __future__ import annotations

import json
import logging
import math
import re
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

METRICS = ("cosine", "euclidean", "dot-product")
INDEX_TYPES = ("string", "number", "boolean")
MAX_DIMENSIONS = 1536
MAX_METADATA_INDEXES = 10
MAX_ID_BYTES = 64
MAX_INDEXED_BYTES = 64
INDEX_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_OPERATORS = ("$eq", "$ne", "$in", "$nin", "$lt", "$lte", "$gt", "$gte")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS config (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS metadata_indexes (property_name TEXT PRIMARY KEY, index_type TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (
  id        TEXT PRIMARY KEY,
  namespace TEXT,
  vals      BLOB NOT NULL,   -- float32, little-endian
  metadata  TEXT            -- JSON object, or NULL
);
"""


class VectorizeError(Exception):
    """A request Vectorize would refuse: HTTP status, Cloudflare-style code and message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def not_found(name: str) -> VectorizeError:
    return VectorizeError(404, 3000, f'vectorize.index.not_found - Index name "{name}"')


def check_index_name(name: str) -> str:
    if not INDEX_NAME.match(name):
        raise VectorizeError(
            400, 3001, f'vectorize.index.invalid_name - Index name "{name}" must be 1-64 lower-case '
            "letters, digits, - or _, starting with a letter or digit"
        )
    return name


@dataclass
class _Loaded:
    """The vectors in memory for scans: rebuilt after each mutation."""

    ids: list[str]
    namespaces: list[str | None]
    metadata: list[dict[str, Any] | None]
    matrix: np.ndarray  # (n, dimensions) float32
    norms: np.ndarray  # (n,) float32


class LocalVectorIndex:
    """One Vectorize index in one SQLite file. Thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._lock = threading.RLock()
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.executescript(_SCHEMA)
        self._loaded: _Loaded | None = None
        self._data_version: int | None = None
        config = dict(self._conn.execute("SELECT key, value FROM config").fetchall())
        if "dimensions" not in config:
            raise VectorizeError(500, 3999, f"{path} holds no Vectorize index configuration")
        self.name = config["name"]
        self.dimensions = int(config["dimensions"])
        self.metric = config["metric"]

    @classmethod
    def create(cls, path: Path, name: str, dimensions: int, metric: str, description: str = "") -> LocalVectorIndex:
        check_index_name(name)
        if not isinstance(dimensions, int) or isinstance(dimensions, bool) or not 1 <= dimensions <= MAX_DIMENSIONS:
            raise VectorizeError(400, 3002, f"config.dimensions must be an integer 1-{MAX_DIMENSIONS}, got {dimensions!r}")
        if metric not in METRICS:
            raise VectorizeError(400, 3002, f"config.metric must be one of {', '.join(METRICS)}, got {metric!r}")
        if path.exists():
            raise VectorizeError(409, 3002, f'vectorize.index.duplicate_name - Index name "{name}" already exists')
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.executescript(_SCHEMA)
            now = _now()
            conn.executemany(
                "INSERT INTO config (key, value) VALUES (?, ?)",
                [("name", name), ("dimensions", str(dimensions)), ("metric", metric),
                 ("description", description), ("created_on", now), ("modified_on", now),
                 ("last_mutation", ""), ("last_mutation_at", "")],
            )
        finally:
            conn.close()
        logger.info("Created local Vectorize index %s (%d dimensions, %s)", name, dimensions, metric)
        return cls(path)

    # --- description --------------------------------------------------------------------

    def _config(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT key, value FROM config").fetchall())

    def describe(self) -> dict[str, Any]:
        """The index as GET /indexes/{name} answers it."""
        with self._lock:
            config = self._config()
        return {
            "name": self.name,
            "description": config.get("description", ""),
            "config": {"dimensions": self.dimensions, "metric": self.metric},
            "created_on": config.get("created_on"),
            "modified_on": config.get("modified_on"),
        }

    def info(self) -> dict[str, Any]:
        """The index as GET /indexes/{name}/info answers it."""
        with self._lock:
            config = self._config()
            count = self._conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
        return {
            "dimensions": self.dimensions,
            "vectorCount": count,
            "processedUpToMutation": config.get("last_mutation") or None,
            "processedUpToDatetime": config.get("last_mutation_at") or None,
        }

    def metadata_indexes(self) -> dict[str, str]:
        with self._lock:
            return dict(self._conn.execute("SELECT property_name, index_type FROM metadata_indexes").fetchall())

    # --- mutations ----------------------------------------------------------------------

    def _mutated(self) -> str:
        mutation = str(uuid.uuid4())
        now = _now()
        self._conn.executemany(
            "UPDATE config SET value = ? WHERE key = ?",
            [(mutation, "last_mutation"), (now, "last_mutation_at"), (now, "modified_on")],
        )
        self._loaded = None
        return mutation

    def create_metadata_index(self, property_name: Any, index_type: Any) -> str:
        if not isinstance(property_name, str) or not property_name:
            raise VectorizeError(400, 40020, "propertyName must be a non-empty string")
        if index_type not in INDEX_TYPES:
            raise VectorizeError(400, 40020, f"indexType must be one of {', '.join(INDEX_TYPES)}, got {index_type!r}")
        with self._lock:
            existing = self.metadata_indexes()
            if property_name in existing:
                raise VectorizeError(409, 40021, f'a metadata index on "{property_name}" already exists')
            if len(existing) >= MAX_METADATA_INDEXES:
                raise VectorizeError(400, 40022, f"at most {MAX_METADATA_INDEXES} metadata indexes per index")
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.execute("INSERT INTO metadata_indexes VALUES (?, ?)", (property_name, index_type))
            mutation = self._mutated()
            self._conn.execute("COMMIT")
            return mutation

    def upsert(self, vectors: list[dict[str, Any]]) -> str:
        """Insert or replace whole vectors (values, namespace, metadata), all or none."""
        rows = [self._row(v) for v in vectors]
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO vectors (id, namespace, vals, metadata) VALUES (?, ?, ?, ?)", rows
                )
                mutation = self._mutated()
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return mutation

    def _row(self, vector: Any) -> tuple[str, str | None, bytes, str | None]:
        if not isinstance(vector, dict):
            raise VectorizeError(400, 40011, f"each line must be a JSON object, got {type(vector).__name__}")
        vid = vector.get("id")
        if not isinstance(vid, str) or not vid or len(vid.encode("utf-8")) > MAX_ID_BYTES:
            raise VectorizeError(400, 40010, f"invalid vector id {vid!r}: ids are 1-{MAX_ID_BYTES} bytes of text")
        values = vector.get("values")
        if not isinstance(values, list) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in values
        ):
            raise VectorizeError(400, 40012, f'invalid vector for id="{vid}", values must be an array of finite numbers')
        if len(values) != self.dimensions:
            raise VectorizeError(
                400, 40012,
                f'invalid vector for id="{vid}", expected {self.dimensions} dimensions, and got {len(values)} dimensions',
            )
        namespace = vector.get("namespace")
        if namespace is not None and (not isinstance(namespace, str) or len(namespace.encode("utf-8")) > 64):
            raise VectorizeError(400, 40013, f'invalid namespace for id="{vid}": namespaces are text of at most 64 bytes')
        metadata = vector.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise VectorizeError(400, 40014, f'invalid metadata for id="{vid}": metadata must be a JSON object')
        blob = np.asarray(values, dtype="<f4").tobytes()
        return vid, namespace or None, blob, json.dumps(metadata, ensure_ascii=False) if metadata is not None else None

    def delete_by_ids(self, ids: Iterable[str]) -> str:
        ids = list(ids)
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany("DELETE FROM vectors WHERE id = ?", [(i,) for i in ids])
            mutation = self._mutated()
            self._conn.execute("COMMIT")
        return mutation

    # --- reads --------------------------------------------------------------------------

    def get_by_ids(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        ids = list(dict.fromkeys(ids))
        out: list[dict[str, Any]] = []
        with self._lock:
            for start in range(0, len(ids), 500):
                part = ids[start:start + 500]
                marks = ",".join("?" for _ in part)
                rows = self._conn.execute(
                    f"SELECT id, namespace, vals, metadata FROM vectors WHERE id IN ({marks})", part
                ).fetchall()
                found = {row[0]: row for row in rows}
                out.extend(_vector_json(*found[i]) for i in part if i in found)
        return out

    def _load(self) -> _Loaded:
        # PRAGMA data_version changes when another connection (another process: a crawl while
        # `helppuff serve` runs) commits to the file: the cached matrix is then read again.
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._loaded = None
            self._data_version = version
        if self._loaded is None:
            rows = self._conn.execute("SELECT id, namespace, vals, metadata FROM vectors ORDER BY id").fetchall()
            matrix = (
                np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), self.dimensions)
                if rows else np.zeros((0, self.dimensions), dtype=np.float32)
            )
            self._loaded = _Loaded(
                ids=[r[0] for r in rows],
                namespaces=[r[1] for r in rows],
                metadata=[json.loads(r[3]) if r[3] is not None else None for r in rows],
                matrix=matrix,
                norms=np.linalg.norm(matrix, axis=1).astype(np.float32),
            )
        return self._loaded

    def query(
        self,
        vector: Any,
        top_k: int = 5,
        namespace: str | None = None,
        return_metadata: str = "none",
        return_values: bool = False,
        filter: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The nearest vectors as POST /query answers: {"count", "matches": [...]}, best first."""
        if not isinstance(vector, list) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vector
        ):
            raise VectorizeError(400, 40006, "invalid query vector, values must be an array of finite numbers")
        if len(vector) != self.dimensions:
            raise VectorizeError(
                400, 40006,
                f"invalid query vector, expected {self.dimensions} dimensions, and got {len(vector)} dimensions",
            )
        indexed = self.metadata_indexes()
        predicate = compile_filter(filter or {}, indexed)
        with self._lock:
            loaded = self._load()
        keep = [
            i for i in range(len(loaded.ids))
            if (namespace is None or loaded.namespaces[i] == namespace) and predicate(loaded.metadata[i])
        ]
        if not keep:
            return {"count": 0, "matches": []}
        rows = np.asarray(keep)
        matrix = loaded.matrix[rows]
        q = np.asarray(vector, dtype=np.float32)
        if self.metric == "euclidean":
            scores = np.linalg.norm(matrix - q, axis=1)
            order = np.argsort(scores, kind="stable")
        else:
            scores = matrix @ q
            if self.metric == "cosine":
                denom = loaded.norms[rows] * np.float32(np.linalg.norm(q))
                scores = np.divide(scores, denom, out=np.zeros_like(scores), where=denom > 0)
            order = np.argsort(-scores, kind="stable")
        matches = []
        for j in order[:top_k]:
            i = keep[int(j)]
            match: dict[str, Any] = {"id": loaded.ids[i], "score": float(scores[int(j)])}
            if loaded.namespaces[i] is not None:
                match["namespace"] = loaded.namespaces[i]
            if return_values:
                match["values"] = [float(x) for x in loaded.matrix[i]]
            meta = loaded.metadata[i]
            if return_metadata == "all" and meta is not None:
                match["metadata"] = meta
            elif return_metadata == "indexed" and meta is not None:
                match["metadata"] = {k: v for k, v in meta.items() if k in indexed}
            matches.append(match)
        return {"count": len(matches), "matches": matches}

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _vector_json(vid: str, namespace: str | None, blob: bytes, metadata: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {"id": vid, "values": [float(x) for x in np.frombuffer(blob, dtype="<f4")]}
    if metadata is not None:
        item["metadata"] = json.loads(metadata)
    if namespace is not None:
        item["namespace"] = namespace
    return item


# --- metadata filters -------------------------------------------------------------------


def _lookup(metadata: Mapping[str, Any] | None, key: str) -> Any:
    """The value at a property path ("a.b" reaches into nested objects), or a sentinel when absent."""
    node: Any = metadata
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _ABSENT
        node = node[part]
    return node


_ABSENT = object()


def _indexed_value(value: Any, index_type: str) -> Any:
    """The value as its metadata index holds it, or _ABSENT when of another type."""
    if index_type == "string" and isinstance(value, str):
        return value.encode("utf-8")[:MAX_INDEXED_BYTES].decode("utf-8", errors="ignore")
    if index_type == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if index_type == "boolean" and isinstance(value, bool):
        return value
    return _ABSENT


def compile_filter(
    filter: Mapping[str, Any], indexed: Mapping[str, str]
) -> Callable[[Mapping[str, Any] | None], bool]:
    """A predicate over a vector's metadata for a Vectorize filter; VectorizeError when malformed."""
    if not isinstance(filter, Mapping):
        raise VectorizeError(400, 40003, "filter must be a JSON object")
    tests: list[tuple[str, str, str, Any]] = []
    for key, condition in filter.items():
        if not isinstance(key, str) or not key or key.startswith("$"):
            raise VectorizeError(400, 40003, f"invalid filter property {key!r}")
        conditions = condition if isinstance(condition, Mapping) else {"$eq": condition}
        if not conditions:
            raise VectorizeError(400, 40003, f"empty filter for property {key!r}")
        for op, operand in conditions.items():
            if op not in _OPERATORS:
                raise VectorizeError(400, 40003, f"unsupported filter operator {op!r} on {key!r}; "
                                                 f"Vectorize supports {', '.join(_OPERATORS)}")
            if op in ("$in", "$nin") and not isinstance(operand, list):
                raise VectorizeError(400, 40003, f"{op} on {key!r} needs an array")
            if op not in ("$in", "$nin") and not isinstance(operand, (str, int, float, bool)) and operand is not None:
                raise VectorizeError(400, 40003, f"{op} on {key!r} needs a string, number, boolean or null")
            if key not in indexed:
                logger.warning("Filter on %r, which has no metadata index: it matches nothing (as on Vectorize)", key)
            tests.append((key, op, indexed.get(key, ""), operand))

    def predicate(metadata: Mapping[str, Any] | None) -> bool:
        return all(_test(metadata, key, op, index_type, operand) for key, op, index_type, operand in tests)

    return predicate


def _test(metadata: Mapping[str, Any] | None, key: str, op: str, index_type: str, operand: Any) -> bool:
    if not index_type:
        return False  # not indexed: Vectorize cannot filter on it
    value = _lookup(metadata, key)
    value = _indexed_value(value, index_type) if value is not _ABSENT else _ABSENT
    if op in ("$in", "$nin"):
        wanted = [_indexed_value(x, index_type) for x in operand]
        inside = value is not _ABSENT and value in wanted
        return inside if op == "$in" else not inside
    target = _indexed_value(operand, index_type) if operand is not None else _ABSENT
    if op == "$eq":
        return value is not _ABSENT and value == target
    if op == "$ne":
        return value is _ABSENT or value != target
    if value is _ABSENT or target is _ABSENT or isinstance(value, bool):
        return False
    if op == "$lt":
        return value < target
    if op == "$lte":
        return value <= target
    if op == "$gt":
        return value > target
    return value >= target  # $gte
