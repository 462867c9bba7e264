"""How much of one text another already holds: word-shingle containment. Pure: no Scrapy import.

A page whose canonical link names another page is that page's duplicate only when the content agrees
(pipelines/hash.py): a site built from a template can name its home page as canonical on every page,
the menu and the price list included, and dropping those would lose them. The question asked is
directional: is (nearly) everything this page says on the page it names? So the measure is Broder's
containment ("On the resemblance and containment of documents", 1997), not the symmetric resemblance:
each text is the set of its shingles, the runs of SHINGLE_WORDS consecutive words, and the containment
of A in B is |S(A) & S(B)| / |S(A)|. Dropping A then loses at most the few word runs that are not on B:
a print view, a copy under a second URL, or the same page with a date or a line changed stays contained;
a page with its own text (a menu beside the home page) shares little more than the site's phrases.

Words are what a reader sees of the Markdown: runs of Unicode letters and digits, case folded, with the
targets of links and images left out (`[Menu](https://acme.example/menu?ref=nav)` is the word "menu"),
so that a copy whose links carry another query string or host spelling is still the same text. Prices
keep their digits: "$4.50" is the words "4" and "50", and a menu whose prices all changed is no copy.
Four-word shingles make one changed word touch at most four of them: on a 200-word page that is 2%.
"""

from __future__ import annotations

import re

SHINGLE_WORDS = 4
#: The containment at or above which a page is its canonical page's near-duplicate: at most one word
#: run in ten of it missing there (a changed line, a date, a "print this page" note).
NEAR_DUPLICATE = 0.9

_LINK_TARGET = re.compile(r"\]\([^)]*\)")  # the "(url)" after a Markdown link's or image's text
_WORD = re.compile(r"\w+")


def words(markdown: str) -> list[str]:
    """The words a reader sees of `markdown`: Unicode letter and digit runs, case folded, without the
    targets of links and images."""
    return _WORD.findall(_LINK_TARGET.sub("]", markdown).casefold())


def shingles(markdown: str, size: int = SHINGLE_WORDS) -> frozenset[tuple[str, ...]]:
    """The runs of `size` consecutive words of `markdown` (none when it has fewer words)."""
    if size < 1:
        raise ValueError(f"shingle size must be >= 1, got {size}")
    return _runs(words(markdown), size)


def containment(markdown: str, other: str, size: int = SHINGLE_WORDS) -> float:
    """The share of `markdown`'s shingles that are also `other`'s, from 0.0 to 1.0. A text of fewer
    than `size` words is one run of all its words, looked for in `other` as such. A text without words
    is held by any text (1.0): dropping it loses nothing."""
    if size < 1:
        raise ValueError(f"shingle size must be >= 1, got {size}")
    own_words = words(markdown)
    if not own_words:
        return 1.0
    size = min(size, len(own_words))
    own = _runs(own_words, size)
    return len(own & _runs(words(other), size)) / len(own)


def _runs(found: list[str], size: int) -> frozenset[tuple[str, ...]]:
    return frozenset(tuple(found[i:i + size]) for i in range(len(found) - size + 1))
