"""The details a crawl reads the pages' words for (kb/facts_detect.py `gaps`): the cases the Worker's
dashboard runs too (helppuff_crawl/schema/fact_gaps_cases.json; worker/test/admin-details-passage.test.ts),
so its "find missing details" asks for a crawl job exactly when the crawl would look for something."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.kb import facts_detect

CASES = json.loads((Path(facts_detect.__file__).parent.parent / "schema" / "fact_gaps_cases.json").read_text())


@pytest.mark.parametrize("case", CASES["cases"], ids=[",".join(c["known"]) or "none" for c in CASES["cases"]])
def test_shared_fact_gaps_cases(case: dict[str, Any]) -> None:
    assert facts_detect.gaps(case["known"]) == case["gaps"]
