"""Read an uploaded document (PDF, Word .docx, Markdown, text) into clean Markdown. Pure: no Scrapy.

`read_document(name, data)` returns a `Document` or raises `DocumentError` with one line saying
why the file cannot be read (the caller records it beside the file's name, so the reason does not
repeat the name). The kind comes from the extension (case-insensitive): .pdf, .docx, .md or
.markdown, .txt; the content must match it (a PDF starts with "%PDF", a .docx is a zip holding
word/document.xml). Files over `MAX_BYTES` are refused. The Markdown is cut to `MAX_CHARS` at the
last blank line before the limit (else the last line break, else the last space) and the
document is flagged `truncated`.

A .docx is a zip, and a small zip can unpack to gigabytes (a "zip bomb"), so before python-docx
opens it the zip is checked, in this order (`_check_zip`):

1. Every part is stored or deflated (the only methods Office Open XML allows; bzip2 and LZMA
   parts are refused, as zipfile would inflate them without a bound) and none is encrypted.
2. Before anything is inflated: the unpacked sizes the zip declares add up to at most
   `MAX_UNPACKED_BYTES`, and no part over `RATIO_GRACE_BYTES` declares more than `MAX_RATIO`
   times its packed size.
3. Declared sizes can lie, so every part is then inflated here, 64 KiB at a time, and counted
   whatever its entry declares: once the count passes `MAX_UNPACKED_BYTES` the file is refused,
   with no more inflated. A part whose bytes or CRC-32 differ from its entry is refused too, so
   what python-docx inflates afterwards is exactly what was counted here.

`MAX_UNPACKED_BYTES` is 100 MiB, ten times the largest upload, and a real long .docx fits in it
many times over: Word's text deflates about 5 to 10 to 1 (measured: a document of 3,000,000
characters, about 1,000 pages and ten times the `MAX_CHARS` kept, is 1 MB as a .docx and unpacks
to 5 MB), and the pictures that make a large .docx large hardly deflate at all. Only a 10 MB file
of nothing but text could come near the cap, and it would hold a hundred times what is kept. A
zip bomb deflates about 1,000 to 1 (100 KB unpack to 100 MB), so the cap holds it to what a real
document may take. `MAX_RATIO` is 250: the most repetitive real part measured, the document.xml
of a 2,000-row table of empty cells, deflates 160 to 1.

Reading:

* PDF (pypdf): the text of each page, then `distill_pages`. A password-protected PDF, a broken
  one, and one with no text at all (a scan: pictures of text) are errors; a PDF encrypted with
  an owner password only opens as any viewer opens it.
* Word .docx (python-docx): the body's paragraphs and tables in order. Style "Title" becomes an
  H1 and "Heading n" an H(n + 1), capped at H6, so a document's own sections sit under its
  title as the chunker expects (H2 sections). "List Bullet*" paragraphs become "- " items and
  "List Number*" ones "1. " items ("List Bullet 2" is nested three spaces per level); any other
  paragraph with list numbering of its own (Word's list buttons) becomes a "- " item. Line breaks
  inside a plain paragraph are kept; empty paragraphs are dropped. A table becomes a pipe table
  whose first row is the header, cells on one line with "|" escaped as "\\|"; empty rows are
  dropped. Headers, footers, footnotes and text boxes are not read.
* Markdown: decoded and kept as written (line endings normalised, outer blank lines trimmed).
* Text: decoded, then distilled by `distill_pages` like a PDF's text; a form feed (a page break
  in text) separates pages.
* Decoding: UTF-16 when the file starts with its byte-order mark, else UTF-8 (a leading BOM
  removed), else cp1252 (Windows' Western encoding, what non-UTF-8 files almost always are).
  A NUL character means binary data, not text: an error.

`Document.title` is the PDF's /Title or the .docx core-properties title, else the text of the
Markdown's first heading, else the file name without its extension.

`distill_pages(pages)` turns the text of the pages into Markdown, with these rules, in order.
A page's "edge" is its first 3 and last 3 non-blank lines, where running headers, footers and
page numbers sit.

1. Running headers and footers: an edge line of at most 80 characters whose key (digit runs
   replaced by "#", case folded, so "Page 3 of 10" and "Page 4 of 10" share one) is an edge line
   of 3 or more pages is dropped from the edges of every page.
2. Page numbers: an edge line that is only a number, "Page N", "Page N of M", "N of M", "N / M"
   or "- N -" is dropped. In the middle of a page such a line is kept (it is more likely a
   price or a table cell than a page number).
3. Wrapped lines: the pages' lines are read as one stream (a paragraph may go on over a page
   break). A blank line ends a block; a list line starts one (see 6, plus "1." / "1)" numbers,
   "a)" / "a." letters and "(i)" markers). Any other line is joined to the block above when the
   block is a paragraph or list item that does not end a sentence (".", "!", "?" or "…", maybe
   followed by a closing quote or bracket), and either the line starts with a lower-case
   letter, or the block ends with a character that cannot end a sentence: "," "(" "&" "/" or a
   hyphen or dash, or the line starts with a digit and the block ends with a lower-case letter
   ("covers the first" + "30 minutes"). Otherwise the line starts a paragraph of its own (so a line broken after an
   abbreviation, "approx." + "per hour", stays two paragraphs). A line that is already a
   Markdown heading ("# ...") is a block of its own and takes nothing in.
4. Hyphenation: when a block ends with a letter and "-" (or a soft hyphen) and the next line
   starts with a lower-case letter, they are joined without the hyphen ("plumb-" + "ing" is
   "plumbing"); after another hyphen, or after "(", the line is joined without a space
   ("Acme-" + "Brand" is "Acme-Brand"). Every other join puts one space between the lines.
   Hyphens within a line ("after-hours") are never touched.
5. Headings, only when the text has no Markdown heading yet: a title-like paragraph (a single
   line of at most 60 characters that starts with a capital letter, is not a list line and does
   not end with "." "," ";" ":" or "…", maybe followed by a closing quote or bracket) becomes a
   "## " heading when the next block is a paragraph or list item that is not title-like itself.
   Of a run of short lines, such as the rows of a table, only the last one can become a
   heading (when a paragraph follows it).
6. Bullets: "•", "◦", "▪", "‣", "●", "○", "■" and the Symbol/Wingdings bullets PDFs carry
   (U+F0B7, U+F0A7), with or without a space after them, and "–", "-" or "*" followed by a space
   at a line start become "- "; a bullet alone on its line marks the next line as the item.
   "1)" becomes "1." (a Markdown list); consecutive "- " / "1." items form one tight list.
7. Whitespace: runs of spaces, tabs and no-break spaces become one space, control characters
   and soft hyphens are dropped, ligatures ("ﬁ", "ﬂ", ...) are spelled out, lines are trimmed,
   blocks are separated by exactly one blank line (list items by a line break) and the result
   is trimmed.

The cut to `MAX_CHARS` is done by `read_document`, after distilling.
"""

from __future__ import annotations

import io
import logging
import math
import re
import struct
import zipfile
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PureWindowsPath
from typing import TYPE_CHECKING

import docx
from docx.table import Table
from pypdf import PdfReader
from pypdf.errors import PyPdfError

if TYPE_CHECKING:
    from docx.document import Document as DocxDocument
    from docx.text.paragraph import Paragraph

logger = logging.getLogger(__name__)

MAX_BYTES = 10 * 1024 * 1024  # a file over this is refused
MAX_CHARS = 300_000  # the distilled Markdown is cut here (at a paragraph boundary)
MAX_UNPACKED_BYTES = 100 * 1024 * 1024  # a .docx whose parts unpack to more than this is refused
MAX_RATIO = 250  # a .docx part over RATIO_GRACE_BYTES unpacked may be at most this many times its packed size
RATIO_GRACE_BYTES = 1024 * 1024  # parts up to this size are never refused for their ratio

_KINDS = {".pdf": "pdf", ".docx": "docx", ".md": "markdown", ".markdown": "markdown", ".txt": "text"}
_ACCEPTED = "PDF (.pdf), Word (.docx), Markdown (.md, .markdown) or text (.txt)"
_MB = 1024 * 1024
_INFLATE_CHUNK = 64 * 1024  # bytes inflated at a time while a .docx's parts are counted
_METHODS = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma"}  # the other methods zipfile would inflate
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # a zip entry's local header: signature, ..., name and extra lengths

# What pypdf and python-docx raise on files they cannot parse: their own errors, plus the
# built-in ones a malformed file trips inside them (a missing key, a wrong type, bad XML).
_READ_ERRORS = (PyPdfError, zipfile.BadZipFile, SyntaxError, ArithmeticError, AssertionError,
                AttributeError, LookupError, OSError, RuntimeError, TypeError, ValueError)

_EDGE = 3  # lines at the top and at the bottom of a page where headers, footers and page numbers sit
_RUNNING_MAX_CHARS = 80
_RUNNING_MIN_PAGES = 3
_TITLE_MAX_CHARS = 60

_SPACES = re.compile(r"[ \t\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]+")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200b\u200e\u200f\ufeff]")
_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"})
_DIGIT_RUNS = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(
    r"(?:(?:page|p\.|pg\.?)\s*)?\d{1,4}(?:\s*(?:/|of)\s*\d{1,4})?|[-–—]\s*\d{1,4}\s*[-–—]", re.IGNORECASE)
_BULLETS = "•◦▪‣●○■\uf0b7\uf0a7"
_LONE_BULLET = re.compile(rf"[{_BULLETS}]")
_LIST_LINE = re.compile(
    rf"(?:(?P<bullet>[{_BULLETS}])\s*|[-–*]\s+|(?P<number>\d{{1,3}})[.)]\s+"
    r"|(?P<other>[a-z][.)]|\([a-z0-9]{1,3}\))\s+)(?P<text>\S.*)")
_ATX_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(```|~~~)")
_HYPHENATED = re.compile(r"[^\W\d_][-\u2010]$")
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*$")
_CONTINUES = (",", "(", "&", "/", "-", "\u2010", "–", "—")
_NOT_TITLE_END = re.compile(r"[.,;:…][\"'”’)\]]*$")
_DOCX_HEADING = re.compile(r"heading ([1-9])", re.IGNORECASE)
_DOCX_LIST = re.compile(r"list (bullet|number)(?: ([2-9]))?", re.IGNORECASE)


@dataclass(frozen=True)
class Document:
    """A document read into Markdown."""

    title: str  # PDF /Title, else .docx core title, else the first heading, else the file name's stem
    markdown: str  # the distilled Markdown ("#" headings, "- " lists, pipe tables), <= MAX_CHARS
    kind: str  # "pdf" | "docx" | "markdown" | "text"
    pages: int  # a PDF's page count, else 0
    truncated: bool  # True when the Markdown was cut at MAX_CHARS


class DocumentError(ValueError):
    """A file that cannot be read; the message is one line saying why."""


def read_document(name: str, data: bytes) -> Document:
    """Read the file `name` (its extension gives the kind) with content `data` into Markdown."""
    stem, _, extension = PureWindowsPath(name).name.rpartition(".")
    kind = _KINDS.get(f".{extension.lower()}") if stem else None
    if kind is None:
        found = f"file type .{extension}" if stem else "file without an extension"
        raise DocumentError(f"unsupported {found}; accepted: {_ACCEPTED}")
    if len(data) > MAX_BYTES:
        raise DocumentError(f"the file is {_megabytes(len(data))} MB; files are read up to {MAX_BYTES / _MB:g} MB")
    pages = 0
    meta_title = ""
    if kind == "pdf":
        texts, meta_title = _read_pdf(data)
        pages = len(texts)
        markdown = distill_pages(texts)
    elif kind == "docx":
        markdown, meta_title = _read_docx(data)
    elif kind == "markdown":
        markdown = _decode(data).strip()
    else:
        markdown = distill_pages(_decode(data).split("\f"))
    if not markdown:
        raise DocumentError("no text to read: the file is empty")
    markdown, truncated = _cut(markdown)
    title = _one_line(meta_title) or _first_heading(markdown) or stem
    logger.debug("Read %s (%s): %d characters%s", name, kind, len(markdown), ", truncated" if truncated else "")
    return Document(title, markdown, kind, pages, truncated)


# Reading -------------------------------------------------------------------------------------


def _read_pdf(data: bytes) -> tuple[list[str], str]:
    """The text of each page, and the /Title."""
    if not data.startswith(b"%PDF"):
        raise DocumentError("not a PDF file")
    try:
        reader = PdfReader(io.BytesIO(data))
        # pypdf has already tried the empty password, which opens owner-password-only files.
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError("the PDF is protected by a password")
        texts = [page.extract_text() or "" for page in reader.pages]
        title = (reader.metadata.title if reader.metadata else None) or ""
    except DocumentError:
        raise
    except _READ_ERRORS as exc:
        raise DocumentError(f"cannot read the PDF: {_reason(exc)}") from exc
    if not texts:
        raise DocumentError("no text to read: the PDF has no pages")
    if not any(text.strip() for text in texts):
        raise DocumentError("no text to read: a scanned PDF (pictures of text)?")
    return texts, str(title)


def _read_docx(data: bytes) -> tuple[str, str]:
    """The body as Markdown, and the core-properties title."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            is_word = "word/document.xml" in archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        is_word = False
    if not is_word:
        raise DocumentError("not a Word (.docx) file")
    _check_zip(data)
    try:
        document = docx.Document(io.BytesIO(data))
        markdown = _docx_markdown(document)
        title = document.core_properties.title or ""
    except _READ_ERRORS as exc:
        raise DocumentError(f"cannot read the Word file: {_reason(exc)}") from exc
    return markdown, title


def _check_zip(data: bytes) -> None:
    """Refuse a .docx whose parts unpack past MAX_UNPACKED_BYTES or MAX_RATIO (the rules are above)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise DocumentError(f"cannot read the Word file: {_reason(exc)}") from exc
    for entry in entries:
        if entry.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            method = _METHODS.get(entry.compress_type, f"method {entry.compress_type}")
            raise DocumentError(f"not a Word (.docx) file: {entry.filename} is packed with {method} "
                                "(Word packs its parts with deflate or not at all)")
        if entry.flag_bits & 0x1:
            raise DocumentError(f"cannot read the Word file: {entry.filename} is encrypted")
    packed = f"the Word file ({_size(len(data))})"
    cap = f"a .docx is read up to {MAX_UNPACKED_BYTES / _MB:g} MB unpacked"
    declared = sum(entry.file_size for entry in entries)
    if declared > MAX_UNPACKED_BYTES:
        raise DocumentError(f"{packed} unpacks to {_size(declared)}; {cap}")
    for entry in entries:
        ratio = entry.file_size / max(entry.compress_size, 1)
        if entry.file_size > RATIO_GRACE_BYTES and ratio > MAX_RATIO:
            raise DocumentError(f"{packed} has a part, {entry.filename}, that unpacks to {ratio:,.0f} times its "
                                f"packed size ({_size(entry.file_size)}); a .docx part is read up to "
                                f"{MAX_RATIO} times")
    unpacked = 0
    for entry in entries:
        unpacked = _inflate(data, entry, unpacked, f"{packed} unpacks to more than "
                            f"{MAX_UNPACKED_BYTES / _MB:g} MB (its parts declare {_size(declared)}); {cap}")


def _inflate(data: bytes, entry: zipfile.ZipInfo, unpacked: int, over_cap: str) -> int:
    """Inflate `entry` in bounded chunks, counting from `unpacked`; the new count.

    DocumentError(`over_cap`) as soon as the count passes MAX_UNPACKED_BYTES, whatever the entry
    declares; another DocumentError when the bytes or CRC-32 are not what the entry declares."""
    damaged = DocumentError(f"cannot read the Word file: {entry.filename} is not the size or checksum its zip "
                            "entry declares")
    header = data[entry.header_offset: entry.header_offset + _LOCAL_HEADER.size]
    if len(header) < _LOCAL_HEADER.size:
        raise damaged
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(header)
    if signature != b"PK\x03\x04":
        raise damaged
    start = entry.header_offset + _LOCAL_HEADER.size + name_length + extra_length
    raw = data[start: start + entry.compress_size]
    size = crc = 0
    if entry.compress_type == zipfile.ZIP_STORED:
        for at in range(0, len(raw), _INFLATE_CHUNK):
            chunk = raw[at: at + _INFLATE_CHUNK]
            size, crc = size + len(chunk), zlib.crc32(chunk, crc)
            if unpacked + size > MAX_UNPACKED_BYTES:
                raise DocumentError(over_cap)
    else:
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)  # a zip part is a raw deflate stream
        pending = raw
        try:
            while not inflater.eof:
                chunk = inflater.decompress(pending, _INFLATE_CHUNK)
                pending = inflater.unconsumed_tail
                if not chunk and not pending:
                    break  # the stream stops short: damaged
                size, crc = size + len(chunk), zlib.crc32(chunk, crc)
                if unpacked + size > MAX_UNPACKED_BYTES:
                    raise DocumentError(over_cap)
        except zlib.error as exc:
            raise damaged from exc
        if not inflater.eof:
            raise damaged
    if size != entry.file_size or crc != entry.CRC:
        raise damaged
    return unpacked + size


def _docx_markdown(document: DocxDocument) -> str:
    blocks: list[tuple[str, str]] = []  # (kind, Markdown); kind "item" blocks form tight lists
    for part in document.iter_inner_content():
        block = _docx_table(part) if isinstance(part, Table) else _docx_paragraph(part)
        if block is not None:
            blocks.append(block)
    return _render(blocks)


def _docx_paragraph(paragraph: Paragraph) -> tuple[str, str] | None:
    lines = [line for line in (_clean(line) for line in paragraph.text.split("\n")) if line]
    if not lines:
        return None
    text = " ".join(lines)
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style.lower() == "title":
        return "heading", f"# {text}"
    if heading := _DOCX_HEADING.fullmatch(style):
        return "heading", f"{'#' * min(int(heading[1]) + 1, 6)} {text}"
    if listed := _DOCX_LIST.fullmatch(style):
        marker = "- " if listed[1].lower() == "bullet" else "1. "
        return "item", f"{'   ' * (int(listed[2] or 1) - 1)}{marker}{text}"
    # python-docx has no public view of a paragraph's own list numbering (w:pPr/w:numPr).
    numbering = paragraph._p.pPr.numPr if paragraph._p.pPr is not None else None
    if numbering is not None:
        level = numbering.ilvl.val if numbering.ilvl is not None and numbering.ilvl.val else 0
        return "item", f"{'   ' * min(level, 8)}- {text}"
    return "paragraph", "\n".join(lines)


def _docx_table(table: Table) -> tuple[str, str] | None:
    rows = [[_clean(" ".join(cell.text.split())).replace("|", "\\|") for cell in row.cells] for row in table.rows]
    rows = [row for row in rows if any(row)]
    if not rows:
        return None
    width = max(len(row) for row in rows)
    lines = [f"| {' | '.join(row + [''] * (width - len(row)))} |" for row in rows]
    lines.insert(1, "|" + " --- |" * width)
    return "table", "\n".join(lines)


def _decode(data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("cp1252", errors="replace")
    if "\x00" in text:
        raise DocumentError("not a text file (it holds binary data)")
    return text.replace("\r\n", "\n").replace("\r", "\n")


# Distilling ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Block:
    kind: str  # "paragraph" | "item" (a "- " or "1." line) | "heading"
    text: str
    lines: int = 1  # lines joined into it (a list line counts as 2: it is never a title)


def distill_pages(pages: Sequence[str]) -> str:
    """The text of a document's pages (a PDF's, or a text file's) as Markdown (the rules are above)."""
    cleaned = [[_clean(line) for line in page.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
               for page in pages]
    running = _running_keys(cleaned)
    lines: list[str] = []
    for page in cleaned:
        edges = _edges(page)
        lines.extend(line for i, line in enumerate(page)
                     if i not in edges or not (_PAGE_NUMBER.fullmatch(line) or _key(line) in running))
    blocks = _blocks(lines)
    if not any(block.kind == "heading" for block in blocks):
        _titles_to_headings(blocks)
    return _render([(block.kind, block.text) for block in blocks])


def _clean(line: str) -> str:
    return _SPACES.sub(" ", _CONTROLS.sub("", line.translate(_LIGATURES))).strip()


def _key(line: str) -> str:
    return _DIGIT_RUNS.sub("#", line).casefold()


def _edges(page: list[str]) -> set[int]:
    filled = [i for i, line in enumerate(page) if line]
    return set(filled[:_EDGE] + filled[-_EDGE:])


def _running_keys(pages: list[list[str]]) -> set[str]:
    """Keys of the short lines that sit on the edges of at least three pages."""
    counts: Counter[str] = Counter()
    for page in pages:
        counts.update({_key(page[i]) for i in _edges(page) if len(page[i]) <= _RUNNING_MAX_CHARS})
    return {key for key, count in counts.items() if count >= _RUNNING_MIN_PAGES}


def _blocks(lines: list[str]) -> list[_Block]:
    blocks: list[_Block] = []
    current: _Block | None = None  # the block a continuation line joins
    bullet_pending = False  # a bullet stood alone on the line before
    for line in lines:
        if not line:
            current = None
            continue
        if _LONE_BULLET.fullmatch(line):
            bullet_pending, current = True, None
            continue
        listed = _LIST_LINE.fullmatch(line)
        if bullet_pending and not listed:
            current = _Block("item", f"- {line}")
        elif listed and listed["number"]:
            current = _Block("item", f"{listed['number']}. {listed['text']}")
        elif listed and listed["other"]:
            current = _Block("paragraph", f"{listed['other']} {listed['text']}", lines=2)
        elif listed:
            current = _Block("item", f"- {listed['text']}")
        elif _ATX_HEADING.fullmatch(line):
            blocks.append(_Block("heading", line))
            current, bullet_pending = None, False
            continue
        elif current is not None and _continues(current.text, line):
            current.text = _join(current.text, line)
            current.lines += 1
            continue
        else:
            current = _Block("paragraph", line)
        bullet_pending = False
        blocks.append(current)
    return blocks


def _continues(text: str, line: str) -> bool:
    if _SENTENCE_END.search(text):
        return False
    # "... covers the first" + "30 minutes on site.": a number after a word in lower case.
    return line[0].islower() or text.endswith(_CONTINUES) or (line[0].isdigit() and text[-1].islower())


def _join(text: str, line: str) -> str:
    if _HYPHENATED.search(text) and line[0].islower():
        return text[:-1] + line  # "plumb-" + "ing"
    if text.endswith("\u00ad"):  # a soft hyphen only shows where a word was broken
        return text[:-1] + line
    if text.endswith(("-", "\u2010", "(")) and not text.endswith(" -"):
        return text + line  # "Acme-" + "Brand", "9-" + "5pm", "(" + "gas)"
    return f"{text} {line}"


def _title_like(block: _Block) -> bool:
    text = block.text
    return (block.kind == "paragraph" and block.lines == 1 and len(text) <= _TITLE_MAX_CHARS
            and text[0].isupper() and not _NOT_TITLE_END.search(text))


def _titles_to_headings(blocks: list[_Block]) -> None:
    titles = [_title_like(block) for block in blocks]
    for i, block in enumerate(blocks):
        if titles[i] and i + 1 < len(blocks) and blocks[i + 1].kind in ("paragraph", "item") and not titles[i + 1]:
            block.kind, block.text = "heading", f"## {block.text}"


def _render(blocks: Sequence[tuple[str, str]]) -> str:
    out: list[str] = []
    for i, (kind, text) in enumerate(blocks):
        if i:
            out.append("\n" if kind == "item" and blocks[i - 1][0] == "item" else "\n\n")
        out.append(text)
    return "".join(out).replace("\u00ad", "").strip()


# Output --------------------------------------------------------------------------------------


def _cut(markdown: str) -> tuple[str, bool]:
    """`markdown` cut to MAX_CHARS at the last blank line (else line break, else space) before it."""
    limit = MAX_CHARS
    if len(markdown) <= limit:
        return markdown, False
    head = markdown[: limit + 1]
    for separator in ("\n\n", "\n", " "):
        at = head.rfind(separator)
        if at > 0:
            return markdown[:at].rstrip(), True
    return markdown[:limit], True


def _first_heading(markdown: str) -> str:
    fenced = False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (heading := _ATX_HEADING.fullmatch(line)) and heading[1]:
            return _one_line(heading[1])
    return ""


def _megabytes(size: int) -> str:
    """`size` bytes in MB with one decimal, rounded up ("10.1" for a byte over 10 MB)."""
    return f"{math.ceil(size / _MB * 10) / 10:,.1f}"


def _size(size: int) -> str:
    """`size` bytes as "137 KB" under a megabyte, else as "101.8 MB" (both rounded up)."""
    return f"{math.ceil(size / 1024):,} KB" if size < _MB else f"{_megabytes(size)} MB"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _reason(exc: BaseException) -> str:
    return _one_line(str(exc))[:200] or type(exc).__name__
