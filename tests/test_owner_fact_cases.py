"""The rules of an owner's business detail, shared with the dashboard's Settings
(helppuff_crawl/schema/owner_fact_cases.json; worker/test/admin-settings.test.ts runs the same cases)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.kb.facts_table import check_owner_fact

CASES = json.loads((Path(__file__).parent.parent / "helppuff_crawl" / "schema" / "owner_fact_cases.json")
                   .read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case['key']}={case['value'][:20]!r}")
def test_an_owner_fact_is_checked_as_the_dashboard_checks_it(case: dict[str, Any]) -> None:
    value = case["value"] * case.get("repeat", 1)
    if case["error"] is None:
        assert check_owner_fact(case["key"], value) == case["kept"]
    else:
        with pytest.raises(ValueError) as refused:
            check_owner_fact(case["key"], value)
        assert str(refused.value).startswith(case["error"])
