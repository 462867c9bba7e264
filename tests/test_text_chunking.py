"""Tests for helppuff_crawl.text.chunking: pinned chunks and ids, edge cases, and properties."""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helppuff_crawl.text.chunking import (
    Chunk,
    ChunkMeta,
    ChunkSizes,
    chunk_id,
    context_prefix,
    count_tokens,
)
from helppuff_crawl.text.chunking import chunk_page as chunk_with

# The seed's sizes, the crawl's defaults (HELPPUFF_CHUNK_MIN_TOKENS, HELPPUFF_CHUNK_MAX_TOKENS): the
# pinned chunks below are cut with these.
SIZES = ChunkSizes(min_tokens=150, max_tokens=800)
MIN_TOKENS, MAX_TOKENS = SIZES.min_tokens, SIZES.max_tokens


def chunk_page(markdown: str, meta: ChunkMeta, sizes: ChunkSizes = SIZES) -> list[Chunk]:
    return chunk_with(markdown, meta, sizes)

TITLE = "Hot Water Repairs | Acme Plumbing"
URL = "https://acme.com.au/services/hot-water"
META = ChunkMeta(site="acme", url=URL, title=TITLE, category="service")
FAQ_META = ChunkMeta(site="acme", url="https://acme.com.au/faq", title="FAQ | Acme", category="faq")


def rows(chunks: list[Chunk]) -> list[tuple[tuple[str, ...], int, str, bool, bool, str]]:
    return [(c.heading_path, c.ordinal, c.anchor, c.is_faq, c.oversized, c.text) for c in chunks]


# The basics, pinned ----------------------------------------------------------------------

SERVICE_PAGE = """\
Family owned since 1987.

# Hot Water Repairs

We repair and replace every brand of hot water system.

## Prices

| Job | Price |
|---|---|
| Service call | $150 |
| Replace a tank | $1,200 |

## Questions

**Do you work weekends?**

Yes, on Saturdays from 8 am.

**How fast can you come?**

Same day in Melbourne.

Call before noon.
"""


def test_service_page_chunks_are_pinned() -> None:
    chunks = chunk_page(SERVICE_PAGE, META)
    assert rows(chunks) == [
        (
            (TITLE,), 0, "", False, False,
            "Family owned since 1987.\n\n# Hot Water Repairs\n\n"
            "We repair and replace every brand of hot water system.\n\n## Prices\n\n"
            "| Job | Price |\n|---|---|\n| Service call | $150 |\n| Replace a tank | $1,200 |",
        ),
        (
            (TITLE, "Questions"), 0, "questions", True, False,
            "## Questions\n\n**Do you work weekends?**\n\nYes, on Saturdays from 8 am.",
        ),
        (
            (TITLE, "Questions"), 1, "questions", True, False,
            "## Questions\n\n**How fast can you come?**\n\nSame day in Melbourne.\n\nCall before noon.",
        ),
    ]
    assert [c.id for c in chunks] == [
        "cb09593a3a832109e54cbbaf62f408cd7db569cc",
        "4394565b41e78cb37046790bc8f7ca0602e32124",
        "04005cca38b084dbd8e176c78189d4f5f909f9ee",
    ]


def test_prefix_is_the_seed_format_to_the_byte() -> None:
    chunk = chunk_page("## Prices\n\nA service call is $150.", META)[0]
    assert chunk.prefix == (
        "Page: Hot Water Repairs | Acme Plumbing\n"
        "Section: Hot Water Repairs | Acme Plumbing › Prices\n"
        "Category: service\n"
        "URL: https://acme.com.au/services/hot-water\n"
        "---\n"
    )
    assert chunk.embed_text == chunk.prefix + "## Prices\n\nA service call is $150."
    prefix = context_prefix("T", ("T", "A", "B"), "faq", "u")
    assert prefix == "Page: T\nSection: T › A › B\nCategory: faq\nURL: u\n---\n"


def test_chunk_id_hashes_the_documented_bytes() -> None:
    data = "\x1f".join(["acme", "https://acme.com.au/services/hot-water", f"{TITLE} › Prices", "0"])
    expected = hashlib.sha1(data.encode("utf-8")).hexdigest()
    assert expected == "879f9c8b3d7b5cacd686188009c1544032f88689"
    assert chunk_id("acme", URL, (TITLE, "Prices"), 0) == expected
    assert chunk_page("## Prices\n\nA service call is $150.", META)[0].id == expected
    # every field counts
    assert chunk_id("acme", URL, (TITLE, "Prices"), 1) != expected
    assert chunk_id("acme2", URL, (TITLE, "Prices"), 0) != expected
    assert chunk_id("acme", URL, (TITLE, "Price"), 0) != expected


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 3200, 800), ("x" * 3201, 801), ("热水器", 1)],
)
def test_count_tokens_is_characters_over_four_rounded_up(text: str, tokens: int) -> None:
    assert count_tokens(text) == tokens


# Headings, paths, anchors ----------------------------------------------------------------

@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        pytest.param("", [], id="empty page"),
        pytest.param("  \n\n\t\n", [], id="blank page"),
        pytest.param(
            "Just one paragraph, no headings at all.",
            [((TITLE,), 0, "", False, False, "Just one paragraph, no headings at all.")],
            id="no headings",
        ),
        pytest.param(
            "## Services\n\n#### Gas fitting\n\nLicensed gas fitters.",
            [((TITLE, "Services", "Gas fitting"), 0, "gas-fitting", False, False,
              "## Services\n\n#### Gas fitting\n\nLicensed gas fitters.")],
            id="skipped level: an empty H2 merges into its H4",
        ),
        pytest.param(
            "## Services\n\n### Plumbing\n\nWe plumb.\n\n### Drains\n\nWe unblock.",
            [((TITLE, "Services"), 0, "services", False, False,
              "## Services\n\n### Plumbing\n\nWe plumb.\n\n### Drains\n\nWe unblock.")],
            id="siblings merged take their parent's path",
        ),
        pytest.param(
            "## Empty\n\n## Contact\n\nCall 03 9000 0000.",
            [((TITLE, "Contact"), 0, "contact", False, False, "## Contact\n\nCall 03 9000 0000.")],
            id="heading with no body and no children is dropped",
        ),
        pytest.param(
            "# Hot Water\n\nIntro.\n\n# Second H1\n\nMore.",
            [((TITLE,), 0, "", False, False, "# Hot Water\n\nIntro.\n\n# Second H1\n\nMore.")],
            id="first H1 stands for the title, a later H1 is a section",
        ),
        pytest.param(
            "## [Prices](/prices) & *fees* ##\n\nCheap.",
            [((TITLE, "Prices & fees"), 0, "prices--fees", False, False,
              "## [Prices](/prices) & *fees*\n\nCheap.")],
            id="heading text is plain, the anchor GitHub's slug",
        ),
        pytest.param(
            "```\n# not a heading\n```\n\n#hashtag is not a heading either",
            [((TITLE,), 0, "", False, False,
              "```\n# not a heading\n```\n\n#hashtag is not a heading either")],
            id="no headings inside fences",
        ),
    ],
)
def test_headings_and_paths(markdown: str, expected: list[tuple[object, ...]]) -> None:
    assert rows(chunk_page(markdown, META)) == expected


def test_repeated_headings_get_numbered_anchors_and_ordinals() -> None:
    long_body = "Words here. " * 60  # 720 characters: each section is a chunk on its own
    md = "".join(f"## Details\n\n{long_body}\n\n### Sub\n\n{long_body}\n\n" for _ in range(3))
    chunks = chunk_page(md, META)
    assert [(c.heading_path[1:], c.anchor, c.ordinal) for c in chunks] == [
        (("Details",), "details", 0),
        (("Details", "Sub"), "sub", 0),
        (("Details",), "details-1", 1),
        (("Details", "Sub"), "sub-1", 1),
        (("Details",), "details-2", 2),
        (("Details", "Sub"), "sub-2", 2),
    ]
    assert len({c.id for c in chunks}) == 6


def test_blank_title_falls_back_to_the_url() -> None:
    chunk = chunk_page("Hello.", ChunkMeta("acme", URL, "  ", "other"))[0]
    assert chunk.heading_path == (URL,)
    assert chunk.prefix.startswith(f"Page: {URL}\nSection: {URL}\n")


# Merging -----------------------------------------------------------------------------------

def paragraph(chars: int, word: str = "lorem") -> str:
    """A paragraph of about `chars` characters, sentences of ten words."""
    words = [word] * max(1, chars // (len(word) + 1))
    return " ".join(w + ("." if k % 10 == 9 else "") for k, w in enumerate(words)).rstrip(".") + "."


def test_small_section_does_not_merge_into_a_higher_level_section() -> None:
    md = "## A\n\n" + paragraph(800) + "\n\n### A1\n\nSmall.\n\n## B\n\nSmall too."
    chunks = chunk_page(md, META)
    assert [c.heading_path[1:] for c in chunks] == [("A",), ("A", "A1"), ("B",)]


def test_merging_stops_once_the_chunk_reaches_min_tokens() -> None:
    body = paragraph(4 * MIN_TOKENS)  # one section is already at MIN_TOKENS
    md = "## A\n\nTiny.\n\n## B\n\n" + body + "\n\n## C\n\nTiny."
    chunks = chunk_page(md, META)
    assert [c.text.split("\n\n")[0] for c in chunks] == ["## A", "## C"]
    assert chunks[0].heading_path == (TITLE,) and "## B" in chunks[0].text


def test_a_bodiless_heading_never_ends_a_chunk() -> None:
    big = ("abc " * 795).strip()  # "### B1" and this fit in a chunk, not with A and B before
    chunks = chunk_page(f"## A\n\nSmall.\n\n## B\n\n### B1\n\n{big}", META)
    assert rows(chunks) == [
        ((TITLE, "A"), 0, "a", False, False, "## A\n\nSmall."),
        ((TITLE, "B", "B1"), 0, "b1", False, False, f"### B1\n\n{big}"),
    ]


def test_merging_never_exceeds_max_tokens() -> None:
    body = ("abc " * 796).strip()  # "## B" and this: 3,189 characters; with "## A": 3,202
    chunks = chunk_page("## A\n\nTiny.\n\n## B\n\n" + body, META)
    assert [c.heading_path[1:] for c in chunks] == [("A",), ("B",)]
    assert all(c.tokens <= MAX_TOKENS and not c.oversized for c in chunks)


# Splitting ---------------------------------------------------------------------------------

def test_large_section_splits_at_paragraphs_and_keeps_its_heading() -> None:
    paras = [f"Paragraph {k}. " + paragraph(1000) for k in range(5)]
    chunks = chunk_page("## Guide\n\n" + "\n\n".join(paras), META)
    assert [c.text for c in chunks] == [
        "## Guide\n\n" + "\n\n".join(paras[0:3]),
        "## Guide\n\n" + "\n\n".join(paras[3:5]),
    ]
    assert [(c.ordinal, c.anchor, c.oversized) for c in chunks] == [(0, "guide", False), (1, "guide", False)]


def test_list_splits_between_items_never_inside() -> None:
    items = [f"- Item {k}: " + paragraph(300, "pipe") + "\n  continued on a second line." for k in range(20)]
    chunks = chunk_page("## Parts\n\nOur parts:\n\n" + "\n".join(items), META)
    assert [c.text for c in chunks] == [
        "## Parts\n\nOur parts:\n\n" + "\n".join(items[0:9]),  # the intro stays with the list
        "## Parts\n\n" + "\n".join(items[9:18]),
        "## Parts\n\n" + "\n".join(items[18:20]),
    ]
    assert all(c.tokens <= MAX_TOKENS and not c.oversized for c in chunks)


def test_table_split_repeats_the_header_row() -> None:
    header = "| Service | Price | Notes |\n|:---|---:|---|"
    body = [f"| Job {k} | ${k * 10} | " + paragraph(150, "note") + " |" for k in range(40)]
    chunks = chunk_page("## Prices\n\n" + header + "\n" + "\n".join(body), META)
    assert len(chunks) == 3
    for chunk in chunks:
        assert chunk.text.startswith("## Prices\n\n" + header + "\n| Job ")
        assert chunk.tokens <= MAX_TOKENS and not chunk.oversized
    got = [line for c in chunks for line in c.text.split("\n")[4:]]
    assert got == body


def test_oversized_paragraph_splits_at_sentences_and_is_flagged() -> None:
    sentences = [f"Sentence {k} says " + "more " * 30 + "things." for k in range(40)]
    chunks = chunk_page("## Story\n\n" + " ".join(sentences), META)
    assert len(chunks) == 3
    assert all(c.oversized and c.tokens <= MAX_TOKENS for c in chunks)
    for chunk in chunks:
        body = chunk.text.removeprefix("## Story\n\n")
        assert body.startswith("Sentence ") and body.endswith("things.")
    assert " ".join(c.text.removeprefix("## Story\n\n") for c in chunks) == " ".join(sentences)


def test_paragraph_without_sentences_hard_wraps_at_words() -> None:
    text = " ".join(f"w{k}" for k in range(1500))  # no sentence ends, 7,889 characters
    chunks = chunk_page(text, META)
    assert [len(c.text) for c in chunks] == [3199, 3195, 1493]  # the longest runs of whole words
    assert all(c.oversized for c in chunks)
    assert " ".join(c.text for c in chunks) == text


def test_long_word_hard_wraps_by_characters() -> None:
    text = "x" * 7000
    chunks = chunk_page(text, META)
    assert [len(c.text) for c in chunks] == [3200, 3200, 600]
    assert all(c.oversized for c in chunks)


def test_cjk_splits_at_full_stops_then_characters() -> None:
    sentence = "我们提供热水器维修服务，价格合理。"  # 17 characters
    chunks = chunk_page("# 热水\n\n" + sentence * 300, ChunkMeta("acme", URL, "热水 | Acme", "service"))
    assert [len(c.text) for c in chunks] == [6 + 187 * 17, 6 + 113 * 17]
    assert all(c.text.startswith("# 热水\n\n" + sentence) and c.text.endswith("。") for c in chunks)
    assert all(c.oversized for c in chunks)
    no_stops = "热" * 5000
    chunks = chunk_page(no_stops, META)
    assert [len(c.text) for c in chunks] == [3200, 1800]


def test_oversized_list_item_and_table_row_are_split_and_flagged() -> None:
    md = (
        f"## L\n\n- short\n- {paragraph(5000)}\n- after\n\n"
        f"## T\n\n| A | B |\n|---|---|\n| x | {paragraph(5000)} |"
    )
    chunks = chunk_page(md, META)
    assert [(c.heading_path[1:], c.oversized) for c in chunks] == [
        (("L",), True),
        (("L",), True),
        (("T",), True),
        (("T",), True),
    ]
    # the short item before the long one is under MIN_TOKENS, so it stays with its first piece
    assert chunks[0].text.startswith("## L\n\n- short\n- lorem lorem")
    assert chunks[1].text.startswith("## L\n\nlorem lorem") and chunks[1].text.endswith(".\n- after")
    assert chunks[2].text.startswith("## T\n\n| A | B |\n|---|---|\n| x | lorem")
    assert chunks[3].text.startswith("## T\n\n| A | B |\n|---|---|\nlorem") and chunks[3].text.endswith(". |")
    assert all(c.tokens <= MAX_TOKENS for c in chunks)


def test_code_fence_is_whole_when_it_fits_and_reopened_when_it_does_not() -> None:
    small = "```python\ndef f():\n\n    return 1\n```"
    assert chunk_page("## Code\n\n" + small, META)[0].text == "## Code\n\n" + small
    lines = [f"value_{k} = compute({k})  # step {k}" for k in range(200)]
    chunks = chunk_page("## Code\n\n```python\n" + "\n".join(lines) + "\n```\n\nAfter the code.", META)
    assert len(chunks) == 3
    for chunk in chunks:
        assert chunk.text.startswith("## Code\n\n```python\nvalue_")
        assert chunk.oversized and chunk.tokens <= MAX_TOKENS
    assert [c.text.count("```") for c in chunks] == [2, 2, 2]
    assert chunks[-1].text.endswith("```\n\nAfter the code.")
    got = [line for c in chunks for line in c.text.split("\n") if line.startswith("value_")]
    assert got == lines


def test_table_wider_than_the_budget() -> None:
    header = "| " + " | ".join(f"Column {k} name" for k in range(250)) + " |"
    separator = "|" + "---|" * 250
    body = ["| " + " | ".join(["x"] * 250) + " |" for _ in range(7)]  # 1,001 characters each
    chunks = chunk_page("## Wide\n\n" + "\n".join([header, separator, *body]), META)
    # the header alone is over budget: rows are packed as if it were not there (three to a
    # part), every part still starts with it, and says it is oversized
    assert [c.text for c in chunks] == [
        "\n".join(["## Wide", "", header, separator, *body[0:3]]),
        "\n".join(["## Wide", "", header, separator, *body[3:6]]),
        "\n".join(["## Wide", "", header, separator, *body[6:7]]),
    ]
    assert all(c.oversized and c.tokens > MAX_TOKENS for c in chunks)


# FAQs --------------------------------------------------------------------------------------

def test_faq_only_page_with_bold_questions() -> None:
    md = (
        "**Do you do gas?**\n\nYes.\n\n**Are you licensed?**\n\nLicence 12345.\n\n"
        "__Do you charge call-out fees?__\n\nNo."
    )
    assert rows(chunk_page(md, FAQ_META)) == [
        (("FAQ | Acme",), 0, "", True, False, "**Do you do gas?**\n\nYes."),
        (("FAQ | Acme",), 1, "", True, False, "**Are you licensed?**\n\nLicence 12345."),
        (("FAQ | Acme",), 2, "", True, False, "__Do you charge call-out fees?__\n\nNo."),
    ]


def test_faq_accordion_question_and_answer_in_one_paragraph() -> None:
    # What text/markdown.py makes of <details><summary>Q?</summary>A</details>: the answer on the
    # line after the question, no blank line between.
    md = (
        "# Questions\n\nAsk away.\n\n**Do you bulk bill?**\nWe bulk bill eligible children.\nAdults pay the fee.\n\n"
        "**Is parking free?**\nYes, two hours.\n\n**Not a question**\nPlain text."
    )
    assert rows(chunk_page(md, FAQ_META)) == [
        (("FAQ | Acme",), 0, "", False, False, "# Questions\n\nAsk away."),
        (("FAQ | Acme",), 1, "", True, False,
         "# Questions\n\n**Do you bulk bill?**\n\nWe bulk bill eligible children.\nAdults pay the fee."),
        (("FAQ | Acme",), 2, "", True, False,
         "# Questions\n\n**Is parking free?**\n\nYes, two hours.\n\n**Not a question**\nPlain text."),
    ]


def test_question_headings_count_only_on_faq_pages() -> None:
    md = "## Billing\n\n### Can I pay monthly?\n\nYes.\n\n### Do you take cards?\n\nAll of them."
    faq = chunk_page(md, FAQ_META)
    assert rows(faq) == [
        (("FAQ | Acme", "Billing", "Can I pay monthly?"), 0, "can-i-pay-monthly", True, False,
         "### Can I pay monthly?\n\nYes."),
        (("FAQ | Acme", "Billing", "Do you take cards?"), 0, "do-you-take-cards", True, False,
         "### Do you take cards?\n\nAll of them."),
    ]
    service = chunk_page(md, META)
    assert rows(service) == [
        ((TITLE, "Billing"), 0, "billing", False, False,
         "## Billing\n\n### Can I pay monthly?\n\nYes.\n\n### Do you take cards?\n\nAll of them."),
    ]


def test_faq_intro_and_unanswered_questions() -> None:
    md = (
        "## Questions\n\nWhat people ask.\n\n**Is it safe?**\n\nYes.\n\n"
        "**Unanswered?**\n\n**Why bold?**\n\nBecause.\n\n**Last one?**"
    )
    assert rows(chunk_page(md, META)) == [
        ((TITLE, "Questions"), 0, "questions", False, False, "## Questions\n\nWhat people ask."),
        ((TITLE, "Questions"), 1, "questions", True, False, "## Questions\n\n**Is it safe?**\n\nYes."),
        ((TITLE, "Questions"), 2, "questions", False, False, "## Questions\n\n**Unanswered?**"),
        ((TITLE, "Questions"), 3, "questions", True, False, "## Questions\n\n**Why bold?**\n\nBecause."),
        ((TITLE, "Questions"), 4, "questions", False, False, "## Questions\n\n**Last one?**"),
    ]


def test_bold_lines_that_are_not_questions() -> None:
    md = "**Opening hours**\n\nMon to Fri.\n\n**Why us? We care**\n\nWe do.\n\n**A?** and **B?**\n\nBoth."
    chunks = chunk_page(md, META)
    assert [c.is_faq for c in chunks] == [False]


def test_long_faq_answer_repeats_the_question() -> None:
    answer = [paragraph(1200, "answer") for _ in range(4)]
    chunks = chunk_page("## FAQ\n\n**How long does it take?**\n\n" + "\n\n".join(answer), META)
    assert len(chunks) == 2
    assert all(c.is_faq and c.text.startswith("## FAQ\n\n**How long does it take?**\n\n") for c in chunks)


# Line endings ------------------------------------------------------------------------------

def test_crlf_and_cr_split_like_lf() -> None:
    lf = SERVICE_PAGE + "\n```\ncode\n\nmore\n```\n\n- a\n\n- b\n"
    expected = chunk_page(lf, META)
    assert chunk_page(lf.replace("\n", "\r\n"), META) == expected
    assert chunk_page(lf.replace("\n", "\r"), META) == expected
    assert chunk_page("\ufeff" + lf.replace("\n", " \r\n"), META) == expected


# Properties --------------------------------------------------------------------------------

VOCAB = (
    "we repair replace install service hot water gas heater tank valve leak drain pipe tap toilet "
    "quote price call today same day emergency licensed insured local team melbourne suburb "
    "warranty parts labour hour booking friendly fast reliable clean tidy plumber electrician"
).split()
CJK = "我们提供热水器维修服务价格合理欢迎来电咨询周末也营业安装更换"

HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
SEPARATOR = re.compile(r"^\|[-:| ]+$")
BOLD_QUESTION = re.compile(r"^\*\*[^*]+\?\*\*$")


def words(rng: random.Random, n: int, stops: bool = True) -> str:
    out = []
    for k in range(n):
        word = rng.choice(VOCAB)
        if stops and (k == n - 1 or rng.random() < 0.08):
            word += rng.choice(".!?") if k < n - 1 else "."
        out.append(word)
    return " ".join(out)


@dataclass
class Page:
    markdown: str
    category: str
    questions: list[str] = field(default_factory=list)  # bold FAQ questions, in order
    headers: set[str] = field(default_factory=set)  # table header lines


SEEDS = st.integers(0, 2**16)
SIZES = st.one_of(st.integers(1, 60), st.integers(1, 60), st.integers(500, 1000))  # words
CELLS = st.one_of(st.integers(1, 8), st.integers(1, 8), st.integers(150, 400))  # words
HEADINGS = st.tuples(st.just("heading"), st.integers(1, 6), st.integers(1, 5), st.booleans())
ELEMENTS = st.one_of(
    HEADINGS,
    HEADINGS,
    HEADINGS,
    st.tuples(st.just("paragraph"), SIZES, SEEDS),
    st.tuples(st.just("token"), st.integers(1, 9000)),
    st.tuples(st.just("cjk"), st.integers(1, 6000), st.booleans(), SEEDS),
    st.tuples(st.just("list"), st.integers(1, 40), SIZES, st.booleans(), st.booleans(), SEEDS),
    st.tuples(st.just("table"), st.integers(1, 6), st.integers(0, 60), CELLS, st.integers(0, 9), SEEDS),
    st.tuples(st.just("faq"), st.integers(1, 8), st.lists(SIZES, min_size=1, max_size=3), SEEDS),
    st.tuples(st.just("code"), st.integers(1, 300), st.integers(1, 15), SEEDS),
)


@st.composite
def pages(draw: st.DrawFn) -> Page:
    category = draw(st.sampled_from(["faq", "service", "other"]))
    elements = draw(st.lists(ELEMENTS, max_size=25))
    cap = draw(st.sampled_from([8, 30, 1 << 20]))  # small pages exercise merging, big ones splitting
    page = Page("", category)
    blocks: list[str] = []
    in_question_heading = False
    for n, element in enumerate(elements):
        kind = element[0]
        rng = random.Random(element[-1] if isinstance(element[-1], int) else n)
        if kind == "heading":
            _, level, size, question = element
            text = words(rng, size, stops=False) + (f" {n}?" if question else f" {n}")
            blocks.append("#" * level + " " + text)
            in_question_heading = question and category == "faq"
        elif kind == "paragraph":
            blocks.append(words(rng, min(element[1], cap)))
        elif kind == "token":
            blocks.append("x" * min(element[1], cap * 6))
        elif kind == "cjk":
            _, size, stops, _seed = element
            text = "".join(
                rng.choice(CJK) + ("。" if stops and rng.random() < 0.05 else "")
                for _ in range(min(size, cap * 6))
            )
            blocks.append(text)
        elif kind == "list":
            _, count, size, ordered, loose, _seed = element
            items = [
                (f"{k + 1}. " if ordered else "- ") + words(rng, rng.randint(1, min(size, cap)))
                + ("\n  - nested " + words(rng, 3) if rng.random() < 0.1 else "")
                for k in range(min(count, cap))
            ]
            blocks.append(("\n\n" if loose else "\n").join(items))
        elif kind == "table":
            _, cols, count, size, wide, _seed = element
            names = [f"{words(rng, rng.randint(1, 3), stops=False)} {n}" for _ in range(cols)]
            header = "| " + " | ".join(names) + " |"
            if wide == 0:
                header = "| " + " | ".join(f"column {k}" for k in range(400)) + " |"
            page.headers.add(header)
            lines = [header, "|" + "---|" * cols]
            for _ in range(min(count, cap)):
                cells = [words(rng, rng.randint(1, min(size, cap))) for _ in range(cols)]
                lines.append("| " + " | ".join(cells) + " |")
            blocks.append("\n".join(lines))
        elif kind == "faq":
            _, size, answers, _seed = element
            question = f"{words(rng, size, stops=False)} {n}?"
            answer = [words(rng, min(a, cap)) for a in answers]
            if in_question_heading:  # under a question heading the whole body is its answer
                blocks.extend(answer)
            else:
                page.questions.append(question)
                blocks.extend([f"**{question}**", *answer])
        else:
            _, count, size, _seed = element
            lines = [words(rng, rng.randint(1, size), stops=False) for _ in range(min(count, cap * 2))]
            blocks.append("\n".join(["```text", *lines, "```"]))
    page.markdown = "\n\n".join(blocks) + "\n"
    return page


def content(lines: list[str]) -> str:
    """Page or chunk text without structure that chunks may repeat (headings, table headers,
    fences, bold questions), whitespace removed: what the chunks must hold exactly once."""
    kept: list[str] = []
    skip = 0
    for k, line in enumerate(lines):
        if skip:
            skip -= 1
            continue
        if line.startswith("|") and k + 1 < len(lines) and SEPARATOR.match(lines[k + 1]):
            skip = 1
            continue
        if HEADING.match(line) or line.startswith("```") or BOLD_QUESTION.match(line):
            continue
        kept.append("".join(line.split()))
    return "".join(kept)


PROPERTIES = settings(max_examples=200, deadline=None, database=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@PROPERTIES
@given(pages())
def test_properties(page: Page) -> None:
    meta = ChunkMeta("acme", URL, TITLE, page.category)
    chunks = chunk_page(page.markdown, meta)

    # nothing lost, nothing duplicated
    assert "".join(content(c.text.split("\n")) for c in chunks) == content(page.markdown.split("\n"))
    questions: list[str] = []
    for chunk in chunks:
        assert len(chunk.id) == 40 and set(chunk.id) <= set("0123456789abcdef")
        assert chunk.heading_path[0] == TITLE
        assert chunk.prefix == context_prefix(TITLE, chunk.heading_path, page.category, URL)
        # within budget unless flagged
        assert chunk.tokens <= MAX_TOKENS or chunk.oversized
        lines = chunk.text.split("\n")
        # never empty, and never a heading with nothing under it at the end
        assert any(line and not HEADING.match(line) for line in lines)
        assert not HEADING.match(lines[-1])
        # every table part starts with its header row (a table is one blank-line-free block)
        for block in chunk.text.split("\n\n"):
            table = block.split("\n")
            if any(row.startswith("|") for row in table):
                assert table[0] in page.headers and SEPARATOR.match(table[1])
        # one question per FAQ chunk
        bold = [line for line in lines if BOLD_QUESTION.match(line)]
        if chunk.is_faq:
            headings = [line for line in lines if HEADING.match(line) and line.endswith("?")]
            asked = bold + (headings if page.category == "faq" else [])
            assert len(asked) == 1, chunk.text
            questions.extend(bold)
        else:
            assert bold == []
    assert list(dict.fromkeys(questions)) == [f"**{q}**" for q in page.questions]
    # ids unique, ordinals count up per heading path
    assert len({c.id for c in chunks}) == len(chunks)
    seen: dict[tuple[str, ...], int] = {}
    for chunk in chunks:
        assert chunk.ordinal == seen.get(chunk.heading_path, 0)
        seen[chunk.heading_path] = chunk.ordinal + 1
    # line endings do not matter
    assert chunk_page(page.markdown.replace("\n", "\r\n"), meta) == chunks


MARKDOWNISH = st.lists(
    st.sampled_from([*"#*-_|`~>+ \n\n\r\t1.?!aé热。", "**", "```", "| a |", "|---|", "## ", "- ", "word " * 300]),
    max_size=200,
).map("".join)


@PROPERTIES
@given(st.one_of(st.text(max_size=300), MARKDOWNISH), st.sampled_from(["faq", "other"]))
def test_any_text_gives_well_formed_chunks(markdown: str, category: str) -> None:
    chunks = chunk_page(markdown, ChunkMeta("acme", URL, TITLE, category))
    assert len({c.id for c in chunks}) == len(chunks)
    for chunk in chunks:
        assert chunk.heading_path[0] == TITLE
        assert chunk.text.strip() and chunk.text == chunk.text.rstrip() and not chunk.text.startswith("\n")
        assert chunk.tokens <= MAX_TOKENS or chunk.oversized


def test_other_sizes_cut_other_chunks() -> None:
    paragraphs = "\n\n".join(f"Paragraph {n}: " + "we fix leaking taps and burst pipes. " * 12 for n in range(8))
    markdown = "## Repairs\n\n" + paragraphs
    seed = chunk_page(markdown, META)
    small = chunk_page(markdown, META, ChunkSizes(min_tokens=50, max_tokens=200))
    assert len(small) > len(seed) >= 2
    assert all(c.tokens <= 200 and not c.oversized for c in small)
    assert "".join(c.text for c in small).count("Paragraph") == 8  # nothing lost, nothing repeated


@pytest.mark.parametrize(("low", "high"), [(150, 99), (800, 800), (-1, 800), (0, 9000)])
def test_sizes_out_of_range_are_refused(low: int, high: int) -> None:
    with pytest.raises(ValueError):
        ChunkSizes(low, high)


def test_sizes_come_from_the_settings_naming_them() -> None:
    assert ChunkSizes.from_settings({"HELPPUFF_CHUNK_MIN_TOKENS": "100", "HELPPUFF_CHUNK_MAX_TOKENS": 600}) == \
        ChunkSizes(100, 600)
    with pytest.raises(ValueError, match="HELPPUFF_CHUNK_MIN_TOKENS"):
        ChunkSizes.from_settings({"HELPPUFF_CHUNK_MIN_TOKENS": "lots", "HELPPUFF_CHUNK_MAX_TOKENS": 600})
