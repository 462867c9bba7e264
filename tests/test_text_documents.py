"""Tests for helppuff_crawl.text.documents: pinned Markdown for each kind, each distill rule, and each error."""

from __future__ import annotations

import io
import math
import random
import re
import tracemalloc
import zipfile
import zlib
from typing import Any

import pytest

from helppuff_crawl.text import documents
from helppuff_crawl.text.documents import (
    Document,
    DocumentError,
    distill_pages,
    read_document,
)
from tests.docgen import BOMB_PART, docx_bytes, encrypted_pdf_bytes, patch_zip_entry, pdf_bytes, zip_bomb_docx

HEADER = "Acme Plumbing — Price list 2026"

PRICE_LIST = [
    [HEADER, "Our prices",
     "All prices include GST and are valid from 1 March 2026. A call-out fee",
     "applies to every visit, including after-hours visits on weekends.",
     "Call-out and labour",
     "• Standard call-out fee $95",
     "• Hourly rate $120, charged in 15-minute",
     "blocks after the first hour",
     "– Emergency call-out $180",
     "Page 1 of 4"],
    [HEADER, "Blocked drains",
     "Our plumbers clear blocked drains with a high-pressure jet. Most jobs take",
     "under an hour and include a camera inspection of the pipe, so you see",
     "Page 2 of 4"],
    [HEADER, "what caused the blockage.",
     "Drain clearing from $180",
     "Hot water",
     "We repair and replace electric, gas and solar systems. A new system is",
     "installed in a day, and we remove the old unit at no cost. The plumb-",
     "ing connection is included.",
     "Page 3 of 4"],
    [HEADER, "Warranty", "All work carries a 12 month warranty on parts and labour.", "Page 4 of 4"],
]

PRICE_LIST_MARKDOWN = """\
## Our prices

All prices include GST and are valid from 1 March 2026. A call-out fee applies to every visit, \
including after-hours visits on weekends.

## Call-out and labour

- Standard call-out fee $95
- Hourly rate $120, charged in 15-minute blocks after the first hour
- Emergency call-out $180

## Blocked drains

Our plumbers clear blocked drains with a high-pressure jet. Most jobs take under an hour and \
include a camera inspection of the pipe, so you see what caused the blockage.

Drain clearing from $180

## Hot water

We repair and replace electric, gas and solar systems. A new system is installed in a day, and \
we remove the old unit at no cost. The plumbing connection is included.

## Warranty

All work carries a 12 month warranty on parts and labour."""


def test_price_list_pdf() -> None:
    document = read_document("Price list 2026.pdf", pdf_bytes(PRICE_LIST))
    assert document == Document(
        title="Our prices", markdown=PRICE_LIST_MARKDOWN, kind="pdf", pages=4, truncated=False)


def test_header_on_two_pages_and_numbers_in_sentences_are_kept() -> None:
    pages = [
        ["draft copy — not for release", "Opening hours", "We answer calls within 2 hours, 7 days.", "1"],
        ["draft copy — not for release", "Call us on 1300 555 010 or see page 3 of the brochure.", "2"],
        ["Service areas", "We cover 40 suburbs.", "Suburbs served", "150", "Jobs last year", "Over 900.", "3"],
        ["Warranty", "Parts carry 12 months.", "4"],
    ]
    assert read_document("hours.pdf", pdf_bytes(pages)).markdown == (
        "draft copy — not for release\n\n"
        "## Opening hours\n\n"
        "We answer calls within 2 hours, 7 days.\n\n"
        "draft copy — not for release\n\n"
        "Call us on 1300 555 010 or see page 3 of the brochure.\n\n"
        "## Service areas\n\n"
        "We cover 40 suburbs.\n\n"
        "Suburbs served 150\n\n"  # a number in the middle of a page is data, not a page number
        "## Jobs last year\n\n"
        "Over 900.\n\n"
        "## Warranty\n\n"
        "Parts carry 12 months."
    )


@pytest.mark.parametrize(("pages", "expected"), [
    # 1. running headers and footers, digits normalised, on 3 or more pages
    pytest.param([["Acme — 2026 edition 1", "Taps are fixed.", "p. 1"],
                  ["Acme — 2026 edition 2", "Drains are cleared.", "p. 2"],
                  ["Acme — 2026 edition 3", "Roofs are checked.", "p. 3"]],
                 "Taps are fixed.\n\nDrains are cleared.\n\nRoofs are checked.", id="running-lines"),
    pytest.param([["Short line", "Body one.", "Short line"], ["Body two.", "Short line"],
                  ["Short line", "Body three.", "Other"]],
                 "Body one.\n\nBody two.\n\nBody three.\n\nOther", id="running-line-anywhere-on-edges"),
    pytest.param([[f"Intro {w}", f"{w} 1", f"{w} 2", f"{w} 3", "Repeated line", f"{w} 4", f"{w} 5", f"{w} 6",
                   f"End {w}."] for w in ("alpha", "beta", "gamma")],
                 "\n\n".join(f"Intro {w} {w} 1 {w} 2 {w} 3\n\nRepeated line {w} 4 {w} 5 {w} 6\n\nEnd {w}."
                              for w in ("alpha", "beta", "gamma")), id="middle-lines-are-not-edges"),
    # 2. page numbers on a page's edges
    pytest.param([["- 2 -", "Body.", "Page 7", "12 / 40"]], "Body.", id="page-numbers"),
    pytest.param([["3 of 9", "Body.", "PAGE 3 OF 9"]], "Body.", id="n-of-m"),
    pytest.param([["Intro.", "One.", "Two.", "Three.", "12 / 40", "Printed May.", "Thanks."]],
                 "Intro.\n\nOne.\n\nTwo.\n\nThree.\n\nPrinted May.\n\nThanks.", id="third-line-from-the-end"),
    pytest.param([["Intro.", "One.", "Two.", "12 / 40", "Three.", "Printed May.", "Thanks."]],
                 "Intro.\n\nOne.\n\nTwo.\n\n12 / 40\n\nThree.\n\nPrinted May.\n\nThanks.", id="fourth-line-is-body"),
    # 3. wrapped lines
    pytest.param([["We fix taps, toilets and", "showers across Sydney."]],
                 "We fix taps, toilets and showers across Sydney.", id="lower-case-continues"),
    pytest.param([["Call us on 02 9999 0000 or book online,", "Sydney wide."]],
                 "Call us on 02 9999 0000 or book online, Sydney wide.", id="comma-continues"),
    pytest.param([["Hot water (gas /", "Electric /", "Solar) & Drains &", "Sewers"]],
                 "Hot water (gas / Electric / Solar) & Drains & Sewers", id="slash-ampersand-continue"),
    pytest.param([["Repairs (", "Gas and water)"]], "Repairs (Gas and water)", id="bracket-continues"),
    pytest.param([["Prices are approx.", "per hour of labour."]], "Prices are approx.\n\nper hour of labour.",
                 id="sentence-end-then-lower-case"),
    pytest.param([["The price includes:", "labour and parts."]], "The price includes: labour and parts.",
                 id="colon-then-lower-case"),
    pytest.param([["Call \"Acme.\"", "now, or \"Bolt!\")", "and more"]],
                 "Call \"Acme.\"\n\nnow, or \"Bolt!\")\n\nand more", id="sentence-end-in-quotes"),
    pytest.param([["We fix taps.", "We clear drains."]], "We fix taps.\n\nWe clear drains.", id="sentence-ends"),
    pytest.param([["We fix taps", "Sydney wide"]], "We fix taps\n\nSydney wide", id="capital-starts-a-block"),
    pytest.param([["We fix taps,", "", "and drains."]], "We fix taps,\n\nand drains.", id="blank-line-ends-block"),
    # 4. hyphenation
    pytest.param([["The plumb-", "ing is done."]], "The plumbing is done.", id="hyphenation-undone"),
    pytest.param([["After-hours call-outs cost", "double."]], "After-hours call-outs cost double.",
                 id="hyphens-within-a-line-kept"),
    pytest.param([["We stock Acme-", "Brand taps."]], "We stock Acme-Brand taps.", id="hyphen-before-capital"),
    pytest.param([["Open 7am -", "late, every day."]], "Open 7am - late, every day.", id="spaced-dash"),
    pytest.param([["Soft\u00ad", "ware up\u00addates and hy\u00ad"]], "Software updates and hy", id="soft-hyphens"),
    # 5. title-like lines
    pytest.param([["Hot water", "We repair and replace systems."]],
                 "## Hot water\n\nWe repair and replace systems.", id="title-line"),
    pytest.param([["Why choose us?", "Licensed plumbers."]], "## Why choose us?\n\nLicensed plumbers.",
                 id="question-title"),
    pytest.param([["Our services", "• Taps", "• Drains"]], "## Our services\n\n- Taps\n- Drains",
                 id="title-before-list"),
    pytest.param([["Hot water.", "We repair systems."]], "Hot water.\n\nWe repair systems.", id="full-stop"),
    pytest.param([["We cover:", "Every suburb."]], "We cover:\n\nEvery suburb.", id="colon"),
    pytest.param([["A" * 61, "Body."]], "A" * 61 + "\n\nBody.", id="over-60-characters"),
    pytest.param([["hot water", "Body."]], "hot water\n\nBody.", id="lower-case-start"),
    pytest.param([["Acme Plumbing", "Price list 2026", "Prices include GST."]],
                 "Acme Plumbing\n\n## Price list 2026\n\nPrices include GST.", id="title-before-title"),
    pytest.param([["Hot water"]], "Hot water", id="nothing-follows"),
    pytest.param([["Blocked drain $180", "Tap washer $75", "Prices include GST."]],
                 "Blocked drain $180\n\n## Tap washer $75\n\nPrices include GST.", id="table-rows-last-one"),
    pytest.param([["# Guide", "Hot water", "We repair systems."]], "# Guide\n\nHot water\n\nWe repair systems.",
                 id="text-with-headings"),
    # 6. bullets and numbers
    pytest.param([["• One", "◦ Two", "▪ Three", "– Four", "\uf0b7Five", "* Six", "- Seven"]],
                 "- One\n- Two\n- Three\n- Four\n- Five\n- Six\n- Seven", id="bullets"),
    pytest.param([["•", "Lone bullet", "•Tight bullet"]], "- Lone bullet\n- Tight bullet", id="lone-bullet"),
    pytest.param([["1) First", "2. Second step", "continues here", "a) Option", "(ii) Other"]],
                 "1. First\n2. Second step continues here\n\na) Option\n\n(ii) Other", id="numbers"),
    pytest.param([["Costs fell –5 per cent.", "–10 is not a bullet."]], "Costs fell –5 per cent.\n\n–10 is not a bullet.",
                 id="dash-without-space"),
    # 7. whitespace and characters
    pytest.param(["  Wide \t spaced\u00a0 line.  \n\n\n\nNext\x00 one.  "], "Wide spaced line.\n\nNext one.",
                 id="whitespace"),
    pytest.param(["Ofﬁce ﬂoors\r\nare ﬁxed."], "Office floors are fixed.", id="ligatures-and-crlf"),
    pytest.param([], "", id="no-pages"),
])
def test_distill_pages(pages: list[list[str] | str], expected: str) -> None:
    texts = [page if isinstance(page, str) else "\n".join(page) for page in pages]
    assert distill_pages(texts) == expected


def test_paragraph_goes_on_over_a_page_break() -> None:
    assert distill_pages(["Body text that", "goes on here."]) == "Body text that goes on here."


@pytest.mark.parametrize(("name", "data", "title"), [
    pytest.param("price-list.pdf", pdf_bytes([["Body text."], ["Hot water", "We fix it."]], title=" Acme  Prices "),
                 "Acme Prices", id="pdf-metadata"),
    pytest.param("price-list.pdf", pdf_bytes([["Body text."], ["Hot water", "We fix it."]], title=""),
                 "Hot water", id="pdf-empty-metadata-first-heading"),
    pytest.param("Price list 2026.PDF", pdf_bytes([["Body text.", "More text."]]), "Price list 2026",
                 id="pdf-file-name"),
    pytest.param("guide.docx", docx_bytes([("Title", "Acme guide"), ("Normal", "Text.")], title="Core title"),
                 "Core title", id="docx-core-title"),
    pytest.param("guide.docx", docx_bytes([("Normal", "Text."), ("Heading 1", "Services"), ("Normal", "More.")]),
                 "Services", id="docx-first-heading"),
    pytest.param("Our guide.docx", docx_bytes([("Normal", "Text.")]), "Our guide", id="docx-file-name"),
    pytest.param("faq.md", b"Intro\n\n```\n# not a heading\n```\n\n## Questions  ##\n", "Questions", id="md-heading"),
    pytest.param("dir/sub/faq.v2.md", b"No heading here.", "faq.v2", id="md-file-name"),
    pytest.param("C:\\Users\\me\\notes.txt", b"Notes.", "notes", id="windows-path"),
])
def test_title(name: str, data: bytes, title: str) -> None:
    assert read_document(name, data).title == title


def test_docx() -> None:
    data = docx_bytes([
        ("Title", "Acme guide"),
        ("Normal", ""),
        ("Heading 1", "Services"),
        ("Normal", "We fix  taps\nand drains."),
        ("List Bullet", "Taps"),
        ("List Bullet 2", "Mixer taps"),
        ("List Number", "Call us"),
        ("List Number", "Book a time"),
        ("Heading 2", "Prices"),
        [["Job", "Price"], ["Tap | washer", "$75"], ["", ""], ["Drain\nclearing", "$180"]],
        ("Heading 6", "Small print"),
        ("Normal", "GST included."),
    ])
    document = read_document("Guide.DOCX", data)
    assert document == Document(title="Acme guide", kind="docx", pages=0, truncated=False, markdown=(
        "# Acme guide\n\n"
        "## Services\n\n"
        "We fix taps\nand drains.\n\n"
        "- Taps\n"
        "   - Mixer taps\n"
        "1. Call us\n"
        "1. Book a time\n\n"
        "### Prices\n\n"
        "| Job | Price |\n"
        "| --- | --- |\n"
        "| Tap \\| washer | $75 |\n"
        "| Drain clearing | $180 |\n\n"
        "###### Small print\n\n"
        "GST included."
    ))


def test_docx_list_paragraph_with_numbering() -> None:
    from docx import Document as new_docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    document = new_docx()
    document.add_paragraph("Intro:")
    for text, level in (("Item", 0), ("Sub item", 1)):
        paragraph = document.add_paragraph(text, style="List Paragraph")
        paragraph._p.get_or_add_pPr().append(parse_xml(
            f'<w:numPr {nsdecls("w")}><w:ilvl w:val="{level}"/><w:numId w:val="1"/></w:numPr>'))
    out = io.BytesIO()
    document.save(out)
    assert read_document("list.docx", out.getvalue()).markdown == "Intro:\n\n- Item\n   - Sub item"


@pytest.mark.parametrize(("name", "data", "markdown"), [
    pytest.param("notes.md", b"\xef\xbb\xbf# Caf\xc3\xa9\r\n\r\n* one\r\n* two\r\n\r\n\r\n", "# Café\n\n* one\n* two",
                 id="md-bom-crlf-kept-as-written"),
    pytest.param("notes.markdown", b"Caf\xe9 \x93menu\x94\r\n==\r\n", "Café “menu”\n==", id="md-cp1252"),
    pytest.param("notes.txt", b"\xef\xbb\xbfHot water\r\nWe fix caf\xc3\xa9 boilers and\r\nurns.\r\n",
                 "## Hot water\n\nWe fix café boilers and urns.", id="txt-bom-crlf-distilled"),
    pytest.param("notes.TXT", b"Price \x80 95 \x96 plumb-\r\ning\r\n", "Price € 95 – plumbing", id="txt-cp1252"),
    pytest.param("notes.txt", "Hot water\nWe fix it.".encode("utf-16"), "## Hot water\n\nWe fix it.",
                 id="txt-utf16"),
    pytest.param("notes.txt", b"Header 1\nBody one.\fHeader 2\nBody two.\fHeader 3\nBody three.",
                 "Body one.\n\nBody two.\n\nBody three.", id="txt-form-feed-pages"),
])
def test_markdown_and_text(name: str, data: bytes, markdown: str) -> None:
    document = read_document(name, data)
    assert document.markdown == markdown
    assert (document.pages, document.truncated) == (0, False)
    assert document.kind == ("text" if name.lower().endswith(".txt") else "markdown")


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


ACCEPTED = "accepted: PDF (.pdf), Word (.docx), Markdown (.md, .markdown) or text (.txt)"


@pytest.mark.parametrize(("name", "data", "message"), [
    pytest.param("sheet.xlsx", b"PK", f"unsupported file type .xlsx; {ACCEPTED}", id="unknown-extension"),
    pytest.param("README", b"text", f"unsupported file without an extension; {ACCEPTED}", id="no-extension"),
    pytest.param("old.doc", b"\xd0\xcf\x11\xe0", f"unsupported file type .doc; {ACCEPTED}", id="old-word"),
    pytest.param("price.pdf", b"<html>Not found</html>", "not a PDF file", id="pdf-not-pdf"),
    pytest.param("price.pdf", b"", "not a PDF file", id="pdf-empty"),
    pytest.param("guide.docx", b"%PDF-1.4", "not a Word (.docx) file", id="docx-not-zip"),
    pytest.param("guide.docx", _zip({"xl/workbook.xml": b"<x/>"}), "not a Word (.docx) file", id="docx-other-zip"),
    pytest.param("scan.pdf", pdf_bytes([[], []]), "no text to read: a scanned PDF (pictures of text)?", id="scan"),
    pytest.param("locked.pdf", encrypted_pdf_bytes(pdf_bytes([["Secret prices."]]), "secret"),
                 "the PDF is protected by a password", id="encrypted"),
    pytest.param("empty.txt", b" \r\n\r\n", "no text to read: the file is empty", id="empty-text"),
    pytest.param("empty.docx", docx_bytes([("Normal", "")]), "no text to read: the file is empty", id="empty-docx"),
    pytest.param("bin.txt", b"\x00\x01\x02binary", "not a text file (it holds binary data)", id="binary-text"),
])
def test_errors(name: str, data: bytes, message: str) -> None:
    with pytest.raises(DocumentError) as caught:
        read_document(name, data)
    assert str(caught.value) == message


@pytest.mark.parametrize(("name", "data", "prefix"), [
    pytest.param("broken.pdf", b"%PDF-1.4\nthis is not a PDF body", "cannot read the PDF: ", id="pdf-body"),
    pytest.param("cut.pdf", pdf_bytes([["Hello."]])[:200], "cannot read the PDF: ", id="pdf-truncated"),
    pytest.param("broken.docx", _zip({"[Content_Types].xml": b"<Types/>", "word/document.xml": b"<w:document"}),
                 "cannot read the Word file: ", id="docx-xml"),
])
def test_broken_files_are_errors_not_tracebacks(name: str, data: bytes, prefix: str) -> None:
    # The reason after the prefix is the parser's own (one line); its wording is the parser's to change.
    with pytest.raises(DocumentError) as caught:
        read_document(name, data)
    message = str(caught.value)
    assert message.startswith(prefix)
    assert len(message) > len(prefix)
    assert "\n" not in message


def test_owner_password_only_pdf_is_read() -> None:
    data = encrypted_pdf_bytes(pdf_bytes([["Open prices."]]), user_password="")
    assert read_document("open.pdf", data).markdown == "Open prices."


@pytest.mark.parametrize(("size", "message"), [
    pytest.param(documents.MAX_BYTES + 1, "the file is 10.1 MB; files are read up to 10 MB", id="just-over"),
    pytest.param(int(12.3 * 1024 * 1024), "the file is 12.3 MB; files are read up to 10 MB", id="12.3"),
])
def test_over_max_bytes(size: int, message: str) -> None:
    data = b"%PDF-1.4\n" + bytes(size - 9)
    with pytest.raises(DocumentError) as caught:
        read_document("big.pdf", data)
    assert str(caught.value) == message


def test_max_bytes_itself_is_read() -> None:
    data = b"Hello." + b" " * (documents.MAX_BYTES - 6)
    assert read_document("big.txt", data).markdown == "Hello."


@pytest.mark.parametrize(("limit", "markdown", "expected", "truncated"), [
    pytest.param(40, "# T\n\nFirst paragraph here.\n\nSecond paragraph is long.",
                 "# T\n\nFirst paragraph here.", True, id="cut-at-blank-line"),
    pytest.param(22, "# T\n\nFirst paragraph.\n\nSecond.", "# T\n\nFirst paragraph.", True,
                 id="blank-line-right-at-limit"),
    pytest.param(53, "# T\n\nFirst paragraph here.\n\nSecond paragraph is long.",
                 "# T\n\nFirst paragraph here.\n\nSecond paragraph is long.", False, id="exactly-at-limit"),
    pytest.param(20, "# T\nline one is here\nline two", "# T\nline one is here", True, id="no-blank-line"),
    pytest.param(10, "abcdefghijklmnop", "abcdefghij", True, id="no-break-at-all"),
])
def test_max_chars_cut(monkeypatch: pytest.MonkeyPatch, limit: int, markdown: str, expected: str,
                       truncated: bool) -> None:
    monkeypatch.setattr(documents, "MAX_CHARS", limit)
    document = read_document("notes.md", markdown.encode())
    assert (document.markdown, document.truncated) == (expected, truncated)
    assert len(document.markdown) <= limit


def test_document_error_is_a_value_error() -> None:
    assert issubclass(DocumentError, ValueError)


def test_a_number_after_a_lower_case_word_continues_the_sentence() -> None:
    page = "Weekday call-out fee: $99, which covers the first\n30 minutes on site.\nOpen 7 days\n7am to 5pm"
    assert distill_pages([page]) == (
        "Weekday call-out fee: $99, which covers the first 30 minutes on site.\n\nOpen 7 days 7am to 5pm")


# --- a .docx that unpacks past the cap: zip bombs ----------------------------------------------

MIB = 1024 * 1024
CAP = "a .docx is read up to 100 MB unpacked"
WARRANTY = "# Warranty terms\n\nAll workmanship is guaranteed for 12 months."


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """A real .docx with one more part of 101 MiB of zeros: deflated about 1,000 to 1."""
    return zip_bomb_docx(documents.MAX_UNPACKED_BYTES + MIB)


def _declared(data: bytes) -> int:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return sum(entry.file_size for entry in archive.infolist())


def _kb(data: bytes) -> str:
    return f"{math.ceil(len(data) / 1024):,} KB"


class _CountingInflater:
    """zlib.decompressobj, counting every byte inflated (by documents.py, zipfile or python-docx)."""

    inflated = 0

    def __init__(self, *args: Any) -> None:
        self._inflater = _REAL_DECOMPRESSOBJ(*args)

    def decompress(self, data: Any, max_length: int = 0) -> bytes:
        out = self._inflater.decompress(data, max_length)
        _CountingInflater.inflated += len(out)
        return out

    def flush(self, *args: Any) -> bytes:
        out = self._inflater.flush(*args)
        _CountingInflater.inflated += len(out)
        return out

    def __getattr__(self, name: str) -> Any:  # eof, unconsumed_tail, unused_data
        return getattr(self._inflater, name)


_REAL_DECOMPRESSOBJ = zlib.decompressobj


@pytest.fixture
def inflated(monkeypatch: pytest.MonkeyPatch) -> type[_CountingInflater]:
    """The counting inflater in place of zlib's; set `inflated` to 0 just before what is counted."""
    monkeypatch.setattr(zlib, "decompressobj", _CountingInflater)
    return _CountingInflater


def test_the_counting_inflater_sees_a_docx_being_read(inflated: type[_CountingInflater]) -> None:
    # The two tests below assert how little was inflated; here it counts what a good file takes.
    data = zip_bomb_docx(0)
    inflated.inflated = 0
    assert read_document("warranty.docx", data).markdown == WARRANTY
    assert inflated.inflated >= _declared(data)


def test_a_zip_bomb_is_refused_by_its_declared_sizes_before_anything_is_inflated(
        bomb: bytes, inflated: type[_CountingInflater]) -> None:
    assert len(bomb) < 200 * 1024 < documents.MAX_UNPACKED_BYTES < _declared(bomb)
    inflated.inflated = 0
    with pytest.raises(DocumentError) as caught:
        read_document("warranty.docx", bomb)
    assert re.fullmatch(rf"the Word file \({_kb(bomb)}\) unpacks to 10[12]\.\d MB; {CAP}", str(caught.value))
    assert inflated.inflated == 0


def test_declared_sizes_that_lie_are_caught_while_inflating_in_bounded_chunks(
        bomb: bytes, inflated: type[_CountingInflater]) -> None:
    lying = patch_zip_entry(bomb, BOMB_PART, "file_size", 1000)
    with zipfile.ZipFile(io.BytesIO(lying)) as archive:
        assert archive.getinfo(BOMB_PART).file_size == 1000  # the lie is what zipfile reads
    assert _declared(lying) < documents.RATIO_GRACE_BYTES  # under the cap, and under the ratio's notice
    inflated.inflated = 0
    tracemalloc.start()
    try:
        with pytest.raises(DocumentError) as caught:
            read_document("warranty.docx", lying)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert re.fullmatch(rf"the Word file \({_kb(bomb)}\) unpacks to more than 100 MB \(its parts declare \d+ KB\); "
                        f"{CAP}", str(caught.value))
    # Inflating stopped just past the cap (the part holds 101 MiB), never holding much of it at once.
    assert documents.MAX_UNPACKED_BYTES < inflated.inflated <= documents.MAX_UNPACKED_BYTES + 64 * 1024
    assert peak < 4 * MIB


@pytest.mark.parametrize(("method", "name", "unpacked"), [
    pytest.param(zipfile.ZIP_BZIP2, "bzip2", documents.MAX_UNPACKED_BYTES + MIB, id="bzip2-bomb"),
    pytest.param(zipfile.ZIP_LZMA, "lzma", 1000, id="lzma"),
])
def test_parts_not_packed_as_word_packs_them_are_refused(method: int, name: str, unpacked: int,
                                                         inflated: type[_CountingInflater]) -> None:
    data = zip_bomb_docx(unpacked, compress_type=method)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        part = archive.getinfo(BOMB_PART)
    assert part.compress_size < 4096 and part.file_size == unpacked  # bzip2: a few hundred bytes for 101 MiB
    inflated.inflated = 0
    with pytest.raises(DocumentError) as caught:
        read_document("warranty.docx", data)
    assert str(caught.value) == (f"not a Word (.docx) file: {BOMB_PART} is packed with {name} "
                                 "(Word packs its parts with deflate or not at all)")
    assert inflated.inflated == 0


def test_a_part_packed_far_tighter_than_any_document_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    data = zip_bomb_docx(2 * MIB)  # 2 MiB of zeros: about 1,000 to 1, well under the cap
    with pytest.raises(DocumentError) as caught:
        read_document("warranty.docx", data)
    assert re.fullmatch(rf"the Word file \({_kb(data)}\) has a part, {BOMB_PART}, that unpacks to 1,0\d\d times its "
                        r"packed size \(2\.0 MB\); a \.docx part is read up to 250 times", str(caught.value))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        part = archive.getinfo(BOMB_PART)
    monkeypatch.setattr(documents, "MAX_RATIO", math.ceil(part.file_size / part.compress_size))
    assert read_document("warranty.docx", data).markdown == WARRANTY


def test_small_parts_are_not_refused_for_their_ratio() -> None:
    assert read_document("warranty.docx", zip_bomb_docx(documents.RATIO_GRACE_BYTES)).markdown == WARRANTY
    with pytest.raises(DocumentError, match="times its packed size"):
        read_document("warranty.docx", zip_bomb_docx(documents.RATIO_GRACE_BYTES + 1))


def _repacked(data: bytes, method: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", method) as archive:
        for entry in source.infolist():
            archive.writestr(entry.filename, source.read(entry))
    return out.getvalue()


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED], ids=["deflated", "stored"])
def test_the_cap_itself_is_read_and_a_byte_over_it_is_not(monkeypatch: pytest.MonkeyPatch, method: int) -> None:
    data = _repacked(zip_bomb_docx(0), method)
    total = _declared(data)
    monkeypatch.setattr(documents, "MAX_UNPACKED_BYTES", total)
    assert read_document("warranty.docx", data).markdown == WARRANTY
    monkeypatch.setattr(documents, "MAX_UNPACKED_BYTES", total - 1)
    with pytest.raises(DocumentError, match=r"unpacks to \d+ KB; a \.docx is read up to"):
        read_document("warranty.docx", data)
    # With the last part declaring nothing, the declared sizes pass and the bytes counted do not.
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        last = [entry for entry in archive.infolist() if entry.file_size][-1]
    lying = patch_zip_entry(data, last.filename, "file_size", 0)
    monkeypatch.setattr(documents, "MAX_UNPACKED_BYTES", total - last.file_size)
    with pytest.raises(DocumentError, match=r"unpacks to more than .* MB \(its parts declare \d+ KB\)"):
        read_document("warranty.docx", lying)
    # Under the cap, a part that is not the size its entry declares is refused all the same.
    monkeypatch.setattr(documents, "MAX_UNPACKED_BYTES", total)
    with pytest.raises(DocumentError) as caught:
        read_document("warranty.docx", lying)
    assert str(caught.value) == (f"cannot read the Word file: {last.filename} is not the size or checksum its zip "
                                 "entry declares")


@pytest.mark.parametrize(("field", "value", "message"), [
    pytest.param("crc", 0, "word/document.xml is not the size or checksum its zip entry declares", id="crc"),
    pytest.param("file_size", 10, "word/document.xml is not the size or checksum its zip entry declares",
                 id="smaller-than-it-is"),
    pytest.param("flags", 1, "word/document.xml is encrypted", id="encrypted"),
])
def test_a_doctored_zip_entry_is_refused(field: str, value: int, message: str) -> None:
    data = patch_zip_entry(zip_bomb_docx(0), "word/document.xml", field, value)
    with pytest.raises(DocumentError) as caught:
        read_document("warranty.docx", data)
    assert str(caught.value) == f"cannot read the Word file: {message}"


def test_a_long_docx_with_pictures_is_read_well_under_the_cap() -> None:
    # Long text (past MAX_CHARS) and 6 MiB of pictures (which hardly deflate): a large real .docx.
    rng = random.Random(15)
    words = ["call", "out", "fee", "hot", "water", "drains", "gas", "fitting", "leak", "repair", "after", "hours"]
    blocks: list[tuple[str, str] | list[list[str]]] = [("Title", "Acme operations manual")]
    for section in range(200):
        blocks.append(("Heading 1", f"Section {section + 1}"))
        blocks.extend(("Normal", " ".join(rng.choice(words) for _ in range(60)) + ".") for _ in range(8))
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(docx_bytes(blocks))) as source, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry in source.infolist():
            archive.writestr(entry, source.read(entry))
        for n in range(3):
            archive.writestr(f"word/media/image{n + 1}.jpeg", rng.randbytes(2 * MIB))
    data = out.getvalue()
    assert 6 * MIB < len(data) < documents.MAX_BYTES and _declared(data) < documents.MAX_UNPACKED_BYTES / 5
    document = read_document("manual.docx", data)
    assert document.truncated and document.title == "Acme operations manual"
    assert document.markdown.startswith("# Acme operations manual\n\n## Section 1\n\n")
