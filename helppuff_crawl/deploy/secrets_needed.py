"""The Worker secrets a deploy needs, named (never their values) when the deployed Worker lacks them.

`helppuff deploy` lists the deployed Worker's secret names (Cloudflare's API: workers/scripts/NAME/secrets)
and prints one line for each secret the Worker needs and lacks, with what is off without it and the
command that sets it:

- OWNER_TOKEN: always; without it the owner's dashboard (/admin) and the owner's /v1 routes are off;
- OPENAI_API_KEY, GEMINI_API_KEY, ANTHROPIC_API_KEY: for each site whose backend.type is that provider
  (its chat answers fail without it);
- RETELL_API_KEY: for a site whose backend.type is "retell" (its function calls are refused);
- the secret a site's HTTP retriever names (knowledge.retrieval.tokenEnv): its search is never asked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from helppuff_crawl.config.helppuff_json import retrieval_of

OWNER_TOKEN = "OWNER_TOKEN"
PROVIDER_KEYS = {"openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
                 "retell": "RETELL_API_KEY"}


def _backend_type(text: str | None) -> str:
    try:
        root = json.loads(text or "{}")
    except ValueError:
        return ""
    if not isinstance(root, dict):
        return ""
    backend = root.get("backend") if isinstance(root.get("backend"), dict) else root
    kind = backend.get("type")
    return kind if isinstance(kind, str) else ""


def needed_secrets(rows: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """{secret name: what is off without it}, for the sites' stored settings (site, settings JSON text)."""
    needed = {OWNER_TOKEN: f"the owner's dashboard (/admin) is off: `helppuff secret set {OWNER_TOKEN}`"}
    for site, text in rows:
        key = PROVIDER_KEYS.get(_backend_type(text))
        if key is not None and key not in needed:
            needed[key] = f"site {site} answers with {_backend_type(text)}, which fails: `helppuff secret set {key}`"
        token = retrieval_of(text).get("tokenEnv")
        if isinstance(token, str) and token and token not in needed:
            needed[token] = f"site {site}'s own search is never asked: `helppuff secret set {token}`"
    return needed


def missing_secret_lines(needed: dict[str, str], present: Iterable[str]) -> list[str]:
    """One line per needed secret the Worker lacks."""
    have = set(present)
    return [f"  Secret {name} not set: {why}" for name, why in needed.items() if name not in have]


def secret_names(listed: Iterable[Any]) -> list[str]:
    """The names in Cloudflare's answer to a script's secrets list ([{name, type}, ...])."""
    return [str(item["name"]) for item in listed if isinstance(item, dict) and item.get("name")]
