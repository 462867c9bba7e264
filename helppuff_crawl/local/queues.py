"""Cloudflare Queues on SQLite: the slice of the Queues REST API a pull consumer and its producers use.

One file, `<data_dir>/queues/queues.sqlite3`, shared by every process on the machine (each pull is
one write transaction, so two consumers never lease the same message). The semantics are Cloudflare's
(developers.cloudflare.com/queues/configuration/pull-consumers/, .../platform/limits/):

- a queue has an id (32 hex characters) and a name; messages are pushed one at a time or in batches of
  at most 100 (256 KB), each at most 128 KB, `content_type` "text" or "json", `delay_seconds` at most
  12 hours;
- pulling needs an `http_pull` consumer on the queue; a pull leases at most `batch_size` (default 5,
  max 100) visible messages for `visibility_timeout_ms` (default 30 s, max 12 hours), counting an
  attempt each; the pull answers at once, empty when nothing is visible (short polling);
- an ack deletes the message; a retry makes it visible again after its `delay_seconds` (default the
  consumer's `retry_delay`, else at once); a lease not acked in time makes the message visible again.
  Lease ids are accepted permissively, as Cloudflare accepts them: an ack after the timeout still
  counts, and so does one with the lease of an earlier delivery;
- a message that has been delivered `max_retries` + 1 times (the consumer's setting, default 3) and is
  retried or left to time out again goes to the consumer's dead-letter queue when it names one (a queue
  of this account, created when absent, as Cloudflare creates it), else is deleted;
- in the pull answer, a "text" body is the string as sent, a "json" one base64 of its JSON text, and
  `metadata["CF-Content-Type"]` says which; `message_backlog_count` (and `metadata.metrics`) count
  the queue's messages; an ack's `warnings` map lease ids that matched no message.

Refusals carry Queues' codes: 10104 queue not found, 10203 invalid metadata (content type, delay),
10204 message too large, 10205 batch too large, 10206 too many messages, 10207 body not matching the
schema, 10208 body not JSON.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

QUEUE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
QUEUE_ID = re.compile(r"^[0-9a-f]{32}$")
MAX_MESSAGE_BYTES = 128_000  # 128 KB, 1 KB being 1,000 bytes
MAX_BATCH_BYTES = 256_000
MAX_BATCH_MESSAGES = 100
MAX_DELAY_SECONDS = 12 * 3600
MAX_VISIBILITY_MS = 12 * 3600 * 1000
DEFAULT_VISIBILITY_MS = 30_000
DEFAULT_BATCH_SIZE = 5
MAX_PULL_BATCH = 100
DEFAULT_MAX_RETRIES = 3
MAX_RETRIES_LIMIT = 100

_SCHEMA = """
CREATE TABLE IF NOT EXISTS queues (
  id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_on TEXT NOT NULL, modified_on TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS consumers (
  queue_id TEXT PRIMARY KEY, consumer_id TEXT NOT NULL, type TEXT NOT NULL, settings TEXT NOT NULL,
  dead_letter_queue TEXT, created_on TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
  id TEXT PRIMARY KEY, queue_id TEXT NOT NULL, body TEXT NOT NULL, content_type TEXT NOT NULL,
  timestamp_ms INTEGER NOT NULL, visible_at_ms INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
  lease_id TEXT, lease_until_ms INTEGER
);
CREATE INDEX IF NOT EXISTS messages_visible ON messages (queue_id, visible_at_ms);
CREATE TABLE IF NOT EXISTS leases (lease_id TEXT PRIMARY KEY, message_id TEXT NOT NULL);
"""


class QueueError(Exception):
    """A request Cloudflare's Queues API refuses: HTTP status, Queues' code, its message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _schema_error(message: str) -> QueueError:
    return QueueError(400, 10207, message)


def _number(payload: dict[str, Any], key: str, default: float, low: float, high: float, code: int = 10207) -> float:
    value = payload.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise QueueError(400, code, f"{key} must be a number from {low:g} to {high:g}, got {value!r}")
    return float(value)


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


class LocalQueues:
    """The account's queues in one SQLite file; thread-safe, and safe across processes."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=30000")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _write(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        """`work` in one write transaction (BEGIN IMMEDIATE: other processes wait for it)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                result = work(self._db)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return result

    # --- queues and consumers -----------------------------------------------------------

    def _describe(self, db: sqlite3.Connection, row: sqlite3.Row) -> dict[str, Any]:
        consumer = db.execute("SELECT * FROM consumers WHERE queue_id = ?", [row["id"]]).fetchone()
        return {
            "queue_id": row["id"], "queue_name": row["name"], "created_on": row["created_on"],
            "modified_on": row["modified_on"], "producers": [], "producers_total_count": 0,
            "consumers": [self._consumer(consumer, row["name"])] if consumer else [],
            "consumers_total_count": 1 if consumer else 0,
            "settings": {"delivery_delay": 0, "delivery_paused": False, "message_retention_period": 345600},
        }

    @staticmethod
    def _consumer(row: sqlite3.Row, queue_name: str) -> dict[str, Any]:
        consumer = {"consumer_id": row["consumer_id"], "type": row["type"], "queue_name": queue_name,
                    "created_on": row["created_on"], "settings": json.loads(row["settings"])}
        if row["dead_letter_queue"]:
            consumer["dead_letter_queue"] = row["dead_letter_queue"]
        return consumer

    def create_queue(self, payload: Any) -> dict[str, Any]:
        name = payload.get("queue_name") if isinstance(payload, dict) else None
        if not isinstance(name, str) or not QUEUE_NAME.match(name):
            raise _schema_error("queue_name must be 1-63 lower-case letters, digits and hyphens")

        def create(db: sqlite3.Connection) -> dict[str, Any]:
            if db.execute("SELECT 1 FROM queues WHERE name = ?", [name]).fetchone():
                raise QueueError(409, 11009, f"A queue with name '{name}' already exists")
            return self._describe(db, self._insert_queue(db, name))

        return self._write(create)

    def _insert_queue(self, db: sqlite3.Connection, name: str) -> sqlite3.Row:
        now = _iso(self._now_ms())
        queue_id = secrets.token_hex(16)
        db.execute("INSERT INTO queues (id, name, created_on, modified_on) VALUES (?, ?, ?, ?)",
                   [queue_id, name, now, now])
        return db.execute("SELECT * FROM queues WHERE id = ?", [queue_id]).fetchone()

    def list_queues(self, name: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM queues ORDER BY name").fetchall()
            return [self._describe(self._db, row) for row in rows if not name or row["name"] == name]

    def _queue(self, db: sqlite3.Connection, queue_id: str) -> sqlite3.Row:
        row = db.execute("SELECT * FROM queues WHERE id = ?", [queue_id]).fetchone() if QUEUE_ID.match(
            queue_id or "") else None
        if row is None:
            raise QueueError(404, 10104, "Queue does not exist")
        return row

    def get_queue(self, queue_id: str) -> dict[str, Any]:
        with self._lock:
            return self._describe(self._db, self._queue(self._db, queue_id))

    def create_consumer(self, queue_id: str, payload: Any) -> dict[str, Any]:
        if not isinstance(payload, dict) or payload.get("type") not in ("http_pull", "worker"):
            raise _schema_error("type must be http_pull or worker")
        if payload["type"] == "worker":
            raise QueueError(400, 10207, "the local cloud runs no Workers: only an http_pull consumer")
        settings = payload.get("settings") or {}
        if not isinstance(settings, dict):
            raise _schema_error("settings must be an object")
        checked = {
            "batch_size": _number(settings, "batch_size", DEFAULT_BATCH_SIZE, 1, MAX_PULL_BATCH),
            "max_retries": _number(settings, "max_retries", DEFAULT_MAX_RETRIES, 0, MAX_RETRIES_LIMIT),
            "visibility_timeout_ms": _number(settings, "visibility_timeout_ms", DEFAULT_VISIBILITY_MS, 0,
                                             MAX_VISIBILITY_MS),
        }
        if "retry_delay" in settings:
            checked["retry_delay"] = _number(settings, "retry_delay", 0, 0, MAX_DELAY_SECONDS)
        dead_letter = payload.get("dead_letter_queue")
        if dead_letter is not None and (not isinstance(dead_letter, str) or not QUEUE_NAME.match(dead_letter)):
            raise _schema_error("dead_letter_queue must name a queue")

        def create(db: sqlite3.Connection) -> dict[str, Any]:
            queue = self._queue(db, queue_id)
            if db.execute("SELECT 1 FROM consumers WHERE queue_id = ?", [queue_id]).fetchone():
                raise QueueError(409, 11004, "this queue already has a consumer")
            if dead_letter == queue["name"]:
                raise _schema_error("a queue cannot be its own dead-letter queue")
            db.execute("INSERT INTO consumers (queue_id, consumer_id, type, settings, dead_letter_queue, created_on) "
                       "VALUES (?, ?, 'http_pull', ?, ?, ?)",
                       [queue_id, secrets.token_hex(16), json.dumps(checked), dead_letter, _iso(self._now_ms())])
            row = db.execute("SELECT * FROM consumers WHERE queue_id = ?", [queue_id]).fetchone()
            return self._consumer(row, queue["name"])

        return self._write(create)

    def ensure_pull_queue(self, name: str, dead_letter: str, settings: dict[str, Any]) -> str:
        """The id of queue `name`, made when absent with `dead_letter` and an HTTP pull consumer with
        `settings` (as `helppuff deploy` makes them on Cloudflare; for `helppuff serve`)."""

        def ensure(db: sqlite3.Connection) -> str:
            for queue_name in (dead_letter, name):
                if db.execute("SELECT 1 FROM queues WHERE name = ?", [queue_name]).fetchone() is None:
                    self._insert_queue(db, queue_name)
            return db.execute("SELECT id FROM queues WHERE name = ?", [name]).fetchone()["id"]

        queue_id: str = self._write(ensure)
        if not self.list_consumers(queue_id):
            with contextlib.suppress(QueueError):  # added meanwhile by another process
                self.create_consumer(queue_id, {"type": "http_pull", "dead_letter_queue": dead_letter,
                                                "settings": settings})
        return queue_id

    def list_consumers(self, queue_id: str) -> list[dict[str, Any]]:
        with self._lock:
            queue = self._queue(self._db, queue_id)
            row = self._db.execute("SELECT * FROM consumers WHERE queue_id = ?", [queue_id]).fetchone()
            return [self._consumer(row, queue["name"])] if row else []

    # --- producing ----------------------------------------------------------------------

    @staticmethod
    def _message(item: Any, default_delay: float) -> tuple[str, str, float]:
        if not isinstance(item, dict) or "body" not in item:
            raise _schema_error("a message is {body, content_type?, delay_seconds?}")
        content_type = item.get("content_type", "json")
        if content_type not in ("text", "json"):
            raise QueueError(400, 10203, f"content_type must be text or json, got {content_type!r}")
        body = item["body"]
        if content_type == "text":
            if not isinstance(body, str):
                raise QueueError(400, 10203, "a text message's body must be a string")
            text = body
        else:
            text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
        if len(text.encode("utf-8")) > MAX_MESSAGE_BYTES:
            raise QueueError(413, 10204, f"the message is {len(text.encode('utf-8')):,} bytes; a message takes at "
                                         f"most {MAX_MESSAGE_BYTES:,} (128 KB)")
        delay = _number(item, "delay_seconds", default_delay, 0, MAX_DELAY_SECONDS, code=10203)
        return text, content_type, delay

    def push(self, queue_id: str, payload: Any) -> dict[str, Any]:
        message = self._message(payload, 0)
        self._write(lambda db: self._insert(db, self._queue(db, queue_id)["id"], [message]))
        return {}

    def push_batch(self, queue_id: str, payload: Any) -> dict[str, Any]:
        if not isinstance(payload, dict) or not isinstance(payload.get("messages"), list):
            raise _schema_error("the body is {messages: [...], delay_seconds?}")
        items = payload["messages"]
        if len(items) > MAX_BATCH_MESSAGES:
            raise QueueError(400, 10206, f"{len(items)} messages in one batch; a batch takes at most {MAX_BATCH_MESSAGES}")
        delay = _number(payload, "delay_seconds", 0, 0, MAX_DELAY_SECONDS, code=10203)
        messages = [self._message(item, delay) for item in items]
        size = sum(len(text.encode("utf-8")) for text, _, _ in messages)
        if size > MAX_BATCH_BYTES:
            raise QueueError(413, 10205, f"the batch is {size:,} bytes; a batch takes at most {MAX_BATCH_BYTES:,} (256 KB)")
        self._write(lambda db: self._insert(db, self._queue(db, queue_id)["id"], messages))
        return {}

    def _insert(self, db: sqlite3.Connection, queue_id: str, messages: list[tuple[str, str, float]]) -> None:
        now = self._now_ms()
        db.executemany(
            "INSERT INTO messages (id, queue_id, body, content_type, timestamp_ms, visible_at_ms) VALUES (?, ?, ?, ?, ?, ?)",
            [(secrets.token_hex(16), queue_id, text, kind, now, now + int(delay * 1000)) for text, kind, delay in messages],
        )

    # --- consuming ----------------------------------------------------------------------

    def _settings(self, db: sqlite3.Connection, queue_id: str) -> tuple[dict[str, Any], str | None]:
        row = db.execute("SELECT settings, dead_letter_queue FROM consumers WHERE queue_id = ? AND type = 'http_pull'",
                         [queue_id]).fetchone()
        if row is None:
            raise QueueError(400, 10207, "this queue has no HTTP pull consumer: add one (type http_pull) before pulling")
        return json.loads(row["settings"]), row["dead_letter_queue"]

    def pull(self, queue_id: str, payload: Any) -> dict[str, Any]:
        payload = payload if isinstance(payload, dict) else {}
        size = int(_number(payload, "batch_size", DEFAULT_BATCH_SIZE, 1, MAX_PULL_BATCH))

        def pull(db: sqlite3.Connection) -> dict[str, Any]:
            self._queue(db, queue_id)
            settings, dead_letter = self._settings(db, queue_id)
            default_timeout = settings.get("visibility_timeout_ms", DEFAULT_VISIBILITY_MS)
            # Pull consumers' docs name it visibility_timeout, the API schema visibility_timeout_ms.
            key = "visibility_timeout_ms" if "visibility_timeout_ms" in payload else "visibility_timeout"
            timeout = int(_number(payload, key, default_timeout, 0, MAX_VISIBILITY_MS))
            now = self._now_ms()
            self._expire(db, queue_id, settings, dead_letter, now)
            rows = db.execute("SELECT * FROM messages WHERE queue_id = ? AND visible_at_ms <= ? "
                              "ORDER BY visible_at_ms, timestamp_ms LIMIT ?", [queue_id, now, size]).fetchall()
            out = []
            for row in rows:
                lease = secrets.token_urlsafe(24)
                db.execute("UPDATE messages SET attempts = attempts + 1, lease_id = ?, lease_until_ms = ?, "
                           "visible_at_ms = ? WHERE id = ?", [lease, now + timeout, now + timeout, row["id"]])
                db.execute("INSERT INTO leases (lease_id, message_id) VALUES (?, ?)", [lease, row["id"]])
                body = row["body"] if row["content_type"] == "text" else base64.b64encode(
                    row["body"].encode("utf-8")).decode("ascii")
                out.append({"id": row["id"], "body": body, "timestamp_ms": row["timestamp_ms"],
                            "attempts": row["attempts"] + 1, "lease_id": lease,
                            "metadata": {"CF-sourceMessageSource": "api", "CF-Content-Type": row["content_type"]}})
            backlog = db.execute("SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(body AS BLOB))), 0), "
                                 "COALESCE(MIN(timestamp_ms), 0) FROM messages WHERE queue_id = ?", [queue_id]).fetchone()
            return {"messages": out, "message_backlog_count": backlog[0],
                    "metadata": {"metrics": {"backlog_count": backlog[0], "backlog_bytes": backlog[1],
                                             "oldest_message_timestamp_ms": backlog[2]}}}

        return self._write(pull)

    def _expire(self, db: sqlite3.Connection, queue_id: str, settings: dict[str, Any], dead_letter: str | None,
                now: int) -> None:
        """Leases past their timeout: the message is visible again (it already is, by visible_at_ms),
        or, delivered as often as the consumer allows, leaves for the dead-letter queue."""
        limit = int(settings.get("max_retries", DEFAULT_MAX_RETRIES)) + 1
        rows = db.execute("SELECT * FROM messages WHERE queue_id = ? AND lease_until_ms IS NOT NULL AND "
                          "lease_until_ms <= ?", [queue_id, now]).fetchall()
        for row in rows:
            if row["attempts"] >= limit:
                self._dead_letter(db, row, dead_letter)
            else:
                db.execute("UPDATE messages SET lease_id = NULL, lease_until_ms = NULL WHERE id = ?", [row["id"]])

    def _dead_letter(self, db: sqlite3.Connection, row: sqlite3.Row, dead_letter: str | None) -> None:
        db.execute("DELETE FROM messages WHERE id = ?", [row["id"]])
        db.execute("DELETE FROM leases WHERE message_id = ?", [row["id"]])
        if dead_letter:
            target = db.execute("SELECT * FROM queues WHERE name = ?", [dead_letter]).fetchone()
            target = target if target is not None else self._insert_queue(db, dead_letter)
            self._insert(db, target["id"], [(row["body"], row["content_type"], 0)])

    def ack(self, queue_id: str, payload: Any) -> dict[str, Any]:
        if not isinstance(payload, dict):
            raise _schema_error("the body is {acks: [{lease_id}], retries: [{lease_id, delay_seconds?}]}")
        acks, retries = payload.get("acks") or [], payload.get("retries") or []
        if not isinstance(acks, list) or not isinstance(retries, list):
            raise _schema_error("acks and retries must be lists of {lease_id}")
        for item in [*acks, *retries]:
            if not isinstance(item, dict) or not isinstance(item.get("lease_id"), str):
                raise _schema_error("each ack and retry is {lease_id: string}")
        for item in retries:
            _number(item, "delay_seconds", 0, 0, MAX_DELAY_SECONDS, code=10203)

        def ack(db: sqlite3.Connection) -> dict[str, Any]:
            self._queue(db, queue_id)
            settings, dead_letter = self._settings(db, queue_id)
            limit = int(settings.get("max_retries", DEFAULT_MAX_RETRIES)) + 1
            now = self._now_ms()
            acked = retried = 0
            warnings: dict[str, str] = {}  # lease id -> warning, as Cloudflare answers
            for item in acks:
                row = self._leased(db, queue_id, item["lease_id"])
                if row is None:
                    warnings[item["lease_id"]] = "no message has this lease (already acknowledged?)"
                    continue
                db.execute("DELETE FROM messages WHERE id = ?", [row["id"]])
                db.execute("DELETE FROM leases WHERE message_id = ?", [row["id"]])
                acked += 1
            for item in retries:
                row = self._leased(db, queue_id, item["lease_id"])
                if row is None:
                    warnings[item["lease_id"]] = "no message has this lease (already acknowledged?)"
                    continue
                if row["attempts"] >= limit:
                    self._dead_letter(db, row, dead_letter)
                else:
                    delay = item.get("delay_seconds", settings.get("retry_delay", 0))
                    db.execute("UPDATE messages SET lease_id = NULL, lease_until_ms = NULL, visible_at_ms = ? "
                               "WHERE id = ?", [now + int(float(delay) * 1000), row["id"]])
                retried += 1
            return {"ackCount": acked, "retryCount": retried, "warnings": warnings}

        return self._write(ack)

    @staticmethod
    def _leased(db: sqlite3.Connection, queue_id: str, lease_id: str) -> sqlite3.Row | None:
        return db.execute("SELECT m.* FROM leases l JOIN messages m ON m.id = l.message_id "
                          "WHERE l.lease_id = ? AND m.queue_id = ?", [lease_id, queue_id]).fetchone()

    def close(self) -> None:
        with self._lock:
            self._db.close()
