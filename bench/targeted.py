"""What a targeted recrawl of two pages costs against a full recrawl, after one page of the site changed.

    .venv/bin/python bench/targeted.py [--site acme-plumbing] [--model @local/...] [--rounds 1]

A copy of a fixture site (tests/sites/<site>) is served on 127.0.0.1 (tests/sitesserver.py, whose
request log counts what each crawl asked the site for) and crawled in full into a fresh local knowledge
base with `helppuff crawl`; the knowledge base is copied, then one page's text is changed (a paragraph
added to the FAQ page). Then, each in its own process and into its own copy: a full recrawl, and a
targeted recrawl of two pages, the changed one and one unchanged (`--only`). Printed side by side:
requests to the site, pages recorded, embedding calls and texts (the embedding client's counts, as the
run's stats hold them: helppuff/embed/calls, helppuff/embed/texts), REST calls to the (local) Cloudflare
API, wall seconds of the process (the model's load included, the same for both), and the ratios.
Both recrawls embed the same changed passages: the difference is everything else. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.sitesserver import SiteServer  # noqa: E402

HELPPUFF = str(Path(sys.executable).parent / "helppuff")
CHANGED, UNCHANGED = "/faq", "/pricing"  # the page changed, and the other page the targeted recrawl names
ADDED = "<h2>Rainwater tanks</h2>\n<p>We now service rainwater tanks in Brunswick and Coburg on weekends.</p>"


def crawl(server: SiteServer, data_dir: Path, model: str, only: list[str]) -> dict[str, Any]:
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(data_dir), "CLOUDFLARE_API_TOKEN": "", "CLOUDFLARE_ACCOUNT_ID": "",
           "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}  # this checkout
    if model:
        env["HELPPUFF_EMBED_MODEL"] = model
    args = [HELPPUFF, "crawl", server.url, "--site", "bench", "--render-js", "never", "--json"]
    for url in only:
        args += ["--only", url]
    asked = len(server.requests)
    started = time.perf_counter()
    out = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    run = json.loads(out.stdout)
    stats = run["stats"]
    return {
        "status": run["status"],
        "requests": len(server.requests) - asked,
        "pages": stats.get("helppuff/store/pages", 0),
        "embed_calls": stats.get("helppuff/embed/calls", 0),
        "embed_texts": stats.get("helppuff/embed/texts", 0),
        "rest_calls": stats.get("helppuff/cloudflare/calls", 0),
        "wall": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--site", default="acme-plumbing", help="a folder of tests/sites")
    parser.add_argument("--model", default="", help="HELPPUFF_EMBED_MODEL (default: the local default)")
    parser.add_argument("--rounds", type=int, default=1, help="recrawl pairs, each from the same first crawl")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        root = work / "site"
        shutil.copytree(ROOT / "tests" / "sites" / args.site, root)
        with SiteServer(root) as server:
            first = crawl(server, work / "first", args.model, [])
            page = root / (CHANGED.strip("/") + ".html")
            page.write_text(page.read_text(encoding="utf-8").replace("<main>", "<main>\n" + ADDED, 1), encoding="utf-8")
            results: dict[str, list[dict[str, Any]]] = {"full": [], "targeted": []}
            for n in range(args.rounds):
                for name, only in (("full", []), ("targeted", [server.url + CHANGED, server.url + UNCHANGED])):
                    data = work / f"{name}{n}"
                    shutil.copytree(work / "first", data)
                    results[name].append(crawl(server, data, args.model, only))
    print(f"site {args.site}: first crawl {first['pages']} pages, {first['requests']} requests, "
          f"{first['embed_texts']} texts embedded in {first['embed_calls']} calls, {first['wall']:.1f} s")
    print(f"one page changed ({CHANGED}); the targeted recrawl names it and {UNCHANGED}; medians of {args.rounds}")
    rows = ("status", "requests", "pages", "embed_calls", "embed_texts", "rest_calls", "wall")
    print(f"\n{'':<14}{'full recrawl':>14}{'targeted':>12}{'ratio':>9}")
    for key in rows:
        values = [r[key] for r in results["full"]], [r[key] for r in results["targeted"]]
        if key == "status":
            print(f"{key:<14}{values[0][0]:>14}{values[1][0]:>12}")
            continue
        full, targeted = (statistics.median(v) for v in values)
        ratio = f"{targeted / full:.3f}" if full else "-"
        shown = (f"{full:.1f}", f"{targeted:.1f}") if key == "wall" else (f"{full:g}", f"{targeted:g}")
        print(f"{key:<14}{shown[0]:>14}{shown[1]:>12}{ratio:>9}")


if __name__ == "__main__":
    main()
