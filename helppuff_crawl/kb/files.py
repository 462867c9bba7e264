"""Documents the owner uploads: price lists, brochures, policies the site does not have as pages.

`helppuff knowledge upload FILE...` (or helppuff.json's knowledge.files, `helppuff config apply`)
reads each file (text/documents.py: PDF, Word .docx, Markdown, text, up to 10 MB, a .docx at most
100 MB unpacked; distilled to at most 300,000 characters of Markdown), keeps the Markdown in D1
`knowledge_files`, and learns it as a page of passages at `helppuff://file/<id>` (the contract's
files URL), searchable at once. A crawl rewrites the files' passages from the kept Markdown, so a
change of embedding model re-embeds them without a new upload.

Uploading a file of the same name again replaces it (only changed passages are embedded again);
the same bytes again change nothing. A file that cannot be read (a scan, a broken PDF) is
recorded as failed with the reason, and never takes away what an earlier upload of it taught.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.schema.contract import FILES_URL
from helppuff_crawl.embed.models import EmbedFn
from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.kb.learn import Passages, learn
from helppuff_crawl.kb.site_index import take_site
from helppuff_crawl.kb.writer import KnowledgeWriter
from helppuff_crawl.text.documents import Document, DocumentError, read_document
from helppuff_crawl.web.categories import categorize

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Upload:
    """What became of one uploaded file."""

    id: str
    name: str
    status: str  # "ok" | "unchanged" | "failed"
    reason: str = ""
    title: str = ""
    chunks: int = 0
    chars: int = 0
    truncated: bool = False


def file_url(file_id: str) -> str:
    return f"{FILES_URL}{file_id}"


def file_category(name: str, title: str) -> str:
    """The category the file's passages get, from its name and title ("price-list.pdf": pricing)."""
    slug = re.sub(r"[^a-z0-9]+", "-", PurePath(name).stem.lower()).strip("-") or "file"
    return categorize(f"https://file.invalid/{slug}", title)


async def _row(kb: KnowledgeBase, site: str, name: str) -> dict[str, Any] | None:
    return await kb.first("SELECT id, sha256, status, listed FROM knowledge_files WHERE site = ? AND name = ?",
                          [site, name])


async def upload_file(kb: KnowledgeBase, writer: KnowledgeWriter, embed: EmbedFn, site: str, name: str,
                      data: bytes, *, listed: bool = False) -> Upload:
    """Read `data` (a file named `name`) and make it searchable for `site`.

    `listed`: the file comes from helppuff.json's knowledge.files (`apply_listed_files`); a file
    once listed stays so until it is removed.
    """
    name = PurePath(name).name
    digest = hashlib.sha256(data).hexdigest()
    known = await _row(kb, site, name)
    if known and known["sha256"] == digest and known["status"] == "ok":
        if listed and not known["listed"]:
            await kb.query("UPDATE knowledge_files SET listed = 1 WHERE id = ?", [known["id"]])
        return Upload(known["id"], name, "unchanged")
    file_id = known["id"] if known else secrets.token_hex(4)
    now = iso(utc_now())
    try:
        document = read_document(name, data)
    except DocumentError as exc:
        reason = str(exc)
        if known is None or known["status"] == "failed":
            await _save(kb, site, file_id, name, data, digest, None, "failed", reason, now, listed)
        # Info, not a warning: the Upload says why, and every caller reports it (the CLI in one line).
        logger.info("Upload of %s for %s failed: %s", name, site, reason)
        return Upload(file_id, name, "failed", reason)
    await take_site(writer, site)
    # Passages first: a row says "ok" only once its passages are written.
    passages = Passages(site, file_url(file_id), document.title, file_category(name, document.title),
                        document.markdown)
    chunks = await learn(writer, embed, passages, unless_stored=True)
    await _save(kb, site, file_id, name, data, digest, document, "ok", "", now, listed)
    return Upload(file_id, name, "ok", "", document.title, chunks, len(document.markdown), document.truncated)


async def _save(kb: KnowledgeBase, site: str, file_id: str, name: str, data: bytes, digest: str,
                document: Document | None, status: str, reason: str, now: str, listed: bool) -> None:
    # A file that could not be read is recorded with its kind from its name and nothing learned.
    doc = document or Document("", "", PurePath(name).suffix.lower().lstrip("."), 0, False)
    await kb.query(
        "INSERT INTO knowledge_files (id, site, name, title, kind, bytes, sha256, pages, chars, truncated, status, "
        "reason, markdown, created_at, updated_at, listed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (site, name) DO UPDATE SET title = excluded.title, kind = excluded.kind, bytes = excluded.bytes, "
        "sha256 = excluded.sha256, pages = excluded.pages, chars = excluded.chars, truncated = excluded.truncated, "
        "status = excluded.status, reason = excluded.reason, markdown = excluded.markdown, "
        "updated_at = excluded.updated_at, listed = MAX(listed, excluded.listed)",
        [file_id, site, name, doc.title, doc.kind, len(data), digest, doc.pages, len(doc.markdown),
         int(doc.truncated), status, reason, doc.markdown, now, now, int(listed)],
    )


async def list_files(kb: KnowledgeBase, site: str) -> list[dict[str, Any]]:
    return await kb.query("SELECT id, name, title, kind, bytes, pages, chars, truncated, status, reason, listed, "
                          "created_at, updated_at FROM knowledge_files WHERE site = ? ORDER BY name", [site])


async def remove_file(kb: KnowledgeBase, writer: KnowledgeWriter, site: str, id_or_name: str) -> str:
    """Take a file and its passages out, by id or name; returns its name."""
    rows = await kb.query("SELECT id, name FROM knowledge_files WHERE site = ? AND (id = ? OR name = ?)",
                          [site, id_or_name, id_or_name])
    if not rows:
        raise ValueError(f"file {id_or_name!r}: no file of {site} has that id or name")
    await writer.remove_page(site, file_url(rows[0]["id"]))
    await kb.query("DELETE FROM knowledge_files WHERE site = ? AND id = ?", [site, rows[0]["id"]])
    return str(rows[0]["name"])


async def write_files(kb: KnowledgeBase, writer: KnowledgeWriter, embed: EmbedFn, site: str) -> int:
    """Rewrite every readable file's passages from its kept Markdown (after a crawl); returns chunks."""
    rows = await kb.query("SELECT id, name, title, markdown FROM knowledge_files WHERE site = ? AND status = 'ok' "
                          "ORDER BY name", [site])
    total = 0
    for row in rows:
        passages = Passages(site, file_url(row["id"]), row["title"], file_category(row["name"], row["title"]),
                            row["markdown"])
        total += await learn(writer, embed, passages, unless_stored=True)
    return total


async def apply_listed_files(kb: KnowledgeBase, writer: KnowledgeWriter, embed: EmbedFn, site: str,
                             paths: Sequence[Path]) -> tuple[list[Upload], list[str]]:
    """Make the site's listed files what `paths` says (helppuff.json's knowledge.files): each read
    and uploaded (unchanged ones cost nothing), and files listed before but not now removed.
    Files uploaded by hand are left alone. Returns the uploads and the names removed; a path that
    cannot be read is a failed Upload, and its earlier version stays. The paths are those
    config.helppuff_json.listed_files gives: inside the helppuff.json's folder, checked there."""
    uploads = []
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError as exc:
            uploads.append(Upload("", path.name, "failed", f"cannot read the file: {exc.strerror or exc}"))
            continue
        uploads.append(await upload_file(kb, writer, embed, site, path.name, data, listed=True))
    wanted = {path.name for path in paths}
    removed = []
    for row in await list_files(kb, site):
        if row["listed"] and row["name"] not in wanted:
            removed.append(await remove_file(kb, writer, site, row["id"]))
    return uploads, removed
