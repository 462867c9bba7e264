"""The Worker's secrets on this machine: the ones `helppuff secret set` keeps for `helppuff serve`
(`<data dir>/worker-secrets.env`, this user's only), the chat providers' keys and base URLs from
serve's environment, and the lines of the env file serve gives wrangler (devloop/server.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from helppuff_crawl import settings as declared_settings

# The chat providers' Worker secrets and vars `helppuff serve` passes when set (settings.py HELPPUFF_<NAME>).
PROVIDER_VARIABLES = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "GEMINI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
)


def declared_provider_vars() -> dict[str, str]:
    """The providers' keys and base URLs as settings.py read them from the environment ("" = not set)."""
    return {
        "OPENAI_API_KEY": declared_settings.HELPPUFF_OPENAI_API_KEY,
        "OPENAI_BASE_URL": declared_settings.HELPPUFF_OPENAI_BASE_URL,
        "GEMINI_API_KEY": declared_settings.HELPPUFF_GEMINI_API_KEY,
        "GEMINI_BASE_URL": declared_settings.HELPPUFF_GEMINI_BASE_URL,
        "ANTHROPIC_API_KEY": declared_settings.HELPPUFF_ANTHROPIC_API_KEY,
        "ANTHROPIC_BASE_URL": declared_settings.HELPPUFF_ANTHROPIC_BASE_URL,
    }


def secret_lines(retell_api_key: str, provider_vars: dict[str, str] | None = None,
                 worker_secrets: dict[str, str] | None = None) -> str:
    """The env file's lines for the Worker's secrets and the providers' vars: RETELL_API_KEY and each of
    PROVIDER_VARIABLES, only when it is set, then each of `worker_secrets` (those `helppuff secret set`
    stored: local_secrets) that is not one of those."""
    lines = [f"RETELL_API_KEY={retell_api_key}\n"] if retell_api_key else []
    given = provider_vars or {}
    lines += [f"{name}={given[name]}\n" for name in PROVIDER_VARIABLES if given.get(name)]
    written = {"RETELL_API_KEY"} if retell_api_key else set()
    written |= {name for name in PROVIDER_VARIABLES if given.get(name)}
    lines += [f"{name}={value}\n" for name, value in sorted((worker_secrets or {}).items())
              if value and name not in written]
    return "".join(lines)


#: The Worker secrets `helppuff secret set` keeps for `helppuff serve`, in the data folder (mode 0600).
LOCAL_SECRETS_FILE = "worker-secrets.env"
_SECRET_NAME = re.compile(r"(?!HELPPUFF_|CLOUDFLARE_)[A-Z][A-Z0-9_]{0,63}")


def check_secret(name: str, value: str) -> None:
    """ValueError unless `name` can name a Worker secret and `value` is one non-empty line."""
    if not _SECRET_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a secret's name: capitals, digits and _, e.g. SEARCH_TOKEN "
                         "(not HELPPUFF_* or CLOUDFLARE_*, which are the project's own)")
    if not value or any(c in value for c in "\r\n\0"):
        raise ValueError(f"{name} must be one non-empty line")


def named_secrets(rows: Iterable[tuple[str, str | None]], environ: dict[str, str] | None = None) -> dict[str, str]:
    """The secrets the sites' custom retrievers name (knowledge.retrieval.secrets, tokenEnv) that are set
    in `environ` (os.environ: serve's environment), so serve passes them without `helppuff secret set`."""
    env = os.environ if environ is None else environ
    names: set[str] = set()
    for _site, text in rows:
        try:
            retrieval = (json.loads(text or "{}").get("knowledge") or {}).get("retrieval") or {}
            listed = [*(retrieval.get("secrets") or []), retrieval.get("tokenEnv")]
        except (ValueError, AttributeError, TypeError):
            continue
        names |= {name for name in listed if isinstance(name, str) and _SECRET_NAME.fullmatch(name)}
    return {name: env[name] for name in sorted(names) if env.get(name)}


def local_secrets(data_dir: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The secrets stored in `<data_dir>/worker-secrets.env`, each replaced by `environ`'s value of the
    same name when that is set (os.environ: serve's environment)."""
    path = Path(data_dir) / LOCAL_SECRETS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    env = os.environ if environ is None else environ
    stored = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {name: env.get(name) or value for name, value in stored.items()}


def store_local_secret(data_dir: Path, name: str, value: str) -> Path:
    """Keep the secret `name` for `helppuff serve`, replacing an earlier value; the file is this user's only."""
    check_secret(name, value)
    path = Path(data_dir) / LOCAL_SECRETS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    stored = local_secrets(data_dir, environ={})
    stored[name] = value
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("".join(f"{key}={stored[key]}\n" for key in sorted(stored)))
    os.replace(scratch, path)
    return path
