"""helppuff_crawl.text.boilerplate: blocks, fingerprints and site-wide furniture, on inline HTML."""

from __future__ import annotations

import pytest

from helppuff_crawl.text.blocks import Block, fingerprint, normalise
from helppuff_crawl.text.boilerplate import Furniture, blocks, learn_furniture
from helppuff_crawl.text.markdown import extract


def test_blocks_with_pinned_fingerprints() -> None:
    html = (
        "<header><p>Site header</p></header><main><h1>Drains</h1><p>We clear   drains.</p>"
        "<section class='cta' data-track='a1'><h2>Need a plumber?</h2><p>Call 03 9999 9999 today.</p></section></main>"
    )
    assert blocks(html) == [
        Block("p", "we clear drains.", "84951b768e5c3c66"),
        Block("section", "need a plumber? call 03 9999 9999 today.", "28d45833ae953f98"),
        Block("p", "call 03 9999 9999 today.", "c429887f37d04fc0"),
    ]


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("  Need a\n\tPLUMBER?  ", "need a plumber?"),
        ("Call 03 9999 9999", "call 03 9999 9999"),
        ("STRASSE", "strasse"),
        ("Straße", "strasse"),  # case-folded, not only lower-cased
    ],
)
def test_normalise(text: str, normalised: str) -> None:
    assert normalise(text) == normalised


def test_markup_whitespace_and_attributes_do_not_hide_a_repeat() -> None:
    one = "<main><div class='cta' data-gtm='x1'><h2>Need a plumber?</h2><p>Book online.</p></div></main>"
    two = (
        "<main>\n  <div class=\"cta\" data-gtm=\"y2\" id=\"c\">\n<h2>Need a\n  PLUMBER?</h2>\n"
        "<p>Book <b>online</b>.</p></div></main>"
    )
    one_div = {b.fingerprint for b in blocks(one) if b.tag == "div"}
    assert one_div == {b.fingerprint for b in blocks(two) if b.tag == "div"}


def test_blocks_are_apart_from_each_other() -> None:
    # "<p>a</p><p>b</p>" reads "a b", so minified and indented markup compare equal
    minified = blocks("<main><div><p>Call us</p><p>today</p></div><p>x</p></main>")
    assert minified[0] == Block("div", "call us today", fingerprint("call us today"))


def test_blocks_of_empty_input() -> None:
    assert blocks("") == []


CTA = "<section class='cta'><h2>Need a plumber today?</h2><p>Book online in two minutes.</p></section>"
WHY = "<div class='why'><h2>Why choose us</h2><ul><li>Licensed</li><li>On time</li></ul></div>"
CONTACT = "<div class='contact-strip'><p>Call <a href='tel:+61399999999'>03 9999 9999</a>, Mon-Fri 8am-5pm</p></div>"


def _page(title: str, *parts: str) -> str:
    content = f"<h1>{title}</h1><p>About {title}.</p>{''.join(parts)}"
    return f"<html><body><nav><a href='/'>Home</a></nav><main>{content}</main></body></html>"


def test_learn_furniture_drops_blocks_on_more_than_half_the_pages() -> None:
    sample = [
        _page("Drains", CTA, WHY, CONTACT),
        _page("Hot water", CTA, CONTACT),
        _page("Taps", CTA.replace("class='cta'", "class='cta' data-utm='z'"), CONTACT),
        _page("Gas", WHY),
        _page("About", "<p>Family owned.</p>"),
    ]
    furniture = learn_furniture(sample)
    cta = {b.fingerprint for b in blocks(_page("x", CTA)) if b.tag == "section"}
    why = {b.fingerprint for b in blocks(_page("x", WHY)) if b.tag == "div"}
    assert cta <= furniture.drop  # 3 of 5 pages
    assert not why & furniture.drop  # 2 of 5 pages: not more than half
    assert furniture.contact_blocks == ("Call 03 9999 9999, Mon-Fri 8am-5pm",)
    cleaned = extract(sample[0], drop_blocks=furniture.drop).markdown
    assert cleaned == "# Drains\n\nAbout Drains.\n\n## Why choose us\n\n- Licensed\n- On time"


def test_threshold() -> None:
    sample = [_page(str(n), CTA if n < 2 else "") for n in range(4)]
    assert learn_furniture(sample).drop == frozenset()  # 2 of 4 is not more than half
    assert learn_furniture(sample, threshold=0.25).drop  # but more than a quarter


@pytest.mark.parametrize("count", [0, 1, 2])
def test_fewer_than_three_pages_have_no_furniture(count: int) -> None:
    assert learn_furniture([_page("Same", CTA)] * count) == Furniture(frozenset(), ())


@pytest.mark.parametrize(
    ("block", "carries"),
    [
        ("<div><p>Call 03 9999 9999</p></div>", True),
        ("<div><p>Ring (555) 123-4567 now</p></div>", True),
        ("<div><p>Email hello@acme.example</p></div>", True),
        ("<div><p>Visit 12 Smith Street, Richmond</p></div>", True),
        ("<div><p>Open Monday to Friday, 8:00 to 17:00</p></div>", True),
        ("<div><p>Our opening hours are on the contact page</p></div>", True),
        ("<div><p><a href='mailto:x@y.z'>Write to us</a></p></div>", True),
        ("<div><p>Book online in two minutes</p></div>", False),
        ("<div><p>Since 1998, 5 stars from 200 reviews</p></div>", False),
    ],
)
def test_contact_blocks_are_the_ones_with_contact_details_or_hours(block: str, carries: bool) -> None:
    furniture = learn_furniture([_page(name, block) for name in ("A", "B", "C")])
    assert bool(furniture.contact_blocks) is carries
    assert furniture.drop  # dropped either way


def test_outermost_block_is_dropped_once() -> None:
    strip = "<section><div class='inner'><p>Call 03 9999 9999 for a quote.</p></div></section>"
    furniture = learn_furniture([_page(name, strip) for name in ("A", "B", "C")])
    assert len(furniture.contact_blocks) == 1
    assert extract(_page("A", strip), drop_blocks=furniture.drop).markdown == "# A\n\nAbout A."
