"""text/resemblance.py: word-shingle containment, the measure by which a page is its canonical page's
near-duplicate (pipelines/hash.py)."""

from __future__ import annotations

import pytest

from helppuff_crawl.text.resemblance import NEAR_DUPLICATE, containment, shingles, words

HOME = ("# Breakfast and lunch by the water\n\nHarbour Kitchen is a small cafe on the Newcastle foreshore, run by "
        "the Petrakis family since 2011. We bake our bread each morning, roast our own coffee beans on Tuesdays, "
        "and cook with produce from Hunter Valley farms.\n\n## Come and eat with us\n\nSit inside by the open "
        "kitchen or outside on the deck, with a view of the tugboats coming in. Have a look at "
        "[our menu](https://harbour.example/menu).")
MENU = ("# Menu\n\n## Breakfast\n\n- Smashed avocado on sourdough with feta and dukkah – $18.50\n"
        "- Bircher muesli with poached pear and yoghurt – $14.00\n\n## Lunch\n\n"
        "- Grilled barramundi with chips and salad – $29.00\n\nSit inside by the open kitchen or outside on the deck.")


@pytest.mark.parametrize(("markdown", "expected"), [
    ("# Menu\n\n- Flat white – $4.80", ["menu", "flat", "white", "4", "80"]),
    ("See [our menu](https://acme.example/menu?ref=nav) ![Deck](/deck.jpg)", ["see", "our", "menu", "deck"]),
    ("Zahnärztliche Praxis, ÖFFNUNGSZEITEN", ["zahnärztliche", "praxis", "öffnungszeiten"]),
    ("| Item | Fee |\n| --- | --- |\n| Clean | $120 |", ["item", "fee", "clean", "120"]),
    ("", []),
])
def test_words_are_what_a_reader_sees(markdown: str, expected: list[str]) -> None:
    assert words(markdown) == expected


def test_shingles_are_runs_of_four_words() -> None:
    assert shingles("one two three four five") == {("one", "two", "three", "four"), ("two", "three", "four", "five")}
    assert shingles("one two three") == frozenset()  # fewer words than a run
    assert shingles("a b a b a b") == {("a", "b", "a", "b"), ("b", "a", "b", "a")}  # a set: repeats count once
    with pytest.raises(ValueError, match="shingle size must be >= 1"):
        shingles("a b", 0)


@pytest.mark.parametrize(("markdown", "other", "expected"), [
    # The same text, whatever the links' targets and the case: wholly contained.
    (HOME, HOME, 1.0),
    (HOME.replace("https://harbour.example/menu", "/menu?utm=x").upper(), HOME, 1.0),
    # Part of a longer page: wholly contained (dropping it loses nothing), but not the other way round.
    ("Sit inside by the open kitchen or outside on the deck.", HOME, 1.0),
    # A text shorter than a run is looked for as it is.
    ("Open kitchen", HOME, 1.0),
    ("Kitchen open", HOME, 0.0),
    # Nothing to lose.
    ("", HOME, 1.0),
    ("## \n\n---", HOME, 1.0),
])
def test_containment(markdown: str, other: str, expected: float) -> None:
    assert containment(markdown, other) == expected


def test_a_copy_with_a_line_changed_is_a_near_duplicate_and_a_page_of_its_own_is_not() -> None:
    copy = HOME.replace("since 2011.", "since 2011 (we opened in March).")
    assert NEAR_DUPLICATE <= containment(copy, HOME) < 1.0
    # The menu shares a sentence with the home page (the template's), and little else.
    assert containment(MENU, HOME) == pytest.approx(0.2, abs=0.1)
    assert containment(HOME, MENU) < 0.2
    # The same menu with every price changed is another menu.
    repriced = MENU.replace("18.50", "19.50").replace("14.00", "15.00").replace("29.00", "31.00")
    assert containment(repriced, MENU) < NEAR_DUPLICATE
