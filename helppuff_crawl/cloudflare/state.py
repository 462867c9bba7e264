"""The state file: what `helppuff deploy` created, kept under the data folder (`<data dir>/state.json`).

D1's REST API addresses a database by its UUID, never by its name, so the UUID a deploy found or
created is written here and every command reads it from here. One entry per account (the local
cloud's is "local"), so one data folder can serve both:

    {"version": 1,
     "accounts": {"<account id>": {"d1": {"helppuff": {"uuid": "...", "recorded_at": "..."}},
                                   "queues": {"helppuff-crawl": {"id": "...", "recorded_at": "..."}},
                                   "worker": {"name": "helppuff", "url": "https://...", "deployed_at": "..."}}}}

Writes replace the file atomically (a temporary file, then rename), so a reader never sees half of it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from helppuff_crawl.clock import iso, utc_now

STATE_FILE = "state.json"
VERSION = 1
LOCAL_ACCOUNT = "local"  # the local cloud's account id, and its key here


class StateError(ValueError):
    """The state file cannot be read: one line naming the file and the reason."""


class DeployState:
    """The state file of one data folder."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / STATE_FILE

    def load(self) -> dict[str, Any]:
        try:
            state = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"version": VERSION, "accounts": {}}
        except ValueError as exc:
            raise StateError(f"{self.path} is not valid JSON ({exc}): fix it, or remove it and run "
                             f"`helppuff deploy` again") from exc
        if not isinstance(state, dict) or not isinstance(state.get("accounts"), dict):
            raise StateError(f"{self.path} is not a HelpPuff state file (no \"accounts\" object)")
        return state

    def _save(self, state: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        scratch = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        scratch.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(scratch, self.path)

    def account(self, account: str) -> dict[str, Any]:
        entry = self.load()["accounts"].get(account)
        return entry if isinstance(entry, dict) else {}

    def database_id(self, account: str, name: str) -> str | None:
        """The UUID recorded for D1 database `name` on `account`, or None."""
        entry = (self.account(account).get("d1") or {}).get(name)
        return entry.get("uuid") if isinstance(entry, dict) else None

    def record_database(self, account: str, name: str, database_id: str) -> None:
        self._update(account, "d1", name, {"uuid": database_id, "recorded_at": iso(utc_now())})

    def forget_database(self, account: str, name: str) -> None:
        state = self.load()
        databases = (state["accounts"].get(account) or {}).get("d1") or {}
        if databases.pop(name, None) is not None:
            self._save(state)

    def queue_id(self, account: str, name: str) -> str | None:
        """The id recorded for queue `name` on `account`, or None."""
        entry = (self.account(account).get("queues") or {}).get(name)
        return entry.get("id") if isinstance(entry, dict) else None

    def record_queue(self, account: str, name: str, queue_id: str) -> None:
        self._update(account, "queues", name, {"id": queue_id, "recorded_at": iso(utc_now())})

    def record_worker(self, account: str, details: dict[str, Any]) -> None:
        state = self.load()
        state["accounts"].setdefault(account, {})["worker"] = {**details, "deployed_at": iso(utc_now())}
        self._save(state)

    def _update(self, account: str, kind: str, name: str, value: dict[str, Any]) -> None:
        state = self.load()
        state.setdefault("version", VERSION)
        state["accounts"].setdefault(account, {}).setdefault(kind, {})[name] = value
        self._save(state)
