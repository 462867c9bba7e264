"""Content hashes: the one place that owns the algorithm.

A page's hash is SHA-256 over its title, category and Markdown, joined by the ASCII unit
separator (so ("ab", "c") and ("a", "bc") differ), UTF-8, 64 lowercase hex characters.
"""

from __future__ import annotations

import hashlib

_SEPARATOR = "\x1f"


def content_hash(title: str, category: str, markdown: str) -> str:
    data = _SEPARATOR.join((title, category, markdown)).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def text_hash(text: str) -> str:
    """SHA-256 of one text (a chunk's prefix + body): an embedding is reused while this is unchanged."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
