"""The local cloud's refusals, as Cloudflare words them: HTTP status, Cloudflare's code and message."""

from __future__ import annotations


class AIError(Exception):
    """A request Workers AI would refuse: HTTP status, Cloudflare's code and message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
