"""Vectorize v2 on a local SQLite file: an exact vector index, the embedded default's Vectorize.

One SQLite file per index, beside the D1 files: `<data_dir>/vectorize/<index>.sqlite3`, holding the
index config, its metadata indexes, the vectors (float32 blobs, namespace, metadata JSON) and the
mutations not applied yet; it is made whole under a name of its own, then linked into place, so that
it is there with its config or not at all. A query is an exact scan with numpy over the vectors of the namespace (all
of them when no namespace is given), after the metadata filter; scores follow the index metric:

    cosine        cosine similarity, best first (highest)
    dot-product   inner product, best first (highest)
    euclidean     distance, best first (lowest)

Mutations are asynchronous, as on Cloudflare: upsert, insert, delete_by_ids and a metadata index's
creation return a mutation id at once, and the change becomes visible to queries, get_by_ids and
info after the index's delay (`delay` seconds; the local cloud's HELPPUFF_LOCAL_VECTORIZE_DELAY).
Mutations apply in the order they were accepted, a later one never before an earlier one (whatever
delay each was given), and info reports the last one applied (processedUpToMutation, and when,
processedUpToDatetime). A pending mutation is a row in the index's file, applied by whichever
connection reads or writes the index once its time has come: no thread, and it survives the process
that made it (a crawl that ends or is killed leaves its accepted writes to apply, as Vectorize does),
seen the same by every process that opens the file (a crawl and `helppuff serve`).

Filters work as Vectorize's do: only properties with a metadata index can be filtered on (a filter
on any other property matches nothing, as it does on Cloudflare), with the operators $eq (also
implicit: `{"category": "pricing"}`), $ne, $in, $nin, $lt, $lte, $gt, $gte; several properties are
ANDed. Strings are compared on their first 64 bytes, as Vectorize indexes them. A metadata index
holds only the vectors written after it was created ("Vectors upserted before a metadata index was
created won't have their metadata contained in that index"): a vector upserted before matches no
filter on that property, and `returnMetadata: "indexed"` leaves the property out, until it is
upserted again. It is listed (and a second one on the property refused) as soon as it is created.

Errors carry Cloudflare's codes where they are known (40012 for a vector of the wrong dimension,
40006 for such a query vector, 3000 for a missing index); the other codes are this module's own, in
the same ranges.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from helppuff_crawl.local.d1 import lock_not_free

logger = logging.getLogger(__name__)

METRICS = ("cosine", "euclidean", "dot-product")
INDEX_TYPES = ("string", "number", "boolean")
MAX_DIMENSIONS = 1536
BUSY_TIMEOUT_MS = 10_000  # how long a write waits for another process's write on the same index file
MAX_METADATA_INDEXES = 10
MAX_METADATA_BYTES = 10 * 1024  # per vector (developers.cloudflare.com/vectorize/platform/limits/)
MAX_ID_BYTES = 64
MAX_INDEXED_BYTES = 64
INDEX_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_OPERATORS = ("$eq", "$ne", "$in", "$nin", "$lt", "$lte", "$gt", "$gte")

# `seq` orders mutations: a vector's is the mutation that last wrote it, a metadata index's the one that
# created it, and a metadata index holds a vector when the vector's seq is the later one.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS config (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS metadata_indexes (
  property_name TEXT PRIMARY KEY,
  index_type    TEXT NOT NULL,
  seq           INTEGER NOT NULL DEFAULT -1
);
CREATE TABLE IF NOT EXISTS vectors (
  id        TEXT PRIMARY KEY,
  namespace TEXT,
  vals      BLOB NOT NULL,   -- float32, little-endian
  metadata  TEXT,            -- JSON object, or NULL
  seq       INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS mutations (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT NOT NULL UNIQUE,
  kind       TEXT NOT NULL CHECK (kind IN ('upsert', 'insert', 'delete', 'metadata_index')),
  apply_at   REAL NOT NULL,  -- Unix time from which it is applied
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS pending_vectors (
  seq INTEGER NOT NULL, id TEXT NOT NULL, namespace TEXT, vals BLOB NOT NULL, metadata TEXT,
  PRIMARY KEY (seq, id)
);
CREATE TABLE IF NOT EXISTS pending_deletes (seq INTEGER NOT NULL, id TEXT NOT NULL, PRIMARY KEY (seq, id));
"""

# Files written before mutations were asynchronous: their vectors count as written after their
# metadata indexes (which were always created first), as they were.
_ADDED_COLUMNS = (
    ("vectors", "seq", "ALTER TABLE vectors ADD COLUMN seq INTEGER NOT NULL DEFAULT 0"),
    ("metadata_indexes", "seq", "ALTER TABLE metadata_indexes ADD COLUMN seq INTEGER NOT NULL DEFAULT -1"),
)


class VectorizeError(Exception):
    """A request Vectorize would refuse: HTTP status, Cloudflare-style code and message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _stamp(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def not_found(name: str) -> VectorizeError:
    return VectorizeError(404, 3000, f'vectorize.index.not_found - Index name "{name}"')


def check_index_name(name: str) -> str:
    if not INDEX_NAME.match(name):
        raise VectorizeError(
            400, 3001, f'vectorize.index.invalid_name - Index name "{name}" must be 1-64 lower-case '
            "letters, digits, - or _, starting with a letter or digit"
        )
    return name


def check_delay(delay: Any) -> float:
    """A mutation delay in seconds (a finite number >= 0); ValueError otherwise."""
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not math.isfinite(delay) or delay < 0:
        raise ValueError(f"the Vectorize mutation delay must be a number of seconds >= 0, got {delay!r}")
    return float(delay)


@dataclass
class _Loaded:
    """The applied vectors in memory for scans: rebuilt after each applied mutation."""

    ids: list[str]
    namespaces: list[str | None]
    metadata: list[dict[str, Any] | None]
    seqs: list[int]
    matrix: np.ndarray  # (n, dimensions) float32
    norms: np.ndarray  # (n,) float32
    # Per namespace asked (None: every vector), its rows, their vectors and norms: made on the first
    # query of the namespace, so a query scans one contiguous matrix and no Python loop of all rows.
    scopes: dict[str | None, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)

    def scope(self, namespace: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        found = self.scopes.get(namespace)
        if found is None:
            rows = np.asarray([i for i, name in enumerate(self.namespaces) if namespace is None or name == namespace],
                              dtype=np.int64)
            found = self.scopes[namespace] = (rows, self.matrix[rows], self.norms[rows])
        return found


class LocalVectorIndex:
    """One Vectorize index in one SQLite file; its mutations apply `delay` seconds after they are
    accepted (`clock`: Unix time, time.time unless a test drives it). Thread-safe, and safe with
    other processes on the same file."""

    def __init__(self, path: Path, *, delay: float, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.delay = check_delay(delay)
        self._clock = clock
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._lock = threading.RLock()
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self._conn.executescript(_SCHEMA)
        self._add_columns()
        self._loaded: _Loaded | None = None
        self._data_version: int | None = None
        config = dict(self._conn.execute("SELECT key, value FROM config").fetchall())
        if "dimensions" not in config:
            raise VectorizeError(500, 3999, f"{path} holds no Vectorize index configuration")
        self.name = config["name"]
        self.dimensions = int(config["dimensions"])
        self.metric = config["metric"]

    def _add_columns(self) -> None:
        for table, column, statement in _ADDED_COLUMNS:
            columns = {row[1] for row in self._conn.execute(f"PRAGMA table_info({table})")}
            if column not in columns:
                try:
                    self._conn.execute(statement)
                except sqlite3.OperationalError as exc:  # another process added it meanwhile
                    if "duplicate column" not in str(exc):
                        raise

    @classmethod
    def create(cls, path: Path, name: str, dimensions: int, metric: str, description: str = "", *,
               delay: float, clock: Callable[[], float] = time.time) -> LocalVectorIndex:
        check_index_name(name)
        if not isinstance(dimensions, int) or isinstance(dimensions, bool) or not 1 <= dimensions <= MAX_DIMENSIONS:
            raise VectorizeError(400, 3002, f"config.dimensions must be an integer 1-{MAX_DIMENSIONS}, got {dimensions!r}")
        if metric not in METRICS:
            raise VectorizeError(400, 3002, f"config.metric must be one of {', '.join(METRICS)}, got {metric!r}")
        duplicate = VectorizeError(409, 3002, f'vectorize.index.duplicate_name - Index name "{name}" already exists')
        if path.exists():
            raise duplicate
        path.parent.mkdir(parents=True, exist_ok=True)
        # Made whole under a name of its own, then linked into place, as Cloudflare makes an index at
        # once: a process killed midway (a crawl's start can be) leaves no index without its
        # configuration, and of two made at once the second is refused as a duplicate.
        building = path.with_name(f".{path.name}.{uuid.uuid4().hex}.creating")
        try:
            conn = sqlite3.connect(building, isolation_level=None)
            try:
                conn.executescript(_SCHEMA)
                now = _stamp(clock())
                conn.executemany(
                    "INSERT INTO config (key, value) VALUES (?, ?)",
                    [("name", name), ("dimensions", str(dimensions)), ("metric", metric),
                     ("description", description), ("created_on", now), ("modified_on", now),
                     ("last_mutation", ""), ("last_mutation_at", "")],
                )
            finally:
                conn.close()
            try:
                os.link(building, path)
            except FileExistsError:
                raise duplicate from None
        finally:
            building.unlink(missing_ok=True)  # made or not, the file under its own name goes
        logger.info("Created local Vectorize index %s (%d dimensions, %s)", name, dimensions, metric)
        return cls(path, delay=delay, clock=clock)

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
        """The index as GET /indexes/{name}/info answers it: what the applied mutations made."""
        with self._lock:
            self.apply_due()
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

    def pending(self) -> int:
        """How many accepted mutations are not applied yet."""
        with self._lock:
            self.apply_due()
            return int(self._conn.execute("SELECT COUNT(*) FROM mutations").fetchone()[0])

    # --- mutations ----------------------------------------------------------------------

    def _accept(self, kind: str) -> tuple[int, str]:
        """Record a mutation (inside the caller's transaction); its seq and id."""
        mutation = str(uuid.uuid4())
        cursor = self._conn.execute(
            "INSERT INTO mutations (id, kind, apply_at, created_at) VALUES (?, ?, ?, ?)",
            (mutation, kind, self._clock() + self.delay, _stamp(self._clock())),
        )
        return int(cursor.lastrowid or 0), mutation

    def _begin(self) -> None:
        """A write transaction: another process holding the index's write lock past BUSY_TIMEOUT_MS is a
        500 (the mutation was not accepted; the client retries it), never a raw SQLite error."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if not lock_not_free(exc):
                raise
            raise VectorizeError(500, 3999, f"the index is busy ({exc}); nothing was changed: try again") from exc

    def apply_due(self) -> int:
        """Apply, in order, the mutations whose time has come; stops at the first one still waiting
        (a later mutation never overtakes it). Returns how many were applied."""
        with self._lock:
            now = self._clock()
            head = self._conn.execute("SELECT apply_at FROM mutations ORDER BY seq LIMIT 1").fetchone()
            if head is None or head[0] > now:
                return 0
            try:
                self._begin()
            except VectorizeError:  # another process holds the index (applying them, most likely): later
                return 0
            try:
                applied = self._apply_in_order(now)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            if applied:
                self._loaded = None
            return applied

    def _apply_in_order(self, now: float) -> int:
        config = self._config()
        done_at = _parse_stamp(config.get("last_mutation_at") or "")
        applied, last = 0, None
        for seq, mutation, kind, apply_at in self._conn.execute(
            "SELECT seq, id, kind, apply_at FROM mutations ORDER BY seq"
        ).fetchall():
            if apply_at > now:
                break
            if kind in ("upsert", "insert"):
                verb = "INSERT OR REPLACE" if kind == "upsert" else "INSERT OR IGNORE"
                self._conn.execute(
                    f"{verb} INTO vectors (id, namespace, vals, metadata, seq) "
                    "SELECT id, namespace, vals, metadata, seq FROM pending_vectors WHERE seq = ?", (seq,))
                self._conn.execute("DELETE FROM pending_vectors WHERE seq = ?", (seq,))
            elif kind == "delete":
                self._conn.execute("DELETE FROM vectors WHERE id IN (SELECT id FROM pending_deletes WHERE seq = ?)",
                                   (seq,))
                self._conn.execute("DELETE FROM pending_deletes WHERE seq = ?", (seq,))
            # a metadata index was listed when it was created; reaching it only marks its place in the order
            self._conn.execute("DELETE FROM mutations WHERE seq = ?", (seq,))
            done_at = max(done_at, apply_at)
            applied, last = applied + 1, mutation
        if last is not None:
            stamp = _stamp(done_at)
            self._conn.executemany(
                "UPDATE config SET value = ? WHERE key = ?",
                [(last, "last_mutation"), (stamp, "last_mutation_at"), (stamp, "modified_on")],
            )
        return applied

    def create_metadata_index(self, property_name: Any, index_type: Any) -> str:
        if not isinstance(property_name, str) or not property_name:
            raise VectorizeError(400, 40020, "propertyName must be a non-empty string")
        if index_type not in INDEX_TYPES:
            raise VectorizeError(400, 40020, f"indexType must be one of {', '.join(INDEX_TYPES)}, got {index_type!r}")
        with self._lock:
            self._begin()
            try:
                existing = self.metadata_indexes()
                if property_name in existing:
                    raise VectorizeError(409, 40021, f'a metadata index on "{property_name}" already exists')
                if len(existing) >= MAX_METADATA_INDEXES:
                    raise VectorizeError(400, 40022, f"at most {MAX_METADATA_INDEXES} metadata indexes per index")
                seq, mutation = self._accept("metadata_index")
                self._conn.execute("INSERT INTO metadata_indexes (property_name, index_type, seq) VALUES (?, ?, ?)",
                                   (property_name, index_type, seq))
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self.apply_due()
            return mutation

    def upsert(self, vectors: list[dict[str, Any]]) -> str:
        """Insert or replace whole vectors (values, namespace, metadata), all or none, once applied."""
        return self._write("upsert", vectors)

    def insert(self, vectors: list[dict[str, Any]]) -> str:
        """Insert vectors whose ids the index does not hold when the mutation is applied; the others
        are left as they are (Vectorize's insert)."""
        return self._write("insert", vectors)

    def _write(self, kind: str, vectors: list[dict[str, Any]]) -> str:
        rows = [self._row(v) for v in vectors]
        with self._lock:
            self._begin()
            try:
                seq, mutation = self._accept(kind)
                self._conn.executemany(
                    "INSERT OR REPLACE INTO pending_vectors (seq, id, namespace, vals, metadata) VALUES (?, ?, ?, ?, ?)",
                    [(seq, *row) for row in rows],
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self.apply_due()
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
        encoded = json.dumps(metadata, ensure_ascii=False) if metadata is not None else None
        if encoded is not None and len(encoded.encode("utf-8")) > MAX_METADATA_BYTES:
            raise VectorizeError(400, 40014, f'invalid metadata for id="{vid}": metadata is at most '
                                             f'{MAX_METADATA_BYTES} bytes (10 KiB) per vector')
        blob = np.asarray(values, dtype="<f4").tobytes()
        return vid, namespace or None, blob, encoded

    def delete_by_ids(self, ids: Iterable[str]) -> str:
        ids = list(ids)
        with self._lock:
            self._begin()
            try:
                seq, mutation = self._accept("delete")
                self._conn.executemany("INSERT OR IGNORE INTO pending_deletes (seq, id) VALUES (?, ?)",
                                       [(seq, i) for i in ids])
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self.apply_due()
        return mutation

    # --- reads --------------------------------------------------------------------------

    def get_by_ids(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        """The applied vectors with these ids, in the order asked; ids it does not hold are left out."""
        ids = list(dict.fromkeys(ids))
        out: list[dict[str, Any]] = []
        with self._lock:
            self.apply_due()
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
        self.apply_due()
        # PRAGMA data_version changes when another connection (another process: a crawl while
        # `helppuff serve` runs) commits to the file: the cached matrix is then read again.
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._loaded = None
            self._data_version = version
        if self._loaded is None:
            rows = self._conn.execute(
                "SELECT id, namespace, vals, metadata, seq FROM vectors ORDER BY id").fetchall()
            matrix = (
                np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), self.dimensions)
                if rows else np.zeros((0, self.dimensions), dtype=np.float32)
            )
            self._loaded = _Loaded(
                ids=[r[0] for r in rows],
                namespaces=[r[1] for r in rows],
                metadata=[json.loads(r[3]) if r[3] is not None else None for r in rows],
                seqs=[r[4] for r in rows],
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
        with self._lock:
            loaded = self._load()
            created = dict(self._conn.execute("SELECT property_name, seq FROM metadata_indexes").fetchall())
            indexed = self.metadata_indexes()
            rows, matrix, norms = loaded.scope(namespace)  # cached in `loaded`: made once, under the lock
        predicate = compile_filter(filter or {}, indexed, created)
        if filter:
            wanted = np.asarray([predicate(loaded.metadata[i], loaded.seqs[i]) for i in rows.tolist()], dtype=bool)
            rows, matrix, norms = rows[wanted], matrix[wanted], norms[wanted]
        if not len(rows):
            return {"count": 0, "matches": []}
        q = np.asarray(vector, dtype=np.float32)
        if self.metric == "euclidean":
            scores = np.linalg.norm(matrix - q, axis=1)
            order = _best(scores, top_k)
        else:
            # einsum's own loop, not BLAS: OpenBLAS splits this matrix-vector product over its threads,
            # and on a machine whose other cores are busy (a crawl, the embedding model) waiting for
            # them made a 9,000-vector scan 13 times slower (7.7 ms against 0.6 ms).
            scores = np.einsum("ij,j->i", matrix, q)
            if self.metric == "cosine":
                denom = norms * np.float32(np.linalg.norm(q))
                scores = np.divide(scores, denom, out=np.zeros_like(scores), where=denom > 0)
            order = _best(-scores, top_k)
        matches = []
        for j in order:
            i = int(rows[int(j)])
            match: dict[str, Any] = {"id": loaded.ids[i], "score": float(scores[int(j)])}
            if loaded.namespaces[i] is not None:
                match["namespace"] = loaded.namespaces[i]
            if return_values:
                match["values"] = [float(x) for x in loaded.matrix[i]]
            meta = loaded.metadata[i]
            if return_metadata == "all" and meta is not None:
                match["metadata"] = meta
            elif return_metadata == "indexed" and meta is not None:
                match["metadata"] = {k: v for k, v in meta.items()
                                     if k in indexed and loaded.seqs[i] > created.get(k, 0)}
            matches.append(match)
        return {"count": len(matches), "matches": matches}

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _best(costs: np.ndarray, top_k: int) -> np.ndarray:
    """Positions of the `top_k` lowest costs, lowest first, ties in position order (as a stable
    sort of all of them gives), without sorting the rest."""
    if top_k < len(costs):
        # Everything at or below the top_k-th cost, then sorted stably: equal costs keep their order.
        bound = np.partition(costs, top_k - 1)[top_k - 1]
        candidates = np.flatnonzero(costs <= bound)
        return candidates[np.argsort(costs[candidates], kind="stable")][:top_k]
    return np.argsort(costs, kind="stable")[:top_k]


def _parse_stamp(text: str) -> float:
    if not text:
        return 0.0
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


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
    filter: Mapping[str, Any], indexed: Mapping[str, str], created: Mapping[str, int] | None = None
) -> Callable[[Mapping[str, Any] | None, int | None], bool]:
    """A predicate over a vector's metadata (and the seq of the mutation that wrote it) for a
    Vectorize filter; VectorizeError when malformed.

    `created`: the seq of the mutation that created each metadata index; a vector written by an
    earlier mutation is not in that index, so no condition on the property matches it. Without it
    (or without the vector's seq), every vector is taken as written after its indexes.
    """
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

    since = {key: (created or {}).get(key) for key, _, _, _ in tests}

    def predicate(metadata: Mapping[str, Any] | None, seq: int | None = None) -> bool:
        return all(
            _test(metadata, key, op, index_type, operand)
            and (seq is None or since[key] is None or seq > since[key])  # type: ignore[operator]
            for key, op, index_type, operand in tests
        )

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
