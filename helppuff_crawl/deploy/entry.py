"""The Worker's entry file with the sites' module retrievers bundled in (seed 001, "In TypeScript").

The Worker is one script for every site. A site whose knowledge.retrieval is {"type": "custom",
"module": ...} has its module bundled into it: `helppuff deploy` and `helppuff serve` write
`<data dir>/worker-entry.ts`, which imports the Worker (worker/src/index.ts, usable alone), and each
module the stored settings name, registers each by its key (worker/src/rag.ts registerRetriever), and
exports the Worker; wrangler's `main` (deploy) or its script argument (serve) is that file.

The key is the module's path as the site's stored settings hold it: absolute, resolved against the
folder of the helppuff.json that named it when the settings were stored (`stored_settings` in
helppuff_crawl/config/helppuff_json.py), so two sites' "./rag.ts" stay apart and the Worker finds a
site's module by reading its settings. A module whose file is missing when the bundle is built is left
out and said so; the Worker then answers that site without passages, saying the module is not in its
bundle. With no module retriever configured, no entry is written and index.ts is the entry as before.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

ENTRY_FILE = "worker-entry.ts"


@dataclass(frozen=True)
class Entry:
    path: Path | None  # the entry file written; None: no module retriever, worker/src/index.ts is the entry
    modules: dict[str, list[str]]  # each bundled module's key: the sites naming it
    missing: dict[str, list[str]]  # each named module whose file is not there: the sites naming it


def custom_modules(rows: Iterable[tuple[str, str | None]]) -> dict[str, list[str]]:
    """The module keys the sites' stored settings name (rows of (site, settings JSON text)), each
    with its sites, in key order."""
    found: dict[str, list[str]] = {}
    for site, text in rows:
        try:
            retrieval = (json.loads(text or "{}").get("knowledge") or {}).get("retrieval") or {}
        except (ValueError, AttributeError):
            continue
        module = retrieval.get("module") if isinstance(retrieval, dict) else None
        if retrieval.get("type") == "custom" and isinstance(module, str) and module:
            found.setdefault(module, []).append(site)
    return dict(sorted(found.items()))


def entry_source(modules: Iterable[str], worker_dir: Path) -> str:
    """The entry file's TypeScript: the Worker, each module registered by its key (its path)."""
    src = Path(worker_dir).resolve() / "src"
    lines = [
        "// Written by helppuff deploy / helppuff serve (helppuff_crawl/deploy/entry.py): the Worker with the",
        "// sites' module retrievers bundled in. Do not edit: it is written again each time.",
        f"import worker from {json.dumps(str(src / 'index.ts'))};",
        f"import {{ registerRetriever }} from {json.dumps(str(src / 'rag.ts'))};",
    ]
    keys = list(modules)
    lines += [f"import retriever{i} from {json.dumps(key)};" for i, key in enumerate(keys)]
    lines += [f"registerRetriever({json.dumps(key)}, retriever{i});" for i, key in enumerate(keys)]
    lines.append("export default worker;")
    return "\n".join(lines) + "\n"


def write_entry(data_dir: Path, rows: Iterable[tuple[str, str | None]], worker_dir: Path) -> Entry:
    """Write `<data_dir>/worker-entry.ts` for the modules `rows` name whose files exist (an earlier one
    removed when none is named); what was bundled and what was missing."""
    named = custom_modules(rows)
    modules = {key: sites for key, sites in named.items() if Path(key).is_absolute() and Path(key).is_file()}
    missing = {key: sites for key, sites in named.items() if key not in modules}
    for key, sites in missing.items():
        logger.warning("The module retriever %s (site %s) is not there: left out of the Worker's bundle",
                       key, ", ".join(sites))
    path = Path(data_dir).absolute() / ENTRY_FILE  # wrangler runs in the Worker's folder: no relative path
    if not modules:
        path.unlink(missing_ok=True)
        return Entry(None, modules, missing)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(entry_source(modules, worker_dir), encoding="utf-8")
    return Entry(path, modules, missing)
