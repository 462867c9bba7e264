"""The CPU cost of `render_js: auto`'s decision on the real small-business sites, beside the old one.

    .venv/bin/python bench/render_decision.py [--data ../shared/data/sites] [--repeat 7]

Reads every .html file of every site folder under --data (each page's URL is its path on
http://127.0.0.1:8000/) and times, in the same run, per page (time.process_time, the median over
--repeat passes):

- old: the whole-page measure the decision used before (`pagecheck.text_and_scripts`, rendering
  under 300 characters of text with two or more <script> elements);
- new: the decision on the main content and the page's scripts (`pagecheck.render_reason`);
- extract: the extraction the extract pipeline runs on every page (`text.markdown.extract`), for scale.

It prints the median and the largest of those per-page times, and which pages each rule renders.
The CPU budget is 30 ms a page for everything but the embedding model. These machines are noisy:
read the columns beside each other, not one run against another. This is not a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helppuff_crawl.text.markdown import extract
from helppuff_crawl.web.pagecheck import render_reason, text_and_scripts

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sites"
ORIGIN = "http://127.0.0.1:8000"


def _old_rule(html: str, url: str) -> bool:
    chars, scripts = text_and_scripts(html)
    return chars < 300 and scripts >= 2


def _millis(call: Callable[[], Any], repeat: int) -> float:
    """The median CPU milliseconds of `call` over `repeat` runs."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        call()
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    files = sorted(args.data.glob("*/**/*.html"))
    if not files:
        print(f"no site pages under {args.data}", file=sys.stderr)
        return 2
    pages = [(str(path.relative_to(args.data)), path.read_text(encoding="utf-8", errors="replace")) for path in files]
    rules: dict[str, Callable[[str, str], Any]] = {
        "old": _old_rule,
        "new": lambda html, url: render_reason(html, url=url),
        "extract": lambda html, url: extract(html, url),
    }
    millis: dict[str, list[float]] = {name: [] for name in rules}
    renders: dict[str, list[str]] = {"old": [], "new": []}
    for name, html in pages:
        url = f"{ORIGIN}/{name.split('/', 1)[1]}"
        for rule, call in rules.items():
            millis[rule].append(_millis(lambda call=call: call(html, url), args.repeat))
        if _old_rule(html, url):
            renders["old"].append(name)
        if why := render_reason(html, url=url):
            renders["new"].append(f"{name} ({why})")
    sites = len({name.split("/", 1)[0] for name, _html in pages})
    print(f"{len(pages)} pages of {sites} sites under {args.data}, median of {args.repeat} runs per page")
    print(f"{'':<8} {'median CPU ms/page':>18} {'largest':>8} {'total ms':>9}")
    for rule, times in millis.items():
        print(f"{rule:<8} {statistics.median(times):>18.2f} {max(times):>8.2f} {sum(times):>9.1f}")
    for rule, names in renders.items():
        print(f"\n{rule}: renders {len(names)} pages")
        for name in names:
            print(f"  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
