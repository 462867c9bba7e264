"""Crawl speed and memory: our discovery + fetch beside a plain Scrapy spider, same run.

    .venv/bin/python bench/crawl.py [--pages 1000] [--repeat 3]

A generated 1,000-page site is served on 127.0.0.1 (from this process, in threads). Each crawl
runs in its own child process (so its peak RSS is its own), alternating:
  ours   `site` spider: discovery (robots.txt, home, sitemap) and fetching, rendering off, with
         our middlewares; item pipelines off (this measures discovery + fetch, not extraction);
  plain  a plain scrapy.Spider fetching the sitemap's URLs with the same politeness settings
         (concurrency, AutoThrottle, robots.txt).
Prints pages/s and peak RSS per run, medians, and ours/plain. Target: ratio >= 0.8, RSS < 300 MB.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sitegen import GeneratedSite  # noqa: E402

_CHILD = Path(__file__).with_name("crawl_child.py")


def run_child(kind: str, url: str, pages: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as data_dir:
        out = subprocess.run([sys.executable, str(_CHILD), kind, url, str(pages), data_dir],
                             cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    site = GeneratedSite(args.pages)
    results: dict[str, list[dict[str, float]]] = {"ours": [], "plain": []}
    try:
        for round_ in range(args.repeat):
            for kind in ("plain", "ours") if round_ % 2 == 0 else ("ours", "plain"):
                r = run_child(kind, site.url, args.pages)
                r["rate"] = r["pages"] / r["seconds"]
                results[kind].append(r)
                print(f"round {round_ + 1} {kind:<5} {r['pages']:>5} pages in {r['seconds']:6.2f} s "
                      f"= {r['rate']:7.1f} pages/s, peak RSS {r['rss_mb']:6.1f} MB", flush=True)
    finally:
        site.close()
    med = {k: statistics.median(r["rate"] for r in v) for k, v in results.items()}
    rss = {k: max(r["rss_mb"] for r in v) for k, v in results.items()}
    print()
    print(f"{'crawler':<8}{'median pages/s':>16}{'max peak RSS MB':>18}")
    for kind in ("plain", "ours"):
        print(f"{kind:<8}{med[kind]:>16.1f}{rss[kind]:>18.1f}")
    print(f"\nours/plain rate ratio: {med['ours'] / med['plain']:.2f} (target >= 0.8); "
          f"ours peak RSS {rss['ours']:.0f} MB (target < 300)")


if __name__ == "__main__":
    main()
