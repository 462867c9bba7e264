"""Pruning before and after, in one run: a git ref's text/pruning.py beside the checkout's.

    PYTHONPATH=$PWD .venv/bin/python -m bench.extract_before_after [--ref main]

Both versions extract every page of the article benchmark (bench/extract.py: its scorer, its data)
and every page of the shared real sites (../shared/data/sites, furniture learned from each site's
first five pages, as the crawl learns it from a sample of five), each page with one version right
after the other. Printed: the benchmark's precision, recall and F1 for both, the benchmark pages
whose text changed with their (tp, fp, fn), each real page whose Markdown changed with the lines
it gained (+) and lost (-), and extraction CPU per real page for both (three interleaved rounds).
Only pruning differs: `markdown.extract` is given the ref's `prune` and `trafilatura_pick`.
This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import difflib
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

import helppuff_crawl.text.markdown as markdown
import helppuff_crawl.text.pruning as pruning
from bench import extract as article_bench
from helppuff_crawl.text.boilerplate import learn_furniture

ROOT = Path(__file__).resolve().parents[1]
SITES = ROOT.parent / "shared" / "data" / "sites"


def _versions(ref: str) -> dict[str, types.ModuleType]:
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:helppuff_crawl/text/pruning.py"],
                            capture_output=True, text=True, check=True).stdout
    before = types.ModuleType("pruning_before")
    exec(compile(source, f"{ref}:pruning.py", "exec"), before.__dict__)  # noqa: S102 - the repository's own file
    return {"before": before, "after": pruning}


def _extract(version: types.ModuleType, html: bytes, url: str, drop: frozenset[str] = frozenset()):
    markdown.prune, markdown.trafilatura_pick = version.prune, version.trafilatura_pick
    start = time.process_time()
    result = markdown.extract(html, url, drop_blocks=drop)
    return result, time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default="main", help="the git ref whose pruning.py is 'before'")
    args = parser.parse_args(argv)
    versions = _versions(args.ref)
    pages = article_bench.load(article_bench.DEFAULT_DATA)
    texts: dict[str, dict[str, str]] = {name: {} for name in versions}
    for key, url, _truth, html in pages:
        for name, version in versions.items():
            texts[name][key] = _extract(version, html, url)[0].markdown
    print(f"article-extraction-benchmark: {len(pages)} pages")
    for name in versions:
        result = article_bench.score(article_bench.match(truth, texts[name][key]) for key, _u, truth, _h in pages)
        print(f"  {name:<7} precision {result.precision:.4f}  recall {result.recall:.4f}  F1 {result.f1:.4f}")
    for key, _url, truth, _html in pages:
        if texts["before"][key] != texts["after"][key]:
            print(f"  changed {key[:16]}: (tp, fp, fn) {article_bench.match(truth, texts['before'][key])}"
                  f" -> {article_bench.match(truth, texts['after'][key])}")
    cpu: dict[str, list[float]] = {name: [] for name in versions}
    total = changed = 0
    for site in sorted(d for d in SITES.iterdir() if d.is_dir()) if SITES.is_dir() else []:
        files = sorted(site.rglob("*.htm*"))
        drop = learn_furniture([f.read_bytes() for f in files[:5]]).drop
        for path in files:
            html, url = path.read_bytes(), f"https://{site.name}.example/{path.relative_to(site)}"
            out = {}
            for _round in range(3):
                for name, version in versions.items():
                    out[name], seconds = _extract(version, html, url, drop)
                    cpu[name].append(seconds)
            total += 1
            before, after = out["before"].markdown, out["after"].markdown
            if before == after:
                continue
            changed += 1
            print(f"\n{path.relative_to(SITES)}: {out['before'].method} -> {out['after'].method},"
                  f" {len(before)} -> {len(after)} characters")
            for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0):
                if line[:1] in "+-" and line[:3] not in ("+++", "---") and line[1:].strip():
                    print(f"    {line[:150]}")
    print(f"\nreal sites: {total} pages, {changed} changed")
    for name, seconds in cpu.items():
        if seconds:
            print(f"  {name:<7} extract CPU {statistics.mean(seconds) * 1000:.2f} ms/page mean,"
                  f" {statistics.median(seconds) * 1000:.2f} median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
