"""Split a page's Markdown into chunks for embedding and retrieval. Pure: no Scrapy import.

`chunk_page(markdown, meta)` returns the page's chunks in page order. The rules:

Reading. Line endings are normalised first ("\\r\\n" and "\\r" become "\\n"), trailing spaces are
dropped and a leading byte-order mark is removed. Headings are ATX headings ("#" to "######", up
to three spaces of indent, closing "#"s dropped; a heading with no text is ignored; underlined
"===" headings are not read); lines inside a fenced code block (``` or ~~~; one never closed
runs to the end of the page) are never headings. The page is a tree of headings: a section
is a heading and its body up to the next heading of the same or a higher level, so a heading
that skips levels (H2 then H4) is simply a child. Text before the first heading belongs to the
page title. The page's first heading, when it is an H1, is the page's own heading: it stands
for the title (its path is just the title, its anchor ""); any other heading, a later H1
included, adds its text (links, emphasis and code marks removed) to the heading path.

Units. A section's body is a list of blocks: paragraphs, lists (one unit per item; an item
keeps its continuation lines and nested items), pipe tables (lines starting with "|"; the
header is the first line and the "|---|" separator when the second line is one; one unit per
body row), fenced code (one unit), and rules. Blocks are separated by blank lines; a heading,
a fence, a table line, a rule or a bullet (or "1.") list line also ends a paragraph.

Size. Tokens are characters / 4 rounded up (`count_tokens`); a chunk's `text` is at most
`sizes.max_tokens` unless the chunk is flagged `oversized` (`ChunkSizes`; a crawl takes them from
HELPPUFF_CHUNK_MIN_TOKENS and HELPPUFF_CHUNK_MAX_TOKENS, by default the seed's 150 and 800). The
prefix is not counted. A section that does not fit is cut at block boundaries first; a block that alone does not fit is cut between
its units (list items, table rows, code lines). Blocks before such a block that are still under
`sizes.min_tokens` (an intro line) stay with its first piece. A table part repeats the header row
(header and separator lines); when the header leaves under 100 tokens for rows (a table wider
than the budget), rows are packed as if it were not there and the parts are flagged oversized.
A code part re-opens and closes the fence. A unit that alone does not fit (a paragraph, list
item, table row, code line) is cut at line breaks (list items and code), then after sentences
(". ", "! ", "? ", and "。！？" without a space), then at whitespace, then, for text with no
spaces (CJK), between characters; the chunks holding such pieces are flagged `oversized` (so is
every part of a code fence cut at lines, and a chunk whose heading alone fills the budget).
Every part starts with its section's heading line as Markdown ("## Prices"); the page-title
section has none, the title being in the prefix.

Merging. A chunk under `sizes.min_tokens` (a small section, or the last part of a large one) takes in
the next part when that part is the first part of a section that is a sibling of the chunk's
first section or a descendant of such a sibling or of that section (never a section higher up,
never an FAQ part), and the result stays within `sizes.max_tokens`; it goes on while the chunk is
still under `sizes.min_tokens`. A heading with no body of its own never makes a chunk: it merges into its
first descendant when that fits, and is otherwise dropped; its text stays in its children's
heading paths. A merged chunk's heading path is the longest common path of the sections whose
body it holds (siblings merged under their parent's path), and its anchor is that section's.

FAQs. A question and its answer make exactly one chunk (or several when the answer alone is
over budget, each repeating the question), never merged with anything. A question is either

* a bold line: `**text**` or `__text__` (with no inner `**`/`__`) whose text ends with "?" or
  "？", as a paragraph of its own or as the first line of a paragraph (the rest of that
  paragraph is then a block of its own: "**Q?**\nA." is how an FAQ accordion converts),
  directly followed in the same section by a block that is not such a line. Its answer is every
  block after it up to the next bold question line, the next heading or the end of the section.
  A bold question with no answer is ordinary text.
* a heading whose text ends with "?" or "？" on a page of category "faq", with a body. The whole
  body is the answer (bold lines in it included); its children are sections of their own.

Text of an FAQ chunk: the section heading line (if any), the bold question line, the answer;
for a question heading, the heading line and the answer.

Identity. `heading_path` is (page title, H2, H3, ...). The prefix is, exactly,
"Page: {title}\\nSection: {' › '.join(heading_path)}\\nCategory: {category}\\nURL: {url}\\n---\\n".
`ordinal` is the chunk's position among the page's chunks with the same heading path, 0-based
(the next part of a section is the same path, ordinal + 1; an edit in one section leaves the
other sections' ids alone). `id` is SHA-1 over the UTF-8 bytes of
"\\x1f".join([site, url, " › ".join(heading_path), str(ordinal)]), 40 lowercase hex characters
(`chunk_id`). `anchor` is the GitHub-style slug of the path's deepest heading (lower case,
characters other than letters, digits, "_", "-" and spaces removed, spaces turned to "-";
repeated slugs get "-1", "-2" in page order), "" for the page-title section.
A blank title falls back to the URL.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from helppuff_crawl.schema.contract import HEADING_SEPARATOR

logger = logging.getLogger(__name__)

PATH_SEPARATOR = HEADING_SEPARATOR  # the shared contract's (helppuff_crawl/schema/knowledge.json)

# The least room kept for rows or lines beside a repeated table header or fence, when the
# header is itself about the budget's size: such parts go over and are flagged oversized.
_MIN_ROOM = 400
_ID_SEPARATOR = "\x1f"

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_TABLE_LINE = re.compile(r"^ {0,3}\|")
_TABLE_SEPARATOR = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_LIST_ITEM = re.compile(r"^( {0,3})(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_PARAGRAPH_BREAKING_ITEM = re.compile(r"^ {0,3}(?:[-*+]|1[.)])[ \t]+\S")
_BOLD_LINE = re.compile(r"^(\*\*|__)(.+)\1$")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_EMPHASIS = re.compile(r"[*`]|__|(?<!\w)_|_(?!\w)")
_SLUG_DROP = re.compile(r"[^\w\- ]")
_QUESTION_MARKS = ("?", "？")

_LINE_BREAKS = re.compile(r"\n+")
_SENTENCE_ENDS = re.compile(r"[.!?…][\"'”’)\]]*\s+|[。！？][」』”’)）\]]*\s*")
_SPACES = re.compile(r"\s+")
_PARAGRAPH_CUTS = (_SENTENCE_ENDS, _SPACES)
_LINE_CUTS = (_LINE_BREAKS, _SENTENCE_ENDS, _SPACES)


def count_tokens(text: str) -> int:
    """Tokens as the budget counts them: characters / 4, rounded up."""
    return (len(text) + 3) // 4


@dataclass(frozen=True)
class ChunkSizes:
    """How big chunks are, in tokens: at most `max_tokens` of text, and smaller ones than `min_tokens`
    merged with what follows where the rules allow."""

    min_tokens: int
    max_tokens: int

    def __post_init__(self) -> None:
        if not 100 <= self.max_tokens <= 8000:
            raise ValueError(f"the most tokens a chunk holds must be 100-8000, got {self.max_tokens}")
        if not 0 <= self.min_tokens < self.max_tokens:
            raise ValueError(f"the least tokens of a chunk must be 0 or more and under the most ({self.max_tokens}), "
                             f"got {self.min_tokens}")

    @property
    def max_chars(self) -> int:
        return self.max_tokens * 4

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> ChunkSizes:
        """From HELPPUFF_CHUNK_MIN_TOKENS and HELPPUFF_CHUNK_MAX_TOKENS; ValueError naming them."""
        low: Any = settings.get("HELPPUFF_CHUNK_MIN_TOKENS")
        high: Any = settings.get("HELPPUFF_CHUNK_MAX_TOKENS")
        try:
            return cls(int(low), int(high))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"HELPPUFF_CHUNK_MIN_TOKENS / HELPPUFF_CHUNK_MAX_TOKENS: {exc}") from exc


@dataclass(frozen=True)
class ChunkMeta:
    """What `chunk_page` needs to know about the page besides its Markdown."""

    site: str  # site name, lowercase [a-z0-9-]
    url: str  # the page's normalised URL
    title: str  # page title, whitespace collapsed (blank: the URL stands in)
    category: str  # one of web/categories.CATEGORIES


@dataclass(frozen=True)
class Chunk:
    """One retrievable passage of a page."""

    id: str  # chunk_id(site, url, heading_path, ordinal): 40 lowercase hex
    ordinal: int  # 0-based position among the page's chunks with the same heading_path
    heading_path: tuple[str, ...]  # (page title, H2, H3, ...): headings as plain text
    text: str  # shown to visitors: Markdown, starting with its section's heading line
    prefix: str  # context embedded before the text, never shown (format in the module doc)
    anchor: str  # GitHub-style slug of the deepest heading of heading_path; "" for the title
    is_faq: bool  # one question and its answer
    oversized: bool  # holds a piece of a unit (paragraph, item, row, code) over the most tokens

    @property
    def embed_text(self) -> str:
        return self.prefix + self.text

    @property
    def tokens(self) -> int:
        return count_tokens(self.text)


def chunk_id(site: str, url: str, heading_path: Sequence[str], ordinal: int) -> str:
    """SHA-1 of "\\x1f".join([site, url, " › ".join(heading_path), str(ordinal)]), UTF-8."""
    data = _ID_SEPARATOR.join((site, url, PATH_SEPARATOR.join(heading_path), str(ordinal)))
    return hashlib.sha1(data.encode("utf-8")).hexdigest()


def context_prefix(title: str, heading_path: Sequence[str], category: str, url: str) -> str:
    """The context prefix embedded with a chunk's text (the seed's format, to the byte)."""
    section = PATH_SEPARATOR.join(heading_path)
    return f"Page: {title}\nSection: {section}\nCategory: {category}\nURL: {url}\n---\n"


def chunk_page(markdown: str, meta: ChunkMeta, sizes: ChunkSizes) -> list[Chunk]:
    """Chunks of a page's Markdown, in page order (rules in the module docstring)."""
    title = " ".join(meta.title.split()) or meta.url
    sections = _parse(_normalise(markdown), title, meta.category == "faq")
    parts = [part for section in sections for part in _section_parts(section, sizes)]
    chunks: list[Chunk] = []
    ordinals: dict[tuple[str, ...], int] = {}
    for group in _merge(parts, sizes):
        text = "\n\n".join(part.text for part in group)
        owner = _owner(sections, [part.section for part in group if part.has_body])
        ordinal = ordinals.get(owner.path, 0)
        ordinals[owner.path] = ordinal + 1
        chunks.append(
            Chunk(
                id=chunk_id(meta.site, meta.url, owner.path, ordinal),
                ordinal=ordinal,
                heading_path=owner.path,
                text=text,
                prefix=context_prefix(title, owner.path, meta.category, meta.url),
                anchor=owner.anchor,
                is_faq=group[0].is_faq,
                oversized=any(part.oversized for part in group) or len(text) > sizes.max_chars,
            )
        )
    logger.debug("Chunked %s: %d sections, %d chunks", meta.url, len(sections), len(chunks))
    return chunks


# Parsing ---------------------------------------------------------------------------------


@dataclass
class _Block:
    kind: str  # "paragraph", "list", "table", "code"
    units: list[str]  # items, rows, code lines; one paragraph
    joiner: str = "\n"  # between units ("\n\n" for a loose list)
    header: str = ""  # table: header and separator lines; code: the opening fence line
    footer: str = ""  # code: the closing fence line, as written ("" when never closed)
    question: bool = False  # a paragraph that is a bold question line

    @property
    def text(self) -> str:
        if self.kind == "code":
            return "\n".join([self.header, *self.units] + ([self.footer] if self.footer else []))
        body = self.joiner.join(self.units)
        return f"{self.header}\n{body}" if self.header and self.units else self.header or body


@dataclass
class _Section:
    level: int  # 0 for the page top
    heading: str  # heading line as shown in chunk text ("## Prices"); "" for the page top
    path: tuple[str, ...]
    anchor: str
    chain: tuple[int, ...]  # indexes of the ancestors and of the section itself
    question: bool  # an FAQ question heading
    blocks: list[_Block] = field(default_factory=list)


def _normalise(markdown: str) -> list[str]:
    text = markdown.replace("\r\n", "\n").replace("\r", "\n").removeprefix("\ufeff")
    return [line.rstrip() for line in text.split("\n")]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _plain(raw: str) -> str:
    """Heading text as plain text: links to their text, escapes, emphasis and code marks removed."""
    text = _ESCAPE.sub(r"\1", _LINK.sub(r"\1", raw))
    return " ".join(_EMPHASIS.sub("", text).split())


def _slug(text: str, seen: dict[str, int]) -> str:
    """GitHub's heading slug, with "-1", "-2" for repeats (github-slugger's rule)."""
    base = _SLUG_DROP.sub("", text.lower()).replace(" ", "-")
    slug = base
    while slug in seen:
        seen[base] += 1
        slug = f"{base}-{seen[base]}"
    seen[slug] = 0
    return slug


def _is_question(text: str) -> bool:
    return text.endswith(_QUESTION_MARKS)


def _bold_question(line: str) -> bool:
    match = _BOLD_LINE.match(line.strip())
    if not match or match.group(1) in match.group(2):
        return False
    inner = match.group(2).strip()
    return bool(inner) and _is_question(inner)


def _starts_block(line: str) -> bool:
    """Whether a line ends the paragraph (or list) before it."""
    return bool(
        _HEADING.match(line)
        or _FENCE_OPEN.match(line)
        or _TABLE_LINE.match(line)
        or _RULE.match(line)
        or _PARAGRAPH_BREAKING_ITEM.match(line)
    )


def _parse(lines: list[str], title: str, faq_page: bool) -> list[_Section]:
    root = _Section(0, "", (title,), "", (0,), False)
    sections = [root]
    stack = [root]
    slugs: dict[str, int] = {}
    blocks = root.blocks
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line:
            i += 1
            continue
        if fence := _FENCE_OPEN.match(line):
            if fence.group(2)[0] != "`" or "`" not in fence.group(3):
                i = _read_fence(lines, i, fence, blocks)
                continue
        if heading := _HEADING.match(line):
            i += 1
            raw = (heading.group(2) or "").strip()
            text = _plain(raw)
            if not text:
                continue
            level = len(heading.group(1))
            anchor = _slug(text, slugs)
            while stack[-1].level >= level:
                stack.pop()
            parent = stack[-1]
            if level == 1 and len(sections) == 1:  # the page's own heading stands for the title
                path, anchor = parent.path, ""
            else:
                path = (*parent.path, text)
            section = _Section(
                level=level,
                heading=f"{heading.group(1)} {raw}",
                path=path,
                anchor=anchor,
                chain=(*parent.chain, len(sections)),
                question=faq_page and _is_question(text),
            )
            sections.append(section)
            stack.append(section)
            blocks = section.blocks
        elif _TABLE_LINE.match(line):
            j = i + 1
            while j < n and _TABLE_LINE.match(lines[j]):
                j += 1
            rows = lines[i:j]
            if len(rows) > 1 and _TABLE_SEPARATOR.match(rows[1]):
                blocks.append(_Block("table", rows[2:], header=f"{rows[0]}\n{rows[1]}"))
            else:
                blocks.append(_Block("table", rows))
            i = j
        elif _RULE.match(line):
            blocks.append(_Block("paragraph", [line]))
            i += 1
        elif _LIST_ITEM.match(line):
            i = _read_list(lines, i, blocks)
        else:
            j = i + 1
            while j < n and lines[j] and not _starts_block(lines[j]):
                j += 1
            head = lines[i].strip()
            if j > i + 1 and _bold_question(head):  # "**Question?**" with its answer on the next lines
                blocks.append(_Block("paragraph", [head], question=True))
                blocks.append(_Block("paragraph", ["\n".join(lines[i + 1 : j]).lstrip()]))
            else:
                text = "\n".join(lines[i:j]).lstrip()
                blocks.append(_Block("paragraph", [text], question=j == i + 1 and _bold_question(text)))
            i = j
    return sections


def _read_fence(lines: list[str], i: int, fence: re.Match[str], blocks: list[_Block]) -> int:
    mark = fence.group(2)
    closing = re.compile(rf"^ {{0,3}}{re.escape(mark[0])}{{{len(mark)},}}[ \t]*$")
    j = i + 1
    while j < len(lines) and not closing.match(lines[j]):
        j += 1
    body = lines[i + 1 : j]
    if j == len(lines):  # never closed: it runs to the end of the page, less its blank lines
        while body and not body[-1]:
            body.pop()
    footer = lines[j] if j < len(lines) else ""
    blocks.append(_Block("code", body, header=lines[i], footer=footer))
    return j + 1


def _read_list(lines: list[str], i: int, blocks: list[_Block]) -> int:
    base = _indent(lines[i])
    items = [[lines[i]]]
    loose = False
    j, n = i + 1, len(lines)
    while j < n:
        line = lines[j]
        if not line:
            k = j + 1
            while k < n and not lines[k]:
                k += 1
            if k == n:
                break
            if _indent(lines[k]) > base:  # the item goes on after blank lines
                items[-1].extend(lines[j : k + 1])
            elif _LIST_ITEM.match(lines[k]) and not _RULE.match(lines[k]):
                items.append([lines[k]])
                loose = True
            else:
                break
            j = k + 1
            continue
        if _indent(line) <= base and _LIST_ITEM.match(line) and not _RULE.match(line):
            items.append([line])
        elif _indent(line) > base or not _starts_block(line):
            items[-1].append(line)  # nested, indented or lazy continuation
        else:
            break
        j += 1
    blocks.append(_Block("list", ["\n".join(item) for item in items], "\n\n" if loose else "\n"))
    return j


# Sections to parts -----------------------------------------------------------------------


@dataclass
class _Part:
    section: _Section
    text: str  # heading line, FAQ question line, body
    has_body: bool
    is_faq: bool
    oversized: bool
    opens_group: bool  # the first part of a section's run of blocks: may merge into a chunk


def _section_parts(section: _Section, sizes: ChunkSizes) -> list[_Part]:
    if not section.blocks:
        if not section.heading:
            return []
        return [_Part(section, section.heading, False, False, False, True)]
    parts: list[_Part] = []
    for question, blocks in _groups(section):
        head = "\n\n".join(x for x in (section.heading, question) if x)
        is_faq = bool(question) or section.question
        room = max(sizes.max_chars - (len(head) + 2 if head else 0), _MIN_ROOM)
        texts = [block.text for block in blocks]

        def split(k: int, left: int, blocks: list[_Block] = blocks) -> list[tuple[str, bool]]:
            return _split_block(blocks[k], left, sizes.min_tokens)

        pieces = _greedy(texts, "\n\n", room, sizes.min_tokens, split)
        for n, (body, oversized) in enumerate(pieces):
            text = f"{head}\n\n{body}" if head else body
            over = oversized or len(text) > sizes.max_chars
            parts.append(_Part(section, text, True, is_faq, over, n == 0))
    return parts


def _groups(section: _Section) -> list[tuple[str, list[_Block]]]:
    """The section's blocks as (question line or "", blocks) runs: intro, then FAQ answers."""
    blocks = section.blocks
    if section.question:
        return [("", blocks)]
    groups: list[tuple[str, list[_Block]]] = []
    question, run = "", []
    for k, block in enumerate(blocks):
        answered = block.question and k + 1 < len(blocks) and not blocks[k + 1].question
        if answered or (block.question and question):
            if run or question:
                groups.append((question, run))
            question, run = (block.text.strip(), []) if answered else ("", [block])
        else:
            run.append(block)
    if run or question:
        groups.append((question, run))
    return groups


def _greedy(
    units: Sequence[str],
    joiner: str,
    room: int,
    min_tokens: int,
    split: Callable[[int, int], list[tuple[str, bool]]],
) -> list[tuple[str, bool]]:
    """Pack units, in order, into pieces of at most `room` characters, each with its oversized
    flag. A unit that does not fit alone is cut by `split(index, room)`; its first piece goes on
    after the units before it when those are still under `min_tokens` (an intro stays with the
    list or table it introduces), and units after it may join its last piece."""
    out: list[tuple[str, bool]] = []
    current: list[str] = []
    size, oversized = 0, False
    for k, unit in enumerate(units):
        if current and size + len(joiner) + len(unit) <= room:
            current.append(unit)
            size += len(joiner) + len(unit)
            continue
        if len(unit) <= room:
            pieces = [(unit, False)]
            glue = False
        else:
            left = room - size - len(joiner)
            glue = bool(current) and (size + 3) // 4 < min_tokens and left >= _MIN_ROOM
            pieces = split(k, left if glue else room)
        if not pieces:  # nothing but whitespace
            continue
        if glue:
            first, over = pieces[0]
            pieces[0] = (joiner.join([*current, first]), oversized or over)
        elif current:
            out.append((joiner.join(current), oversized))
        out.extend(pieces[:-1])
        last, oversized = pieces[-1]
        current, size = [last], len(last)
    if current:
        out.append((joiner.join(current), oversized))
    return out


def _split_block(block: _Block, room: int, min_tokens: int) -> list[tuple[str, bool]]:
    """Pieces of a block that does not fit in `room`: cut between its units, then inside them."""
    if block.kind == "paragraph":
        return [(piece, True) for piece in _split_text(block.units[0], room, _PARAGRAPH_CUTS)]
    if block.kind == "list":
        return _greedy(block.units, block.joiner, room, min_tokens, _unit_splitter(block.units))
    if block.kind == "table":
        if not block.header:
            return _greedy(block.units, "\n", room, min_tokens, _unit_splitter(block.units))
        # A header that leaves no room for rows (a table wider than the budget): rows are packed
        # as if it were not there, and the parts, over budget, are flagged oversized.
        rows_room = room - len(block.header) - 1
        if rows_room < _MIN_ROOM:
            rows_room = room
        pieces = _greedy(block.units, "\n", rows_room, min_tokens, _unit_splitter(block.units))
        return [(f"{block.header}\n{rows}", over) for rows, over in pieces]
    fence = re.match(r" {0,3}(`+|~+)", block.header)
    footer = block.footer or (fence.group(1) if fence else "```")
    lines_room = max(room - len(block.header) - len(footer) - 2, _MIN_ROOM)
    pieces = _greedy(block.units, "\n", lines_room, min_tokens, _unit_splitter(block.units))
    return [(f"{block.header}\n{lines}\n{footer}", True) for lines, _ in pieces]


def _unit_splitter(units: Sequence[str]) -> Callable[[int, int], list[tuple[str, bool]]]:
    def split(k: int, room: int) -> list[tuple[str, bool]]:
        return [(piece, True) for piece in _split_text(units[k], room, _LINE_CUTS)]

    return split


def _split_text(text: str, room: int, cuts: Sequence[re.Pattern[str]]) -> list[str]:
    """Cut text into pieces of at most `room` characters at the first kind of boundary in
    `cuts` that has any, going to the next kind for a stretch still too long, and between
    characters when none is left."""
    text = text.strip()
    if len(text) <= room:
        return [text] if text else []
    if not cuts:
        return [p for k in range(0, len(text), room) if (p := text[k : k + room].strip())]
    ends = [m.end() for m in cuts[0].finditer(text) if 0 < m.end() < len(text)]
    if not ends:
        return _split_text(text, room, cuts[1:])
    pieces: list[str] = []
    start = end = 0
    for cut in [*ends, len(text)]:
        if cut - start <= room:
            end = cut
            continue
        if end > start:
            pieces.append(text[start:end])
            start = end
        if cut - start <= room:
            end = cut
        else:
            pieces.extend(_split_text(text[start:cut], room, cuts[1:]))
            start = end = cut
    if end > start:
        pieces.append(text[start:end])
    return [piece for p in pieces if (piece := p.strip())]


# Parts to chunks -------------------------------------------------------------------------


def _merge(parts: list[_Part], sizes: ChunkSizes) -> list[list[_Part]]:
    """Group parts into chunks: a small chunk takes in the parts that follow (module doc)."""
    groups: list[list[_Part]] = []
    current: list[_Part] = []
    size = 0
    for part in parts:
        if current and _can_merge(current, size, part, sizes):
            current.append(part)
            size += 2 + len(part.text)
            continue
        if current:
            groups.append(current)
        current, size = [part], len(part.text)
    if current:
        groups.append(current)
    # A heading with no body that ends a chunk heads nothing there: it is left out (its
    # children's paths still hold it), and a chunk of such headings alone is no chunk.
    for group in groups:
        while group and not group[-1].has_body:
            group.pop()
    return [group for group in groups if group]


def _can_merge(current: list[_Part], size: int, part: _Part, sizes: ChunkSizes) -> bool:
    if part.is_faq or current[0].is_faq or not part.opens_group:
        return False
    if (size + 3) // 4 >= sizes.min_tokens or size + 2 + len(part.text) > sizes.max_chars:
        return False
    first = current[0].section.chain
    # Headings with no body so far only merge into their own descendants; otherwise siblings
    # of the first section (and everything below them) may join.
    scope = first if not any(p.has_body for p in current) else first[:-1]
    return part.section.chain[: len(scope)] == scope


def _owner(sections: list[_Section], body_sections: list[_Section]) -> _Section:
    """The deepest section that holds every section whose body is in the chunk."""
    common = body_sections[0].chain
    for section in body_sections[1:]:
        chain = section.chain
        k = 0
        while k < min(len(common), len(chain)) and common[k] == chain[k]:
            k += 1
        common = common[:k]
    return sections[common[-1]]
