"""trafilatura's justext stoplist, as pruning.py gives it: the very words trafilatura builds itself."""

from __future__ import annotations

import trafilatura.external
from justext.utils import get_stoplist, get_stoplists

from helppuff_crawl.text import pruning


def test_justext_stoplist_is_the_one_trafilatura_builds(monkeypatch):
    monkeypatch.setattr(trafilatura.external, "JT_STOPLIST", None)
    pruning._justext_stoplist()
    ours = trafilatura.external.JT_STOPLIST
    assert ours is not None
    expected = {word for language in get_stoplists() for word in get_stoplist(language)}
    assert len(ours) == len(set(ours)) and set(ours) == expected
    assert "the" in ours and "und" in ours  # English and German among them
    pruning._justext_stoplist()  # once given, left alone
    assert trafilatura.external.JT_STOPLIST is ours
