"""The rules of an own answer (kb/answers.py check_answer) on the cases the Worker's dashboard runs
too (helppuff_crawl/schema/own_answer_cases.json; worker/test/admin-answers.test.ts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.kb import answers

CASES = json.loads((Path(answers.__file__).parent.parent / "schema" / "own_answer_cases.json").read_text())


def _value(given: Any) -> str:
    if isinstance(given, str):
        return given
    around = given.get("around", "")
    return around + given["repeat"] * given["times"] + around


def test_the_limits_are_the_shared_ones() -> None:
    assert (answers.MAX_TITLE_CHARS, answers.MAX_TEXT_CHARS) == (
        CASES["limits"]["titleChars"], CASES["limits"]["textChars"])


@pytest.mark.parametrize("case", CASES["cases"], ids=[case["name"] for case in CASES["cases"]])
def test_shared_own_answer_cases(case: dict[str, Any]) -> None:
    title, text = _value(case["title"]), _value(case["text"])
    if "error" in case:
        with pytest.raises(ValueError) as refused:
            answers.check_answer(title, text)
        assert str(refused.value) == case["error"]
    else:
        assert answers.check_answer(title, text) == (_value(case["expect"]["title"]), _value(case["expect"]["text"]))
