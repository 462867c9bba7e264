"""Opening hours as the owner types them (kb/facts_table.py owner_hours, for `helppuff knowledge facts
set hours`): the cases the Worker's dashboard runs too (helppuff_crawl/schema/owner_hours_cases.json;
worker/test/admin-hours.test.ts), and the command storing the table, or refusing with the rule's words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.kb import facts_table
from tests.conftest import run_helppuff

CASES = json.loads((Path(facts_table.__file__).parent.parent / "schema" / "owner_hours_cases.json").read_text())


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["text"][:40] for c in CASES["cases"]])
def test_shared_owner_hours_cases(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(ValueError) as caught:
            facts_table.owner_hours(case["text"])
        assert str(caught.value) == case["error"]
    else:
        assert facts_table.owner_hours(case["text"]) == case["hours"]


def test_facts_set_hours_stores_the_table_and_refuses_bad_hours(tmp_path: Path) -> None:
    stored = run_helppuff(tmp_path, "knowledge", "facts", "set", "hours", "monday 7:00-17:00; Saturday: 08:00-12:00",
                          "--site", "acme")
    assert stored.returncode == 0, stored.stderr
    listed = json.loads(run_helppuff(tmp_path, "knowledge", "facts", "list", "--site", "acme", "--json").stdout)
    assert [(row["key"], row["source"], row["value"]) for row in listed] == [("hours", "owner", {
        "Monday": [["07:00", "17:00"]], "Tuesday": [], "Wednesday": [], "Thursday": [], "Friday": [],
        "Saturday": [["08:00", "12:00"]], "Sunday": []})]
    refused = run_helppuff(tmp_path, "knowledge", "facts", "set", "hours", "Monday: 7am", "--site", "acme")
    assert refused.returncode == 2
    assert refused.stderr.strip() == 'helppuff knowledge: hours: Monday: "7am" is not an opening like 07:00-17:00'
