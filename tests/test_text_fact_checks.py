"""helppuff_crawl.text.fact_checks: the checks every reader's candidate must pass against the page's words."""

from __future__ import annotations

import pytest

from helppuff_crawl.text.contact_details import Candidate, PageText
from helppuff_crawl.text.fact_checks import check, check_all


PAGE = "Call 03 9000 1234 or email hello@acme.example.\nMon–Fri 8am–5pm\nVisit: 12 Example Street,\nRichmond VIC 3121"


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("telephone", "03 9000 1234", ""),
    ("telephone", "(03) 9000-1234", ""),  # the same digits, other separators
    ("telephone", "03 9000 5678", "not written in the page"),  # invented
    ("telephone", "123", "3 digits"),
    ("telephone", "Call 03 9000 1234", "holds more than a number"),
    ("email", "hello@acme.example", ""),
    ("email", "HELLO@acme.example", ""),
    ("email", "sales@acme.example", "not written in the page"),
    ("email", "hello@acme", "not one address"),
    ("email", "a@b@acme.example", "not one address"),
    ("hours", {"Monday": [["08:00", "17:00"]]}, ""),
    ("hours", {"Saturday": [["09:00", "13:00"]]}, "09:00, 13:00 not written"),  # invented
    ("hours", {"Monday": [["8am", "5pm"]]}, "not an hours table"),
    ("hours", {"Funday": [["08:00", "17:00"]]}, "not an hours table"),
    ("hours", {"Monday": []}, "not an hours table"),
    ("hours", "Mon–Fri 8am–5pm", "not an hours table"),
    ("address", "12 Example Street, Richmond VIC 3121", ""),  # lines joined with a comma
    ("address", "14 Example Street, Richmond VIC 3121", "not written in the page"),
    ("address", "Richmond", "no number and street"),
])
def test_checks(key: str, value: object, reason: str) -> None:
    got = check(Candidate(key, value), PAGE)
    assert (got == "") if not reason else (reason in got), got


def test_check_all_finds_the_page_and_keeps_one_of_each() -> None:
    pages = [PageText("https://a.example/contact", "contact", "Phone 03 9000 1234"),
             PageText("https://a.example/", "home", "Email hi@a.example or call 03 9000 1234")]
    checked = check_all([Candidate("email", " Hi@A.example "), Candidate("telephone", "03 9000 1234"),
                         Candidate("telephone", "03 9000 1234"), Candidate("telephone", "1300 999 888")], pages)
    assert [(c.key, c.value, c.source_url) for c in checked.kept] == [
        ("email", "hi@a.example", "https://a.example/"), ("telephone", "03 9000 1234", "https://a.example/contact")]
    assert [c.reason for c in checked.dropped] == ["telephone: given twice",
                                                   "telephone: '1300 999 888' is not written in the page"]
