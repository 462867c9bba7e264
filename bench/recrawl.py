"""An unchanged recrawl costs no embedding and no vector write; REST calls per page, the production
bottleneck, stay low.

    .venv/bin/python bench/recrawl.py [--pages 300] [--rate-limit 60/20]

Crawls a generated site (served on 127.0.0.1) into a fresh local knowledge base with
`helppuff crawl`, then crawls it again unchanged, each in its own process. Prints, for both:
embedding calls, vector writes, pages unchanged, REST calls to the (local) Cloudflare API and per
page, wall and CPU seconds (the child's user+system time). Targets for the second crawl: 0 embedding
calls, 0 vector writes, CPU <= 0.25 of the first; REST calls per page at most 1.5 for the first
crawl and 0.2 for the second (Cloudflare's API allows 1,200 requests per 5 minutes).
`--rate-limit N/S`: the local cloud answers 429 past N requests in S seconds, as Cloudflare does,
and the client paces itself to it (the default pace is Cloudflare's 1200/300).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sitegen import GeneratedSite  # noqa: E402

HELPPUFF = str(Path(sys.executable).parent / "helppuff")


def crawl(url: str, data_dir: str, rate_limit: str = "") -> dict[str, float]:
    env = {**os.environ, "HELPPUFF_DATA_DIR": data_dir, "CLOUDFLARE_API_TOKEN": "", "CLOUDFLARE_ACCOUNT_ID": ""}
    if rate_limit:
        env.update(HELPPUFF_LOCAL_RATE_LIMIT=rate_limit, HELPPUFF_CLOUDFLARE_RATE_LIMIT=rate_limit)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run([HELPPUFF, "crawl", url, "--site", "bench", "--render-js", "never", "--json",
                          "--max-pages", "1000"], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    stats = json.loads(out.stdout)["stats"]
    return {
        "wall": wall,
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "embed_calls": stats.get("helppuff/embed/calls", 0),
        "vector_writes": stats.get("helppuff/vectors/written", 0),
        "unchanged": stats.get("helppuff/store/unchanged", 0),
        "learned": stats.get("helppuff/store/status/ok", 0),
        "pages": stats.get("helppuff/store/pages", 0),
        "calls": stats.get("helppuff/cloudflare/calls", 0),
        "refused": stats.get("helppuff/cloudflare/rate_limited", 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--rate-limit", default="", metavar="N/S", help="e.g. 60/20: N requests per S seconds")
    args = parser.parse_args()
    site = GeneratedSite(args.pages)
    try:
        with tempfile.TemporaryDirectory() as data_dir:
            first = crawl(site.url, data_dir, args.rate_limit)
            second = crawl(site.url, data_dir, args.rate_limit)
    finally:
        site.close()
    print(f"{'crawl':<8}{'learned':>9}{'unchanged':>11}{'embed calls':>13}{'vector writes':>15}"
          f"{'REST calls':>12}{'per page':>10}{'429s':>6}{'wall s':>9}{'CPU s':>8}")
    for name, r in (("first", first), ("second", second)):
        per_page = r["calls"] / max(r["pages"], 1)
        print(f"{name:<8}{r['learned']:>9}{r['unchanged']:>11}{r['embed_calls']:>13}{r['vector_writes']:>15}"
              f"{r['calls']:>12}{per_page:>10.2f}{r['refused']:>6}{r['wall']:>9.1f}{r['cpu']:>8.1f}")
    ratio = second["cpu"] / first["cpu"]
    print(f"\nsecond crawl: {second['embed_calls']} embedding calls (target 0), {second['vector_writes']} vector "
          f"writes (target 0), CPU {ratio:.2f} of the first (target <= 0.25)")


if __name__ == "__main__":
    main()
