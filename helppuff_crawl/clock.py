"""Time as the knowledge base writes it: UTC, whole seconds, ISO 8601 with "Z".

Every timestamp the project stores (`crawl_runs.started_at`, `pages.fetched_at`, ...) is `iso(utc_now())`,
and the Worker writes the same form, so the text sorts as the time does.
"""

from __future__ import annotations

from datetime import UTC, datetime

ISO_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utc_now() -> datetime:
    """Now, in UTC, to the second."""
    return datetime.now(UTC).replace(microsecond=0)


def iso(moment: datetime) -> str:
    """`moment` as stored: "2026-12-01T09:30:00Z"."""
    return moment.astimezone(UTC).strftime(ISO_FORMAT)


def parse_iso(text: str) -> datetime:
    """A stored timestamp back as an aware UTC datetime."""
    return datetime.strptime(text, ISO_FORMAT).replace(tzinfo=UTC)


def utc_day(moment: datetime) -> str:
    """The UTC day, YYYY-MM-DD (usage is counted per UTC day)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d")
