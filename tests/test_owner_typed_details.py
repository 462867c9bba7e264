"""Opening hours and service areas as the owner types them (kb/facts_table.py owner_hours and
owner_areas, for `helppuff knowledge facts set hours|areas`): the cases the Worker's dashboard runs too
(helppuff_crawl/schema/owner_hours_cases.json and owner_areas_cases.json;
worker/test/admin-hours-areas.test.ts), and the command storing the table or list, or refusing with
the rule's words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.kb import facts_table
from tests.conftest import run_helppuff

SCHEMA = Path(facts_table.__file__).parent.parent / "schema"
CASES = json.loads((SCHEMA / "owner_hours_cases.json").read_text())
AREAS = json.loads((SCHEMA / "owner_areas_cases.json").read_text())


TYPED = [("hours", case) for case in CASES["cases"]] + [("areas", case) for case in AREAS["cases"]]


@pytest.mark.parametrize(("key", "case"), TYPED, ids=[f"{key}: {case['text'][:40]}" for key, case in TYPED])
def test_shared_typed_detail_cases(key: str, case: dict[str, Any]) -> None:
    read = facts_table.OWNER_TYPED[key]
    if "error" in case:
        with pytest.raises(ValueError) as caught:
            read(case["text"])
        assert str(caught.value) == case["error"]
    else:
        assert read(case["text"]) == case[key]


def test_facts_set_hours_and_areas_store_the_table_and_list_and_refuse_bad_hours(tmp_path: Path) -> None:
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
    areas = run_helppuff(tmp_path, "knowledge", "facts", "set", "areas", "Brunswick; coburg; BRUNSWICK", "--site", "acme")
    assert areas.returncode == 0, areas.stderr
    listed = json.loads(run_helppuff(tmp_path, "knowledge", "facts", "list", "--site", "acme", "--json").stdout)
    assert [row["value"] for row in listed if row["key"] == "areas"] == [["Brunswick", "coburg"]]
