"""Benchmark: chunking the Markdown of a generated 1,000-page small-business site.

    .venv/bin/python bench/chunk.py [--pages 1000] [--seed 7] [--repeat 3]

The site is generated from a fixed seed, so every run chunks the same pages: service pages (an
intro, a list of jobs, a prices table, a few FAQ pairs), location pages, FAQ pages, pricing
pages with long tables, about/team/contact pages, blog posts (most 2-8 KB, some long ones of
20-35 KB) and a few long legal pages. Each page is chunked `--repeat` times and its fastest time
is kept, which takes out most of a shared machine's noise.

It prints chunks and pages per second, the median and 95th percentile milliseconds per page,
and the median for typical pages: pages of 2-8 KB of Markdown, the size of most pages of a small
business site. Target: under 2 ms per typical page. Beside it, in the same run, a reference: a
naive splitter that cuts each page into 3,200-character windows at the last space and gives each
window a prefix and a SHA-1 id, the least any chunker must do. Machines are noisy, so read the
ratio between the two rather than the absolute times. This is not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from helppuff_crawl import settings as project
from helppuff_crawl.text.chunking import ChunkMeta, ChunkSizes, chunk_page, context_prefix

logger = logging.getLogger(__name__)

SITE = "acme"
ORIGIN = "https://acme-plumbing.com.au"
TYPICAL = (2 * 1024, 8 * 1024)  # bytes of Markdown

_WORDS = (
    "we repair replace install service maintain hot water gas heater tank valve leak drain pipe tap "
    "toilet shower kitchen bathroom roof gutter quote price call today same day emergency licensed "
    "insured local team family owned suburb warranty parts labour hour booking friendly fast "
    "reliable clean tidy plumber electrician customer home business system pressure safety check "
    "inspection report council compliance certificate brand model energy efficient solar heat pump "
    "continuous flow storage electric natural bottled lpg yearly annual free upfront fixed rate"
).split()
_SUBURBS = (
    "Richmond Carlton Fitzroy Brunswick Footscray Hawthorn Kew Camberwell Box Hill Doncaster "
    "Preston Coburg Essendon Moonee Ponds St Kilda Brighton Elwood Prahran Toorak Malvern"
).split()
_SERVICES = (
    "Hot Water Repairs", "Blocked Drains", "Gas Fitting", "Leak Detection", "Bathroom Renovations",
    "Emergency Plumbing", "Roof Plumbing", "Water Filters", "Backflow Testing", "Toilet Repairs",
)


def _sentence(rng: random.Random, low: int = 6, high: int = 22) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(low, high))]
    if rng.random() < 0.2:
        words.insert(rng.randrange(len(words)), f"${rng.randint(2, 90) * 10}")
    return " ".join(words).capitalize() + rng.choice("....!?")


def _paragraph(rng: random.Random, sentences: tuple[int, int] = (2, 6)) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(*sentences)))


def _faq(rng: random.Random, count: int) -> list[str]:
    out = []
    for _ in range(count):
        question = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 9))).capitalize()
        out += [f"**{question}?**", _paragraph(rng, (1, 4))]
    return out


def _table(rng: random.Random, rows: int) -> list[str]:
    lines = ["| Service | Price | What is included |", "|---|---:|---|"]
    for _ in range(rows):
        job = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 4))).capitalize()
        lines.append(f"| {job} | ${rng.randint(8, 400) * 5} | {_sentence(rng, 4, 14)} |")
    return ["\n".join(lines)]


def _bullets(rng: random.Random, count: int) -> list[str]:
    return ["\n".join(f"- {_sentence(rng, 3, 12)}" for _ in range(count))]


def _service(rng: random.Random, name: str) -> list[str]:
    return [
        f"# {name}", _paragraph(rng), _paragraph(rng),
        "## What we do", *_bullets(rng, rng.randint(4, 10)),
        "## Prices", _paragraph(rng, (1, 2)), *_table(rng, rng.randint(4, 14)),
        "## Why choose us", _paragraph(rng),
        "## Frequently asked questions", *_faq(rng, rng.randint(2, 6)),
    ]


def _location(rng: random.Random, suburb: str) -> list[str]:
    return [
        f"# Plumber in {suburb}", _paragraph(rng), f"## Services in {suburb}",
        *_bullets(rng, rng.randint(3, 8)), "## Areas we cover", _paragraph(rng, (1, 3)),
    ]


def _blog(rng: random.Random, sections: int) -> list[str]:
    blocks = [f"# {_sentence(rng, 4, 9).rstrip('.!?')}", _paragraph(rng)]
    for _ in range(sections):
        blocks.append(f"## {_sentence(rng, 2, 6).rstrip('.!?')}")
        for _ in range(rng.randint(1, 4)):
            blocks.append(_paragraph(rng, (2, 8)))
        if rng.random() < 0.3:
            blocks += _bullets(rng, rng.randint(3, 7))
        if rng.random() < 0.3:
            blocks.append(f"### {_sentence(rng, 2, 5).rstrip('.!?')}")
            blocks.append(_paragraph(rng))
    return blocks


def _page(rng: random.Random, n: int) -> tuple[str, str, str, str]:
    """(url, title, category, markdown) of the n-th page."""
    roll = rng.random()
    if roll < 0.25:
        name = rng.choice(_SERVICES)
        url, title, category, blocks = f"/services/{n}", name, "service", _service(rng, name)
    elif roll < 0.40:
        suburb = rng.choice(_SUBURBS)
        url, title, category = f"/plumber-{suburb.lower()}-{n}", f"Plumber {suburb}", "location"
        blocks = _location(rng, suburb)
    elif roll < 0.45:
        url, title, category = f"/faq/{n}", "Questions", "faq"
        blocks = ["# Frequently asked questions", _paragraph(rng, (1, 2)), *_faq(rng, rng.randint(12, 30))]
    elif roll < 0.50:
        url, title, category = f"/pricing/{n}", "Pricing", "pricing"
        blocks = ["# Pricing", _paragraph(rng), "## Price list", *_table(rng, rng.randint(20, 80))]
    elif roll < 0.55:
        url, title, category = f"/about/{n}", "About us", "about"
        blocks = ["# About us", *(_paragraph(rng) for _ in range(3)), "## Our team",
                  *_bullets(rng, rng.randint(3, 8)), "## Contact", _paragraph(rng, (1, 2))]
    elif roll < 0.57:
        url, title, category = f"/terms/{n}", "Terms", "legal"
        blocks = ["# Terms and conditions"]
        for k in range(rng.randint(15, 30)):
            blocks += [f"## {k + 1}. {_sentence(rng, 2, 4).rstrip('.!?')}", _paragraph(rng, (4, 12))]
    else:
        long = rng.random() < 0.08
        url, title, category = f"/blog/{n}", f"Blog post {n}", "blog"
        blocks = _blog(rng, rng.randint(12, 20) if long else rng.randint(2, 6))
    return ORIGIN + url, f"{title} | Acme Plumbing", category, "\n\n".join(blocks) + "\n"


def naive_chunks(markdown: str, meta: ChunkMeta) -> list[tuple[str, str, str]]:
    """The reference: 3,200-character windows cut at the last space, each with a prefix and id."""
    text = markdown.replace("\r\n", "\n").replace("\r", "\n")
    out = []
    start = 0
    while start < len(text):
        end = min(start + 3200, len(text))
        if end < len(text):
            space = text.rfind(" ", start, end)
            end = space if space > start else end
        window = text[start:end].strip()
        path = (meta.title,)
        prefix = context_prefix(meta.title, path, meta.category, meta.url)
        key = "\x1f".join((meta.site, meta.url, meta.title, str(len(out))))
        out.append((hashlib.sha1(key.encode()).hexdigest(), prefix, window))
        start = end
    return out


@dataclass
class Result:
    times: list[float]  # seconds per page (fastest of the repeats)
    chunks: int


def measure(pages: list[tuple[ChunkMeta, str]], chunker: Callable[..., list], repeat: int) -> Result:
    times = []
    chunks = 0
    for meta, markdown in pages:
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            result = chunker(markdown, meta)
            best = min(best, time.perf_counter() - start)
        times.append(best)
        chunks += len(result)
    return Result(times, chunks)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    pages = []
    for n in range(args.pages):
        url, title, category, markdown = _page(rng, n)
        pages.append((ChunkMeta(SITE, url, title, category), markdown))
    sizes = [len(markdown.encode()) for _, markdown in pages]
    typical = [k for k, size in enumerate(sizes) if TYPICAL[0] <= size <= TYPICAL[1]]
    print(f"site: {len(pages)} pages, {sum(sizes) / 1e6:.2f} MB of Markdown, seed {args.seed}")
    print(
        f"page sizes: median {statistics.median(sizes) / 1024:.1f} KB, max {max(sizes) / 1024:.1f} KB, "
        f"{len(typical)} typical (2-8 KB), {sum(s > 20 * 1024 for s in sizes)} over 20 KB"
    )
    print(f"each page chunked {args.repeat} times, fastest kept\n")

    # The crawl's own sizes: the project's defaults (HELPPUFF_CHUNK_MIN_TOKENS, HELPPUFF_CHUNK_MAX_TOKENS).
    chunk_sizes = ChunkSizes(project.HELPPUFF_CHUNK_MIN_TOKENS, project.HELPPUFF_CHUNK_MAX_TOKENS)

    def crawl_chunks(markdown: str, meta: ChunkMeta) -> list:
        return chunk_page(markdown, meta, chunk_sizes)

    results = {
        "chunk_page": measure(pages, crawl_chunks, args.repeat),
        "naive 3,200-char splitter": measure(pages, naive_chunks, args.repeat),
    }
    columns = [("chunks", 8), ("chunks/s", 11), ("pages/s", 9), ("median ms", 11), ("p95 ms", 9)]
    columns.append(("typical ms", 12))
    print(" " * 28 + "".join(f"{name:>{width}}" for name, width in columns))
    for name, result in results.items():
        total = sum(result.times)
        ordered = sorted(result.times)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        typical_ms = statistics.median(result.times[k] for k in typical) if typical else float("nan")
        print(
            f"{name:28}{result.chunks:>8}{result.chunks / total:>11.0f}{len(pages) / total:>9.0f}"
            f"{_ms(statistics.median(result.times)):>11}{_ms(p95):>9}{_ms(typical_ms):>12}"
        )
    ours, ref = results["chunk_page"], results["naive 3,200-char splitter"]
    typical_ours = statistics.median(ours.times[k] for k in typical)
    typical_ref = statistics.median(ref.times[k] for k in typical)
    print(
        f"\nchunk_page / reference, typical pages: {typical_ours / typical_ref:.1f}x; "
        f"target under 2 ms per typical page: {'met' if typical_ours < 0.002 else 'NOT met'} "
        f"({_ms(typical_ours)} ms)"
    )
    every = [c for meta, markdown in pages for c in crawl_chunks(markdown, meta)]
    tokens = sorted(c.tokens for c in every)
    least = chunk_sizes.min_tokens
    small = [c for c in every if c.tokens < least]
    print(
        f"chunk sizes: median {statistics.median(tokens):.0f} tokens, p5 {tokens[len(tokens) // 20]}, "
        f"p95 {tokens[len(tokens) * 19 // 20]}, max {tokens[-1]}; {len(small)} under {least} "
        f"tokens, {sum(c.is_faq for c in small)} of them FAQ pairs (never merged); "
        f"{sum(c.oversized for c in every)} oversized"
    )
    slowest = max(range(len(pages)), key=lambda k: ours.times[k])
    url, size = pages[slowest][0].url, sizes[slowest] / 1024
    print(f"slowest page: {url} ({size:.1f} KB) {_ms(ours.times[slowest])} ms")


if __name__ == "__main__":
    main()
