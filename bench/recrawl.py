"""An unchanged recrawl costs no embedding and no vector write; REST calls per page, the production
bottleneck, stay low.

    .venv/bin/python bench/recrawl.py [--pages 300] [--rate-limit 60/20] [--model M] [--rounds 1] [--ref DIR]

Crawls a generated site (served on 127.0.0.1) into a fresh local knowledge base with
`helppuff crawl`, then crawls it again unchanged, each in its own process. Prints, for both:
embedding calls, vector writes, pages unchanged, REST calls to the (local) Cloudflare API and per
page, wall and CPU seconds (the child's user+system time). Targets for the second crawl: 0 embedding
calls, 0 vector writes, CPU <= 0.25 of the first; REST calls per page at most 1.5 for the first
crawl and 0.2 for the second (Cloudflare's API allows 1,200 requests per 5 minutes).
`--rate-limit N/S`: the local cloud answers 429 past N requests in S seconds, as Cloudflare does,
and the client paces itself to it (the default pace is Cloudflare's 1200/300).
`--model M`: HELPPUFF_EMBED_MODEL for every crawl (default: the checkout's local default).

`--ref DIR` (another checkout of the project, e.g. `git worktree add --detach /tmp/ref <commit>`) runs
the same first and second crawl with that checkout's code too (its `helppuff_crawl` first on
PYTHONPATH, this venv's packages), with a data folder of its own, back to back with this checkout's
in each round (the order alternating), and prints its table beside this one's: a before and after in
the same conditions. With `--rounds N`, each figure is the median of N rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sitegen import GeneratedSite  # noqa: E402

HELPPUFF = str(Path(sys.executable).parent / "helppuff")
FIGURES = ("learned", "unchanged", "embed_calls", "vector_writes", "calls", "pages", "refused", "wall", "cpu")


def crawl_env(data_dir: str, rate_limit: str = "", root: Path = ROOT, model: str = "") -> dict[str, str]:
    """The environment of a crawl into `data_dir` with the code of the checkout at `root`: another
    checkout's directory comes first on PYTHONPATH, so its `helppuff_crawl` is imported before this
    venv's (an editable install of this checkout, found after sys.path)."""
    env = {**os.environ, "HELPPUFF_DATA_DIR": data_dir, "CLOUDFLARE_API_TOKEN": "", "CLOUDFLARE_ACCOUNT_ID": ""}
    if root != ROOT:
        env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])
    if rate_limit:
        env.update(HELPPUFF_LOCAL_RATE_LIMIT=rate_limit, HELPPUFF_CLOUDFLARE_RATE_LIMIT=rate_limit)
    if model:
        env["HELPPUFF_EMBED_MODEL"] = model
    return env


def crawl(url: str, data_dir: str, rate_limit: str = "", root: Path = ROOT, model: str = "") -> dict[str, float]:
    """One `helppuff crawl` of `url` into `data_dir`, with the code of the checkout at `root`."""
    env = crawl_env(data_dir, rate_limit, root, model)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run([HELPPUFF, "crawl", url, "--site", "bench", "--render-js", "never", "--json",
                          "--max-pages", "1000"], cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        raise RuntimeError(f"the crawl with {root} failed:\n{out.stderr[-3000:]}")
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


def first_and_second(url: str, rate_limit: str, root: Path, model: str) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as data_dir:
        first = crawl(url, data_dir, rate_limit, root, model)
        second = crawl(url, data_dir, rate_limit, root, model)
    return {"first": first, "second": second}


def median_run(runs: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {name: {key: statistics.median(r[name][key] for r in runs) for key in FIGURES}
            for name in ("first", "second")}


def print_table(result: dict[str, dict[str, float]]) -> None:
    print(f"{'crawl':<8}{'learned':>9}{'unchanged':>11}{'embed calls':>13}{'vector writes':>15}"
          f"{'REST calls':>12}{'per page':>10}{'429s':>6}{'wall s':>9}{'CPU s':>8}")
    for name, r in result.items():
        per_page = r["calls"] / max(r["pages"], 1)
        print(f"{name:<8}{r['learned']:>9.0f}{r['unchanged']:>11.0f}{r['embed_calls']:>13.0f}"
              f"{r['vector_writes']:>15.0f}{r['calls']:>12.0f}{per_page:>10.2f}{r['refused']:>6.0f}{r['wall']:>9.1f}{r['cpu']:>8.1f}")
    first, second = result["first"], result["second"]
    ratio = second["cpu"] / first["cpu"] if first["cpu"] else 0.0
    print(f"\nsecond crawl: {second['embed_calls']:.0f} embedding calls (target 0), {second['vector_writes']:.0f} "
          f"vector writes (target 0), CPU {ratio:.2f} of the first (target <= 0.25)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--rate-limit", default="", metavar="N/S", help="e.g. 60/20: N requests per S seconds")
    parser.add_argument("--model", default="", help="HELPPUFF_EMBED_MODEL (default: the checkout's local default)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--ref", type=Path, help="another checkout, crawled back to back with this one")
    args = parser.parse_args()
    trees = {"this": ROOT}
    if args.ref is not None:
        if not (args.ref / "helppuff_crawl").is_dir():
            parser.error(f"--ref: {args.ref} holds no helppuff_crawl package")
        trees["ref"] = args.ref.resolve()
    if args.rounds < 1:
        parser.error(f"--rounds must be >= 1, got {args.rounds}")
    runs: dict[str, list[dict[str, dict[str, float]]]] = {tree: [] for tree in trees}
    site = GeneratedSite(args.pages)
    try:
        for round_ in range(args.rounds):
            for tree in list(trees) if round_ % 2 == 0 else list(reversed(trees)):
                r = first_and_second(site.url, args.rate_limit, trees[tree], args.model)
                runs[tree].append(r)
                if len(trees) > 1 or args.rounds > 1:
                    print(f"round {round_ + 1} {tree:<4} first {r['first']['wall']:7.1f} s wall "
                          f"{r['first']['cpu']:7.1f} CPU s, second {r['second']['wall']:6.1f} s wall "
                          f"{r['second']['cpu']:6.1f} CPU s", flush=True)
    finally:
        site.close()
    for tree, tree_runs in runs.items():
        print()
        if len(trees) > 1:
            print(f"{tree}: {trees[tree]}" + (f" (medians of {args.rounds} rounds)" if args.rounds > 1 else ""))
        print_table(median_run(tree_runs))
    if len(trees) > 1:
        this, ref = median_run(runs["this"])["first"], median_run(runs["ref"])["first"]
        print(f"\nfirst crawl, this / ref: wall {this['wall'] / ref['wall']:.2f}, CPU {this['cpu'] / ref['cpu']:.2f}")


if __name__ == "__main__":
    main()
