"""Uploaded documents through `helppuff knowledge upload|files|remove-file`, as an operator runs
them, on the local knowledge base (real SQLite, the bundled embedding model). The files are built
in the test (tests/docgen.py), never downloaded."""

from __future__ import annotations

import json
import re
from pathlib import Path

from helppuff_crawl.text.documents import MAX_UNPACKED_BYTES
from tests.conftest import kb_rows, run_helppuff
from tests.docgen import BOMB_PART, docx_bytes, patch_zip_entry, pdf_bytes, zip_bomb_docx

HEADER = "Acme Plumbing — Price list 2026"
PRICE_LIST = pdf_bytes([
    [HEADER, "Call-out and labour", "Weekday call-out fee: $99, which covers the first",
     "30 minutes on site.", "After-hours call-out: $180.", "Page 1 of 3"],
    [HEADER, "Hot water", "Hot water service: $160 for gas or elec-", "tric units.", "Page 2 of 3"],
    [HEADER, "Drains", "Drain jetting from $250 per hour.", "Page 3 of 3"],
], title="Acme price list 2026")
SCAN = pdf_bytes([[], []])  # pages with no text: pictures of text


def _upload(tmp_path: Path, name: str, data: bytes) -> tuple[int, str]:
    path = tmp_path / name
    path.write_bytes(data)
    result = run_helppuff(tmp_path, "knowledge", "upload", str(path), "--site", "acme")
    return result.returncode, result.stdout + result.stderr


def _passages(tmp_path: Path) -> list[dict[str, object]]:
    return kb_rows(tmp_path / "kb", "SELECT c.url, c.title, c.category, c.text, v.state FROM chunks c "
                                    "LEFT JOIN vectors v ON v.id = c.id WHERE c.url LIKE 'helppuff://file/%' "
                                    "ORDER BY c.url, c.seq")


def _files(tmp_path: Path) -> dict[str, dict[str, object]]:
    listed = run_helppuff(tmp_path, "knowledge", "files", "--site", "acme", "--json")
    assert listed.returncode == 0, listed.stderr
    return {row["name"]: row for row in json.loads(listed.stdout)}


def test_a_price_list_pdf_is_learned_without_its_page_furniture(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, out = _upload(tmp_path, "price-list-2026.pdf", PRICE_LIST)
    assert code == 0, out
    assert out.startswith('price-list-2026.pdf: learned as "Acme price list 2026", ')
    passages = _passages(tmp_path)
    text = "\n".join(str(p["text"]) for p in passages)
    assert "Weekday call-out fee: $99, which covers the first 30 minutes on site." in text  # wrapped line joined
    assert "gas or electric units" in text  # hyphenation undone
    assert HEADER not in text and "Page 2 of 3" not in text  # running header and page numbers dropped
    assert {(p["title"], p["category"], p["state"]) for p in passages} == {("Acme price list 2026", "pricing", "live")}
    row = _files(tmp_path)["price-list-2026.pdf"]
    assert (row["status"], row["kind"], row["pages"], row["truncated"]) == ("ok", "pdf", 3, 0)
    # The same bytes again: nothing to do. A crawl keeps the file's passages.
    assert _upload(tmp_path, "price-list-2026.pdf", PRICE_LIST)[1].startswith("price-list-2026.pdf: unchanged")
    crawl = run_helppuff(tmp_path, "crawl", serve_site("acme-plumbing").url, "--site", "acme", "--render-js", "never")
    assert crawl.returncode == 0, crawl.stderr
    assert _passages(tmp_path) == passages
    status = json.loads(run_helppuff(tmp_path, "knowledge", "status", "--site", "acme", "--json").stdout)["sites"][0]
    assert status["consistency"]["consistent"]
    removed = run_helppuff(tmp_path, "knowledge", "remove-file", "price-list-2026.pdf", "--site", "acme")
    assert removed.returncode == 0 and "file price-list-2026.pdf removed" in removed.stdout
    assert _passages(tmp_path) == [] and _files(tmp_path) == {}


def test_an_unreadable_file_is_recorded_failed_and_loses_nothing(tmp_path: Path) -> None:
    assert _upload(tmp_path, "price-list.pdf", PRICE_LIST)[0] == 0
    before = _passages(tmp_path)
    # A new version that cannot be read leaves the learned one as it was.
    code, out = _upload(tmp_path, "price-list.pdf", b"%PDF-1.4 this is not really a PDF")
    assert code == 1 and "price-list.pdf: not learned: cannot read the PDF" in out
    assert _passages(tmp_path) == before and _files(tmp_path)["price-list.pdf"]["status"] == "ok"
    # A scan has no text: recorded as failed, with the reason, and no passages.
    code, out = _upload(tmp_path, "brochure-scan.pdf", SCAN)
    assert code == 1 and "brochure-scan.pdf: not learned: no text to read: a scanned PDF" in out
    scan = _files(tmp_path)["brochure-scan.pdf"]
    assert scan["status"] == "failed" and "scanned PDF" in str(scan["reason"])
    assert len(_passages(tmp_path)) == len(before)
    listing = run_helppuff(tmp_path, "knowledge", "files", "--site", "acme").stdout
    assert "brochure-scan.pdf  (pdf, " in listing and "failed: no text to read" in listing


def test_word_markdown_and_text_files_in_one_upload(tmp_path: Path) -> None:
    docx = docx_bytes([("Title", "Warranty terms"), ("Heading 1", "Workmanship"),
                       ("Normal", "All workmanship is guaranteed for 12 months."),
                       ("List Bullet", "Parts carry the maker's warranty.")])
    files = {"warranty.docx": docx, "parking.md": b"# Parking\n\nTwo free spaces behind the workshop.\n",
             "notes.txt": b"Gift vouchers\nVouchers are sold at the front counter.\n"}
    paths = []
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    result = run_helppuff(tmp_path, "knowledge", "upload", *paths, "--site", "acme")
    assert result.returncode == 0, result.stdout + result.stderr
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == list(files)
    text = "\n".join(str(p["text"]) for p in _passages(tmp_path))
    assert "guaranteed for 12 months" in text and "Two free spaces" in text and "sold at the front counter" in text
    assert {name: row["kind"] for name, row in _files(tmp_path).items()} == {
        "warranty.docx": "docx", "parking.md": "markdown", "notes.txt": "text"}


def test_bad_uploads_are_clear_errors(tmp_path: Path) -> None:
    missing = run_helppuff(tmp_path, "knowledge", "upload", str(tmp_path / "nope.pdf"), "--site", "acme")
    assert missing.returncode == 2 and "nope.pdf: no such file" in missing.stderr
    code, out = _upload(tmp_path, "prices.xlsx", b"PK\x03\x04")
    assert code == 1 and "prices.xlsx: not learned: unsupported file type .xlsx" in out
    unknown = run_helppuff(tmp_path, "knowledge", "remove-file", "nothing.pdf", "--site", "acme")
    assert unknown.returncode == 2 and "no file of acme has that id or name" in unknown.stderr


def test_a_zip_bomb_docx_is_one_line_and_takes_nothing_away(tmp_path: Path) -> None:
    good = docx_bytes([("Title", "Warranty terms"), ("Normal", "All workmanship is guaranteed for 12 months.")])
    assert _upload(tmp_path, "warranty.docx", good)[0] == 0
    before = _passages(tmp_path)
    bomb = zip_bomb_docx(MAX_UNPACKED_BYTES + 1024 * 1024)  # about 140 KB
    cap = "a .docx is read up to 100 MB unpacked"
    for data, reason in [
        (bomb, rf"the Word file \(\d+ KB\) unpacks to 10[12]\.\d MB; {cap}"),
        (patch_zip_entry(bomb, BOMB_PART, "file_size", 1000),
         rf"the Word file \(\d+ KB\) unpacks to more than 100 MB \(its parts declare \d+ KB\); {cap}"),
    ]:
        path = tmp_path / "warranty.docx"
        path.write_bytes(data)
        result = run_helppuff(tmp_path, "knowledge", "upload", str(path), "--site", "acme")
        assert result.returncode == 1
        assert re.fullmatch(rf"warranty\.docx: not learned: {reason}\n", result.stdout), result.stdout
        assert result.stderr == ""  # no traceback, no second telling
        # The version learned before stays as it was.
        assert _passages(tmp_path) == before and _files(tmp_path)["warranty.docx"]["status"] == "ok"
    # A new file that is a bomb is recorded as failed with the reason, and nothing of it is learned.
    code, out = _upload(tmp_path, "manual.docx", bomb)
    assert code == 1 and out.startswith("manual.docx: not learned: the Word file (")
    row = _files(tmp_path)["manual.docx"]
    assert (row["status"], row["chars"]) == ("failed", 0)
    assert re.fullmatch(rf"the Word file .*; {cap}", str(row["reason"]))
    assert _passages(tmp_path) == before
