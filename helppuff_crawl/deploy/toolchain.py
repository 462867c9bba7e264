"""The Worker's toolchain, as scripts/setup-worker.sh installs it, and how wrangler is run offline.

Node 22 (the npm package node-linux-<arch>, in worker/.node) and wrangler (worker/node_modules):
`find_toolchain` finds them or says how to install them; `wrangler_environment` is the environment
wrangler runs in, for `helppuff serve` (devloop/server.py) and `helppuff deploy` (deploy/worker.py)
alike: without Cloudflare credentials it would try to use, and with the switches that keep it from
reaching out (metrics, error reports, the banner that asks npm for a newer wrangler);
`drop_inheritance_warnings` takes out of its output the warning that env "local" lacks the
top-level bindings, which is the point of that env.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

WORKER_DIR = Path(__file__).resolve().parents[2] / "worker"

# Variables wrangler must not see (it would try to reach Cloudflare with them), and what it gets instead.
_HIDDEN_VARIABLES = ("CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_KEY", "CLOUDFLARE_EMAIL")
_OFFLINE_VARIABLES = {
    "CLOUDFLARE_CF_FETCH_ENABLED": "false",
    "WRANGLER_SEND_METRICS": "false",
    "WRANGLER_SEND_ERROR_REPORTS": "false",
    "WRANGLER_HIDE_BANNER": "true",
    "WRANGLER_NO_SKILLS_UPDATE_PROMPTS": "true",
    "DO_NOT_TRACK": "1",
    "NO_COLOR": "1",
    "FORCE_COLOR": "0",
}


class DevServerError(Exception):
    """The dev loop could not start or stopped on its own; the message says why."""


@dataclass(frozen=True)
class Toolchain:
    node: Path
    wrangler: Path


def find_toolchain(worker_dir: Path = WORKER_DIR) -> Toolchain:
    """Node 22 and wrangler as scripts/setup-worker.sh installs them; DevServerError when absent."""
    node = worker_dir / ".node" / "bin" / "node"
    wrangler = worker_dir / "node_modules" / "wrangler" / "bin" / "wrangler.js"
    missing = [str(p.relative_to(worker_dir.parent)) for p in (node, wrangler) if not p.exists()]
    if missing:
        raise DevServerError(
            f"the Worker's toolchain is not installed ({', '.join(missing)} missing): run `bash scripts/setup-worker.sh`"
        )
    return Toolchain(node, wrangler)


def wrangler_environment(tool: Toolchain, base: dict[str, str] | None = None) -> dict[str, str]:
    """wrangler's environment: ours without Cloudflare credentials, plus the offline switches."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _HIDDEN_VARIABLES}
    env.update(_OFFLINE_VARIABLES)
    env["PATH"] = f"{tool.node.parent}{os.pathsep}{env.get('PATH', '')}"
    return env


_INHERITANCE_WARNING = re.compile(
    r'"env\.local" environment configuration'
    r'|exists at the top level, but not on "env\.local"'
    r'|binding with name "[A-Z_]+" at the top level, but not on "env\.local"'
    r"|This is not what you probably want, since"
    r'|Please add (?:"[a-z0-9_]+" to "env\.local"|a binding for "[A-Z_]+" to "env\.local)'
)


def drop_inheritance_warnings(lines: Iterable[str]) -> Iterator[str]:
    """wrangler's output without its warning that env "local" lacks the top-level bindings.

    The warning is a block: a "Processing ... configuration" line, then indented lines, up to the
    next line that starts in column 0. It is dropped only when every line of it is that warning;
    any other configuration warning passes through whole.
    """
    block: list[str] = []
    for line in lines:
        if block:
            if line.strip() and not line[:1].isspace():
                yield from _settle(block)
                block = []
            else:
                block.append(line)
                continue
        if "Processing" in line and "configuration" in line and "WARNING" in line:
            block = [line]
        else:
            yield line
    if block:
        yield from _settle(block)


def _settle(block: list[str]) -> list[str]:
    body = [line for line in block[1:] if line.strip()]
    if body and all(_INHERITANCE_WARNING.search(line) for line in body):
        return []
    return block
