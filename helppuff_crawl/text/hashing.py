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
