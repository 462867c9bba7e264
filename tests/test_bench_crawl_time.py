"""What bench/pipeline.py and bench/recrawl.py report about a crawl's time: the crawl's wall over the
model-alone time, and a reference checkout's code run in place of this one's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.pipeline import median_of, summarise
from bench.recrawl import ROOT, crawl_env


def _run(seconds: float, solo_seconds: float, pages: int = 10) -> dict[str, Any]:
    """One child's figures, as bench/pipeline.py's child prints them."""
    return {"pages": pages, "seconds": seconds, "embed_tokens": 1000, "profile": {"cpu_ms/embed": 500.0},
            "solo": {"texts": 20, "tokens": 1000, "seconds": solo_seconds, "cpu_s": 1.0}}


def test_a_crawl_is_read_against_the_model_alone() -> None:
    figures = summarise([_run(30.0, 20.0)])
    assert (figures["crawl_s"], figures["solo_s"]) == (30.0, 20.0)
    assert figures["crawl_solo"] == pytest.approx(1.5)


def test_all_sites_sum_the_walls_over_the_sum_of_the_model_alone_times() -> None:
    # A small site's fixed cost weighs as little as its seconds, not as much as a big site's.
    figures = summarise([_run(4.0, 1.0), _run(110.0, 100.0)])
    assert figures["crawl_solo"] == pytest.approx(114.0 / 101.0)


def test_over_rounds_the_ratio_is_each_rounds_own_then_the_median() -> None:
    # Each round's crawl is read against its own model-alone run (the same child, minutes apart).
    rounds = [summarise([_run(30.0, 20.0)]), summarise([_run(90.0, 30.0)]), summarise([_run(40.0, 40.0)])]
    assert median_of(rounds)["crawl_solo"] == pytest.approx(1.5)


def test_a_reference_checkout_is_the_code_a_crawl_imports(tmp_path: Path) -> None:
    # This venv holds an editable install of this checkout: the reference's package must win over it.
    package = tmp_path / "helppuff_crawl"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    env = crawl_env(str(tmp_path / "data"), root=tmp_path)
    # -P: the working folder is not on sys.path, as it is not for the `helppuff` script the bench runs.
    where = subprocess.run([sys.executable, "-P", "-c", "import helppuff_crawl; print(helppuff_crawl.__file__)"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where) == package / "__init__.py"
    assert env["HELPPUFF_DATA_DIR"] == str(tmp_path / "data")
    assert (env["CLOUDFLARE_API_TOKEN"], env["CLOUDFLARE_ACCOUNT_ID"]) == ("", "")


def test_this_checkout_is_crawled_with_the_environment_as_it_is() -> None:
    env = crawl_env("/tmp/data", rate_limit="60/20", model="@local/all-minilm-l6-v2")
    assert env.get("PYTHONPATH") == os.environ.get("PYTHONPATH")
    assert env["HELPPUFF_EMBED_MODEL"] == "@local/all-minilm-l6-v2"
    assert env["HELPPUFF_LOCAL_RATE_LIMIT"] == env["HELPPUFF_CLOUDFLARE_RATE_LIMIT"] == "60/20"
    assert ROOT == Path(__file__).resolve().parent.parent
