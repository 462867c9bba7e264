"""The same crawls with this checkout and another give the same knowledge, byte for byte.

    .venv/bin/python bench/same_knowledge.py --ref DIR [--real mr-tu-bakery] [--sites DIR] [--keep DIR]

DIR is another checkout of the project (e.g. `git worktree add --detach /tmp/ref <commit>`): a change
that must not change what is learned is checked against the code before it. Two sites are each served
once on 127.0.0.1 (so their URLs are the same for both checkouts): the fixture site
tests/sites/acme-plumbing (tests/sitesserver.py) and a real one from ../shared/data/sites
(tests/realsites.py; `--real`, `--sites` for another folder). With each checkout (its directory first on
PYTHONPATH, this venv's packages) and into a fresh data folder of its own, four `helppuff crawl URL
--site s --render-js never --json` runs on the local cloud, each in its own process: a first crawl, the
same crawl again (nothing changed), a targeted one (`--only` the first page, by URL, the reference's
crawls learned passages from, the home page aside), and that targeted crawl with smaller chunks
(`-s HELPPUFF_CHUNK_MIN_TOKENS=40 -s HELPPUFF_CHUNK_MAX_TOKENS=120`), which the crawl's start makes a full
one, learning every page again.

After each crawl the knowledge is read from the local cloud's files and compared: D1 `pages` and
`chunks`, and the vector manifest D1 `vectors`, every column but the times (`*_at`) and `run_id`, row by
row on the primary key; and the Vectorize index's vectors (id, namespace, float32 values as stored,
metadata), with the writes still pending counted. Prints, for each site, crawl and table, "identical"
with the row count, or the first differences; exits 1 when any differ. A benchmark script, not a test:
it takes a few minutes (eight crawls a site, the local embedding model loaded in each).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.realsites import real_site_server, shared_sites_dir  # noqa: E402
from tests.sitesserver import SiteServer  # noqa: E402

HELPPUFF = str(Path(sys.executable).parent / "helppuff")
CRAWLS = {"first": (False, ()), "second": (False, ()), "targeted": (True, ()),  # name: (--only, -s settings)
          "resized": (True, ("HELPPUFF_CHUNK_MIN_TOKENS=40", "HELPPUFF_CHUNK_MAX_TOKENS=120"))}
D1_TABLES = {"pages": ("site", "url"), "chunks": ("id",), "vectors": ("id",)}  # table: primary key
SHOWN = 3  # differences printed per table

Rows = dict[tuple[Any, ...], dict[str, Any]]


def crawl(root: Path, url: str, data_dir: Path, only: str = "", settings: tuple[str, ...] = ()) -> dict[str, Any]:
    """One `helppuff crawl` with the code of the checkout at `root`; its --json report."""
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(data_dir), "CLOUDFLARE_API_TOKEN": "", "CLOUDFLARE_ACCOUNT_ID": "",
           "PYTHONPATH": os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])}
    command = [HELPPUFF, "crawl", url, "--site", "s", "--render-js", "never", "--json",
               *(["--only", only] if only else []), *(arg for setting in settings for arg in ("-s", setting))]
    out = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"the crawl with {root} printed no report (exit {out.returncode}):\n"
                           f"{out.stderr[-3000:]}") from None


def knowledge(data_dir: Path) -> dict[str, Rows]:
    """What the local cloud in `data_dir` holds: the D1 tables (times and run ids left out) and the
    Vectorize index's vectors, each by primary key."""
    from helppuff_crawl.local.cloud import LocalCloud

    found: dict[str, Rows] = {}
    conn = sqlite3.connect(data_dir / "d1" / "helppuff.sqlite3")
    conn.row_factory = sqlite3.Row
    try:
        for table, key in D1_TABLES.items():
            columns = [row["name"] for row in conn.execute(f"PRAGMA table_info({table})")
                       if not row["name"].endswith("_at") and row["name"] != "run_id"]
            found[table] = {tuple(row[k] for k in key): dict(row)
                            for row in conn.execute(f"SELECT {', '.join(columns)} FROM {table}")}
    finally:
        conn.close()
    index = LocalCloud(data_dir).vector_index("helppuff")
    try:
        index.apply_due()
        pending = index.pending()
    finally:
        index.close()
    conn = sqlite3.connect(data_dir / "vectorize" / "helppuff.sqlite3")
    try:
        rows = conn.execute("SELECT id, namespace, vals, metadata FROM vectors")
        found["Vectorize"] = {(vid,): {"namespace": space, "values": bytes(vals), "metadata": json.loads(meta or "null")}
                              for vid, space, vals, meta in rows}
    finally:
        conn.close()
    if pending:
        found["Vectorize"][("(writes pending)",)] = {"count": pending}
    return found


def differences(ref: Rows, here: Rows) -> list[str]:
    """The first differences between two tables' rows, as lines (none when they are the same)."""
    lines = [f"only with --ref: {key}" for key in sorted(ref.keys() - here.keys(), key=str)[:SHOWN]]
    lines += [f"only with this checkout: {key}" for key in sorted(here.keys() - ref.keys(), key=str)[:SHOWN]]
    for key in sorted(ref.keys() & here.keys(), key=str):
        changed = [column for column in ref[key] if ref[key][column] != here[key].get(column)]
        if changed:
            column = changed[0]
            lines.append(f"{key} differs in {', '.join(changed)}; {column}: --ref {_short(ref[key][column])} "
                         f"!= this {_short(here[key].get(column))}")
        if len(lines) >= 3 * SHOWN:
            break
    return lines


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def first_learned(data_dir: Path, home: str) -> str:
    """The first page (by URL) the crawls learned passages from, the home page aside: the targeted crawl's."""
    conn = sqlite3.connect(data_dir / "d1" / "helppuff.sqlite3")
    try:
        row = conn.execute("SELECT url FROM pages WHERE status IN ('ok', 'unchanged') AND url NOT IN (?, ?) "
                           "AND url IN (SELECT url FROM chunks) ORDER BY url LIMIT 1", [home, home + "/"]).fetchone()
    finally:
        conn.close()
    if row is None:
        raise RuntimeError(f"the first crawl of {home} learned no page besides the home page")
    return str(row[0])


def compare_site(name: str, server: SiteServer, trees: dict[str, Path], work: Path) -> bool:
    """The three crawls of one site with each checkout, compared after each; True when all are the same."""
    same = True
    folders = {tree: work / name / tree for tree in trees}
    for folder in folders.values():  # fresh: a kept folder may hold an earlier run's
        shutil.rmtree(folder, ignore_errors=True)
    only = ""
    with server:
        print(f"{name} ({server.url})", flush=True)
        for step, (targeted, settings) in CRAWLS.items():
            held: dict[str, dict[str, Rows]] = {}
            status: dict[str, str] = {}
            if targeted and not only:
                only = first_learned(folders["ref"], server.url)
            for tree, root in trees.items():
                report = crawl(root, server.url, folders[tree], only if targeted else "", settings)
                full = ", in full" if report.get("stats", {}).get("helppuff/targeted/full_instead") else ""
                status[tree] = f"{report.get('status')} ({report.get('pages_found')} found{full})"
                held[tree] = knowledge(folders[tree])
            given = (f" --only {only}" if targeted else "") + "".join(f" -s {setting}" for setting in settings)
            print(f"  {step} crawl{given}: run --ref {status['ref']}, this {status['this']}")
            for table in held["ref"]:
                lines = differences(held["ref"][table], held["this"][table])
                if lines:
                    same = False
                    print(f"    {table:<10} DIFFER")
                    for line in lines:
                        print(f"      {line}")
                else:
                    print(f"    {table:<10} identical ({len(held['ref'][table])} rows)")
    return same


@contextmanager
def _work(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    folder = Path(tempfile.mkdtemp(prefix="same-knowledge-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--ref", type=Path, required=True, help="the other checkout (the code before)")
    parser.add_argument("--real", default="mr-tu-bakery", help="the real site (tests/realsites.py REAL_SITES)")
    parser.add_argument("--sites", type=Path, default=shared_sites_dir(),
                        help="the real sites' folder (default ../shared/data/sites)")
    parser.add_argument("--keep", type=Path, help="keep the data folders here (default: a temporary folder)")
    args = parser.parse_args()
    if not (args.ref / "helppuff_crawl").is_dir():
        parser.error(f"--ref: {args.ref} holds no helppuff_crawl package")
    trees = {"ref": args.ref.resolve(), "this": ROOT}
    sites = {"acme-plumbing": SiteServer(ROOT / "tests" / "sites" / "acme-plumbing")}
    real = real_site_server(args.real, sites=args.sites) if args.sites is not None else None
    if real is None:
        parser.error(f"--sites: no folder {args.real} in {args.sites}")
    sites[args.real] = real
    print(f"--ref {trees['ref']}\nthis  {ROOT}\n")
    with _work(args.keep) as work:
        same = [compare_site(name, server, trees, work) for name, server in sites.items()]
    print("\nthe same knowledge" if all(same) else "\nTHE KNOWLEDGE DIFFERS")
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())
