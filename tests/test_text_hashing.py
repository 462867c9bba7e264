from helppuff_crawl.text.hashing import content_hash


def test_content_hash_is_pinned() -> None:
    # sha256("Title\x1fservice\x1f# Body") — changing the algorithm re-embeds every page.
    assert content_hash("Title", "service", "# Body") == (
        "2ceaf88f55ff2b64046f0c507c6a6e5e173823eff086cf5db9fce09ff02aca62"
    )


def test_fields_cannot_run_into_each_other() -> None:
    assert content_hash("ab", "c", "") != content_hash("a", "bc", "")
    assert content_hash("a", "b", "c") != content_hash("a", "b", "c ")
