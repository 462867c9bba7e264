"""Files uploaded from the dashboard, learned by a crawl (helppuff_crawl/kb/uploads.py), on the local
knowledge base (real SQLite, the bundled embedding model): the uploads written as the Worker writes them
(worker/src/admin/files.ts: a row and base64 parts of 750,000 bytes), then a targeted crawl of the
start page, as the job the dashboard asks for runs it. A price list is learned (its text in passages),
a scan is a failed file with the reason, parts that do not add up leave the upload failed with why,
and the bytes are gone afterwards."""

from __future__ import annotations

import base64
import hashlib
import sqlite3
from pathlib import Path

from tests.conftest import kb_rows, run_helppuff
from tests.docgen import pdf_bytes
from tests.test_cli_files import PRICE_LIST, SCAN

PART = 750_000


def _keep(db: sqlite3.Connection, upload_id: str, name: str, data: bytes, *, drop_part: int | None = None) -> None:
    parts = [data[i:i + PART] for i in range(0, len(data), PART)]
    db.execute("INSERT INTO file_uploads (id, site, name, kind, bytes, sha256, parts, state, created_at) "
               "VALUES (?, 'acme', ?, 'pdf', ?, ?, ?, 'queued', '2026-12-04T10:00:00Z')",
               [upload_id, name, len(data), hashlib.sha256(data).hexdigest(), len(parts)])
    for n, part in enumerate(parts):
        if n != drop_part:
            db.execute("INSERT INTO file_upload_parts (upload_id, n, data) VALUES (?, ?, ?)",
                       [upload_id, n, base64.b64encode(part).decode()])


def test_a_crawl_learns_the_files_uploaded_from_the_dashboard(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site = serve_site("acme-plumbing")
    first = run_helppuff(tmp_path, "crawl", site.url, "--site", "acme", "--render-js", "never")
    assert first.returncode == 0, first.stderr
    # A PDF of more than one part: the price list's pages, padded with a long appendix.
    big = pdf_bytes([*[["Appendix", f"Line {i} of the warranty terms: " + "x" * 60] for i in range(2)]], title="Warranty")
    padded = big + b"\n%" + b"0" * (PART + 10) + b"\n"  # comment bytes after %%EOF: still the same PDF
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as db:
        _keep(db, "u0000001", "price-list-2026.pdf", PRICE_LIST)
        _keep(db, "u0000002", "brochure-scan.pdf", SCAN)
        _keep(db, "u0000003", "warranty.pdf", padded)
        _keep(db, "u0000004", "half.pdf", padded, drop_part=1)
    db.close()
    crawl = run_helppuff(tmp_path, "crawl", site.url, "--site", "acme", "--only", site.url, "--render-js", "never")
    assert crawl.returncode == 0, crawl.stderr
    files = {row["name"]: row for row in kb_rows(tmp_path / "kb", "SELECT name, status, reason, title FROM knowledge_files")}
    assert files["price-list-2026.pdf"]["status"] == "ok" and files["warranty.pdf"]["status"] == "ok"
    assert files["brochure-scan.pdf"]["status"] == "failed" and "scanned PDF" in str(files["brochure-scan.pdf"]["reason"])
    text = "\n".join(str(row["text"]) for row in kb_rows(tmp_path / "kb", "SELECT text FROM chunks WHERE url LIKE 'helppuff://file/%'"))
    assert "Weekday call-out fee: $99" in text and "warranty terms" in text
    left = kb_rows(tmp_path / "kb", "SELECT name, state, reason FROM file_uploads")
    assert left == [{"name": "half.pdf", "state": "failed", "reason": "the upload did not arrive whole: upload the file again"}]
    assert kb_rows(tmp_path / "kb", "SELECT COUNT(*) AS n FROM file_upload_parts") == [{"n": 0}]
