"""Opening hours as the owner types them (kb/facts_table.py owner_hours, for `helppuff knowledge facts
set hours`): the cases the Worker's dashboard runs too (helppuff_crawl/schema/owner_hours_cases.json;
worker/test/admin-hours.test.ts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.kb import facts_table

CASES = json.loads((Path(facts_table.__file__).parent.parent / "schema" / "owner_hours_cases.json").read_text())


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["text"][:40] for c in CASES["cases"]])
def test_shared_owner_hours_cases(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(ValueError) as caught:
            facts_table.owner_hours(case["text"])
        assert str(caught.value) == case["error"]
    else:
        assert facts_table.owner_hours(case["text"]) == case["hours"]
