"""Where a crawl's time goes: the full pipeline over the shared real sites, CPU per page by stage,
beside the embedding model's own throughput measured alone in the same run.

    .venv/bin/python bench/pipeline.py [--rounds 3] [--model @local/...] [--sites a,b] [--fixtures]
                                       [--generated N] [--ref DIR]

Each site of ../shared/data/sites (tests/realsites.py serves it on 127.0.0.1 as its host would,
from this process) is crawled with the real pipeline on the embedded local default (render_js
never, the project's politeness settings), once per round, each crawl in a child process of its
own with a fresh data folder, the model loaded before the crawl starts (its load time is printed
apart). `--fixtures` adds tests/sites/acme-plumbing and northside-dental; `--generated N` adds
bench/sitegen.py's generated site of N pages (about two passages of some 400 tokens a page: a crawl
where the model's time is most of the wall, as on a larger real site).

The crawl runs with HELPPUFF_PROFILE_STAGES on (helppuff_crawl/extensions/profile.py: thread CPU
time around each stage, exclusive of nested timed calls; the model's native threads read from
/proc), so the stats split the crawl's CPU into fetch, extract, chunk, embed (the model), write (D1
and Vectorize in the local cloud) and other. Right after its crawl, the same child embeds the
passages the crawl wrote (the chunks' embedded texts, read back from D1) alone, through the same
client and local cloud, in batches of the crawl's size, one call at a time: the model's own
throughput (texts/s, tokens/s) on the same texts, on the same machine, minutes apart at most.

Printed per site and overall (medians over rounds; the machine is shared and noisy, so read the
ratios beside the solo reference): pages, pages/s (wall of the whole crawl), CPU ms per page by
stage, and "model busy" twice: the wall time a model call was running during the crawl over the
crawl's wall time, and the crawl's embedding throughput (tokens over crawl wall) over the solo
one; then the crawl's wall, the model-alone time and "crawl/model", the first over the second: 1.0
is a crawl that takes no longer than embedding its passages once. Each round's crawl is read
against the model-alone run of its own child (the same conditions, minutes apart), then the median
over rounds is taken; "all sites" sums a round's crawl walls and its model-alone times, so a small
site's fixed costs (discovery's polite first fetches, Vectorize applying the last writes) weigh
as little as its seconds. Targets (the issue's): everything but the model at most 30 ms of CPU per
page; the model kept at least 90% busy; a crawl at most 1.5 times the model-alone time. This is a
benchmark, not a test.

`--ref DIR` (another checkout of the project, e.g. `git worktree add --detach ../ref main`) crawls
each site with that checkout's code too, its crawl and this one's back to back in each round (the
order alternating), and prints its table beside this one's: a before and after in the same conditions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STAGES = ("fetch", "extract", "chunk", "embed", "write", "other")
FIXTURES = ("acme-plumbing", "northside-dental")


# --- the child: one crawl, then the model alone ------------------------------------------


def _settings(url: str, data_dir: str, model: str) -> Any:
    from scrapy.settings import Settings

    from helppuff_crawl.web.addresses import loopback_allowance

    settings = Settings()
    settings.setmodule("helppuff_crawl.settings", priority="project")
    settings.update({"LOG_LEVEL": "ERROR", "HELPPUFF_DATA_DIR": data_dir, "HELPPUFF_RENDER_JS": "never",
                     "DOWNLOAD_HANDLERS": {}, "HELPPUFF_CLOUDFLARE_API_TOKEN": "",
                     "HELPPUFF_CLOUDFLARE_ACCOUNT_ID": "", "HELPPUFF_PROFILE_STAGES": True,
                     "HELPPUFF_EMBED_MODEL": model, **loopback_allowance(url)}, priority="cmdline")
    return settings


async def _warm_up(settings: Any, model: str) -> float:
    """Load the model (once per process) through a local cloud of its own; seconds it took."""
    from helppuff_crawl.kb.database import BackendConfig, KnowledgeBase

    with tempfile.TemporaryDirectory() as folder:
        config = BackendConfig.from_settings({**settings.copy_to_dict(), "HELPPUFF_DATA_DIR": folder})
        kb = KnowledgeBase.open(config)
        started = time.perf_counter()
        await kb.client.ai_embed(model, ["warm up the model"])
        seconds = time.perf_counter() - started
        await kb.close()
    return seconds


async def _solo(settings: Any, model: str, site: str, batch: int) -> dict[str, float]:
    """Embed the texts the crawl embedded, alone, through the crawl's own local cloud."""
    from helppuff_crawl.embed.models import WorkersAIEmbedder
    from helppuff_crawl.kb.database import BackendConfig, KnowledgeBase

    kb = KnowledgeBase.open(BackendConfig.from_settings(settings.copy_to_dict()))
    try:
        rows = await kb.query("SELECT prefix, text FROM chunks WHERE site = ? ORDER BY url, seq", [site])
        texts = [row["prefix"] + row["text"] for row in rows]
        embedder = WorkersAIEmbedder(kb.client, model, max_batch=batch)
        wall, cpu = time.perf_counter(), time.process_time()
        for first in range(0, len(texts), batch):
            await embedder.embed(texts[first:first + batch])
        return {"texts": len(texts), "tokens": embedder.prompt_tokens, "seconds": time.perf_counter() - wall,
                "cpu_s": time.process_time() - cpu}
    finally:
        await kb.close()


def child(site: str, url: str, data_dir: str, model: str) -> None:
    from scrapy.crawler import CrawlerProcess

    from helppuff_crawl.embed.models import EMBEDDING_MODELS
    from helppuff_crawl.spiders.site import SiteSpider

    settings = _settings(url, data_dir, model)
    load_s = asyncio.run(_warm_up(settings, model))
    process = CrawlerProcess(settings, install_root_handler=False)
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, url=url, site=site)
    wall, cpu = time.perf_counter(), time.process_time()
    process.start()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stats = crawler.stats.get_stats()
    batch = settings.getint("HELPPUFF_EMBED_BATCH_SIZE") or EMBEDDING_MODELS[model].max_batch
    solo = asyncio.run(_solo(settings, model, site, batch))
    profile = {key.removeprefix("helppuff/profile/"): value for key, value in stats.items()
               if key.startswith("helppuff/profile/")}
    print(json.dumps({
        "site": site, "pages": stats.get("helppuff/pages/fetched", 0), "learned": stats.get("helppuff/store/status/ok", 0),
        "seconds": wall, "cpu_s": cpu, "load_s": load_s, "profile": profile,
        "embed_tokens": stats.get("helppuff/embed/tokens", 0), "embed_calls": stats.get("helppuff/embed/calls", 0),
        "solo": solo,
    }))


# --- the parent: servers, rounds, medians ----------------------------------------------------


def run_child(site: str, url: str, model: str, root: Path = ROOT) -> dict[str, Any]:
    """One crawl in a child process, with the code of the checkout at `root`."""
    with tempfile.TemporaryDirectory() as data_dir:
        out = subprocess.run([sys.executable, str(root / "bench" / "pipeline.py"), "--child", site, url, data_dir,
                              model], cwd=root, capture_output=True, text=True,
                             env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if out.returncode:
        raise RuntimeError(f"the crawl of {site} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


class _Generated:
    """bench/sitegen.py's site, started and stopped as the other servers are."""

    def __init__(self, pages: int) -> None:
        self.pages = pages
        self.site: Any = None

    @property
    def url(self) -> str:
        return str(self.site.url)

    def __enter__(self) -> _Generated:
        from bench.sitegen import GeneratedSite

        self.site = GeneratedSite(self.pages)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.site is not None:
            self.site.close()
            self.site = None


def _servers(names: list[str], fixtures: bool, generated: int = 0) -> dict[str, Any]:
    from tests.realsites import real_site_server
    from tests.sitesserver import SiteServer

    servers: dict[str, Any] = {}
    for name in names:
        server = real_site_server(name)
        if server is None:
            print(f"skipped {name}: ../shared/data/sites/{name} is absent", file=sys.stderr)
            continue
        servers[name] = server
    if fixtures:
        for name in FIXTURES:
            servers[name] = SiteServer(ROOT / "tests" / "sites" / name)
    if generated:
        servers[f"generated-{generated}"] = _Generated(generated)
    return servers


def summarise(runs: list[dict[str, Any]]) -> dict[str, float]:
    """One round's figures from one or more crawls (summed, then divided: a site, or all of them)."""
    pages = sum(r["pages"] for r in runs)
    seconds = sum(r["seconds"] for r in runs)
    solo_seconds = sum(r["solo"]["seconds"] for r in runs)
    figures = {"pages": pages, "pages_s": pages / seconds if seconds else 0.0, "crawl_s": seconds,
               "solo_s": solo_seconds, "crawl_solo": seconds / solo_seconds if solo_seconds else 0.0}
    for stage in STAGES:
        figures[stage] = sum(r["profile"].get(f"cpu_ms/{stage}", 0.0) for r in runs) / max(pages, 1)
    figures["not_model"] = sum(figures[stage] for stage in STAGES if stage != "embed")
    figures["total"] = sum(r["profile"].get("cpu_ms/total", 0.0) for r in runs) / max(pages, 1)
    solo_texts, solo_tokens = sum(r["solo"]["texts"] for r in runs), sum(r["solo"]["tokens"] for r in runs)
    figures["solo_texts_s"] = solo_texts / solo_seconds if solo_seconds else 0.0
    figures["solo_tokens_s"] = solo_tokens / solo_seconds if solo_seconds else 0.0
    crawl_tokens = sum(r["embed_tokens"] for r in runs)
    figures["crawl_tokens_s"] = crawl_tokens / seconds if seconds else 0.0
    figures["busy_wall"] = sum(r["profile"].get("embed/busy_s", 0.0) for r in runs) / seconds if seconds else 0.0
    figures["busy_rate"] = figures["crawl_tokens_s"] / figures["solo_tokens_s"] if figures["solo_tokens_s"] else 0.0
    figures["solo_cpu_ms_text"] = (sum(r["solo"]["cpu_s"] for r in runs) * 1000 / solo_texts) if solo_texts else 0.0
    figures["crawl_embed_cpu_ms_text"] = (sum(r["profile"].get("cpu_ms/embed", 0.0) for r in runs) / solo_texts
                                          if solo_texts else 0.0)
    return figures


def median_of(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}


def print_table(rows: dict[str, dict[str, float]]) -> None:
    head = (f"{'site':<20}{'pages':>6}{'pages/s':>8} | CPU ms/page:" + "".join(f"{s:>8}" for s in STAGES)
            + f"{'non-model':>10}{'total':>8} | {'solo texts/s':>12}{'tokens/s':>9}{'busy(wall)':>11}{'busy(rate)':>11}"
            + f" | {'crawl s':>8}{'model s':>8}{'crawl/model':>12}")
    print(head)
    for name, f in rows.items():
        print(f"{name:<20}{f['pages']:>6.0f}{f['pages_s']:>8.2f} | {'':>11}" + "".join(f"{f[s]:>8.1f}" for s in STAGES)
              + f"{f['not_model']:>10.1f}{f['total']:>8.1f} | {f['solo_texts_s']:>12.1f}{f['solo_tokens_s']:>9.0f}"
              f"{f['busy_wall']:>11.0%}{f['busy_rate']:>11.0%} | {f['crawl_s']:>8.2f}{f['solo_s']:>8.2f}"
              f"{f['crawl_solo']:>12.2f}")


def main() -> None:
    from helppuff_crawl.embed.models import default_model
    from tests.realsites import REAL_SITES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", default=os.environ.get("HELPPUFF_EMBED_MODEL") or default_model(remote=False),
                        help="HELPPUFF_EMBED_MODEL (default: the contract's local default)")
    parser.add_argument("--sites", default=",".join(REAL_SITES), help="comma-separated shared real sites")
    parser.add_argument("--fixtures", action="store_true", help="also crawl tests/sites acme-plumbing and northside-dental")
    parser.add_argument("--generated", type=int, default=0, metavar="N",
                        help="also crawl bench/sitegen.py's generated site of N pages")
    parser.add_argument("--json", type=Path, help="write every crawl's figures here")
    parser.add_argument("--ref", type=Path, help="another checkout, crawled back to back with this one")
    args = parser.parse_args()
    trees = {"this": ROOT}
    if args.ref is not None:
        if not (args.ref / "bench" / "pipeline.py").is_file():
            parser.error(f"--ref: {args.ref} holds no bench/pipeline.py")
        trees["ref"] = args.ref.resolve()

    if args.generated < 0:
        parser.error(f"--generated must be a number of pages, got {args.generated}")
    servers = _servers([s for s in args.sites.split(",") if s], args.fixtures, args.generated)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {tree: {name: [] for name in servers} for tree in trees}
    print(f"model {args.model}; {len(servers)} sites, {args.rounds} rounds; CPU per page in ms "
          f"(thread CPU time by stage, HELPPUFF_PROFILE_STAGES)", flush=True)
    try:
        for server in servers.values():
            server.__enter__()
        for round_ in range(args.rounds):
            order = list(servers) if round_ % 2 == 0 else list(reversed(servers))
            for turn, name in enumerate(order):
                tree_order = list(trees) if (round_ + turn) % 2 == 0 else list(reversed(trees))
                for tree in tree_order:
                    r = run_child(name, servers[name].url, args.model, trees[tree])
                    runs[tree][name].append(r)
                    f = summarise([r])
                    print(f"round {round_ + 1} {tree:<4} {name:<20} {r['pages']:>3} pages in {r['seconds']:6.2f} s, "
                          f"model alone {r['solo']['seconds']:6.2f} s (crawl/model {f['crawl_solo']:.2f}), "
                          f"non-model {f['not_model']:5.1f} ms/page, embed {f['embed']:6.1f} ms/page, "
                          f"busy {f['busy_wall']:.0%} (wall) {f['busy_rate']:.0%} (rate); "
                          f"model load {r['load_s']:.1f} s", flush=True)
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)
    if args.json:
        args.json.write_text(json.dumps(runs if args.ref is not None else runs["this"], indent=1), encoding="utf-8")
    for tree, tree_runs in runs.items():
        rows = {name: median_of([summarise([r]) for r in site_runs]) for name, site_runs in tree_runs.items()}
        rows["all sites"] = median_of([summarise([site_runs[i] for site_runs in tree_runs.values()])
                                       for i in range(args.rounds)])
        print()
        if args.ref is not None:
            print(f"{tree}: {trees[tree]}")
        print_table(rows)
        overall = rows["all sites"]
        print(f"\nmedians of {args.rounds} rounds. Non-model CPU {overall['not_model']:.1f} ms/page (target <= 30); "
              f"model busy {overall['busy_rate']:.0%} of its solo throughput, {overall['busy_wall']:.0%} of the wall "
              f"(target >= 90%). Model CPU per text: crawl {overall['crawl_embed_cpu_ms_text']:.0f} ms, "
              f"solo {overall['solo_cpu_ms_text']:.0f} ms. Crawl wall / model-alone embed time: "
              f"{overall['crawl_solo']:.2f} overall (target <= 1.5); by site: "
              + ", ".join(f"{name} {f['crawl_solo']:.2f}" for name, f in rows.items() if name != "all sites") + ".")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:6])
    else:
        main()
