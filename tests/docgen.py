"""Build test documents in memory: small PDFs written by hand, and .docx files through python-docx.

`pdf_bytes(pages, title=...)` writes a PDF 1.4 file: one Helvetica font (WinAnsi encoding, so "—"
and "•" survive), each page a content stream with one text object per line
(`BT /F1 11 Tf x y Td (text) Tj ET`), an optional /Info /Title, and an xref table with the real
byte offsets. A page given as an empty list gets an empty content stream: a page of pictures of
text, as a scanner makes, has no text objects either.

`zip_bomb_docx(unpacked, ...)` is a real .docx with one more part of `unpacked` zero bytes
(deflate packs them about 1,000 to 1, bzip2 far more), written with zipfile a megabyte at a time;
`patch_zip_entry` then changes what an entry declares (its unpacked size, CRC-32 or flags) in
both its local header and the central directory, which zipfile has no way to write: a zip whose
declared sizes lie.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Sequence

from docx import Document as new_docx

_TOP = 800  # y of a page's first line, in points (A4 is 842 high)
_LEADING = 14  # points between lines


def _pdf_string(text: str) -> bytes:
    """A PDF literal string in WinAnsi (cp1252) bytes, with its delimiters escaped."""
    raw = text.encode("cp1252")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _content(lines: Sequence[str]) -> bytes:
    ops = [b"BT /F1 11 Tf 72 %d Td %s Tj ET" % (_TOP - i * _LEADING, _pdf_string(line))
           for i, line in enumerate(lines)]
    return b"\n".join(ops)


def pdf_bytes(pages: Sequence[Sequence[str]], title: str | None = None) -> bytes:
    """A PDF whose page n shows `pages[n]`, one string per line, top to bottom."""
    count = len(pages)
    # Objects: 1 catalog, 2 page tree, 3 font, then a page and its content per page, then /Info.
    page_ids = [4 + 2 * n for n in range(count)]
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % i for i in page_ids), count),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for page_id, lines in zip(page_ids, pages, strict=True):
        stream = _content(lines)
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
                       b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (page_id + 1))
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    info = b""
    if title is not None:
        objects.append(b"<< /Title %s >>" % _pdf_string(title))
        info = b" /Info %d 0 R" % len(objects)
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, info, xref)
    return bytes(out)


def encrypted_pdf_bytes(data: bytes, user_password: str, owner_password: str = "owner") -> bytes:
    """`data` (a PDF) encrypted with AES-256; an empty user password opens without asking."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx_bytes(blocks: Sequence[tuple[str, str] | list[list[str]]], title: str = "") -> bytes:
    """A .docx of `blocks` in order: (style name, text) paragraphs, or a table as rows of cells."""
    document = new_docx()
    document.core_properties.title = title
    for block in blocks:
        if isinstance(block, tuple):
            style, text = block
            document.add_paragraph(text, style=style)
        else:
            table = document.add_table(rows=len(block), cols=max(len(row) for row in block))
            for r, row in enumerate(block):
                for c, text in enumerate(row):
                    table.cell(r, c).text = text
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


BOMB_PART = "word/media/image1.png"
_MIB = 1024 * 1024


def zip_bomb_docx(unpacked: int, *, part: str = BOMB_PART, compress_type: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A .docx that reads "Warranty terms", with `part` added: `unpacked` zero bytes, packed with
    `compress_type` at its strongest level."""
    out = io.BytesIO()
    base = docx_bytes([("Title", "Warranty terms"), ("Normal", "All workmanship is guaranteed for 12 months.")])
    with zipfile.ZipFile(io.BytesIO(base)) as source, \
            zipfile.ZipFile(out, "w", compress_type, compresslevel=9) as archive:
        for entry in source.infolist():
            archive.writestr(entry, source.read(entry))
        with archive.open(part, "w") as stream:
            left = unpacked
            while left > 0:
                stream.write(bytes(min(left, _MIB)))
                left -= _MIB
    return out.getvalue()


# Where a zip entry's fields sit: (offset in the local header, offset in the central directory record).
_ENTRY_FIELDS = {"flags": (6, 8, "<H"), "crc": (14, 16, "<I"), "file_size": (22, 24, "<I")}


def patch_zip_entry(data: bytes, name: str, field: str, value: int) -> bytes:
    """`data` (a zip) with the entry `name` declaring `value` as its `field` ("file_size", "crc" or
    "flags") in its local header and in the central directory; the packed bytes are untouched."""
    local_at, central_at, form = _ENTRY_FIELDS[field]
    out = bytearray(data)
    end = data.rindex(b"PK\x05\x06")  # the end of central directory record
    size, offset = struct.unpack_from("<II", data, end + 12)
    at = offset
    while at < offset + size:
        if data[at: at + 4] != b"PK\x01\x02":
            raise ValueError("not a central directory record")
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", data, at + 28)
        header = struct.unpack_from("<I", data, at + 42)[0]
        if data[at + 46: at + 46 + name_length] == name.encode():
            struct.pack_into(form, out, at + central_at, value)
            struct.pack_into(form, out, header + local_at, value)
            return bytes(out)
        at += 46 + name_length + extra_length + comment_length
    raise KeyError(name)
