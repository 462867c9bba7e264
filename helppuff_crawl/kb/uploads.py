"""Files the owner uploaded from the dashboard, learned by a crawl (after its last page, kb/after_crawl.py).

The Worker keeps each upload in D1 (`file_uploads`, its bytes in base64 parts in `file_upload_parts`,
migrations/0015) and asks for a crawl job; the crawl puts the parts together, checks their length and
SHA-256, and hands the bytes to kb/files.py `upload_file`, the same reading and learning as
`helppuff knowledge upload` (a file that cannot be read, such as a scanned PDF with no text, is a
knowledge_files row "failed" with the reason). Then the upload and its parts go. Parts that do not add
up leave the upload "failed" with why, and nothing learned. A crawl stopped half-way leaves the upload
queued for the next one: `upload_file` of the same bytes again changes nothing.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging

from helppuff_crawl.embed.models import EmbedFn
from helppuff_crawl.kb import files
from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.kb.writer import KnowledgeWriter

logger = logging.getLogger(__name__)

INCOMPLETE = "the upload did not arrive whole: upload the file again"


async def _bytes(kb: KnowledgeBase, upload: dict[str, object]) -> bytes | None:
    parts = await kb.query("SELECT n, data FROM file_upload_parts WHERE upload_id = ? ORDER BY n", [upload["id"]])
    if [part["n"] for part in parts] != list(range(int(str(upload["parts"])))):
        return None
    try:
        data = b"".join(base64.b64decode(str(part["data"]), validate=True) for part in parts)
    except (binascii.Error, ValueError):
        return None
    if len(data) != upload["bytes"] or hashlib.sha256(data).hexdigest() != upload["sha256"]:
        return None
    return data


async def learn_uploads(kb: KnowledgeBase, writer: KnowledgeWriter, embed: EmbedFn, site: str) -> list[files.Upload]:
    """Learn the site's queued uploads, oldest first; what became of each."""
    done: list[files.Upload] = []
    for upload in await kb.query("SELECT id, name, bytes, sha256, parts FROM file_uploads WHERE site = ? "
                                 "AND state = 'queued' ORDER BY created_at, id", [site]):
        data = await _bytes(kb, upload)
        if data is None:
            logger.warning("Upload %s (%s) of %s: %s", upload["id"], upload["name"], site, INCOMPLETE)
            await kb.batch([("UPDATE file_uploads SET state = 'failed', reason = ? WHERE id = ?", [INCOMPLETE, upload["id"]]),
                            ("DELETE FROM file_upload_parts WHERE upload_id = ?", [upload["id"]])])
            done.append(files.Upload(str(upload["id"]), str(upload["name"]), "failed", INCOMPLETE))
            continue
        learned = await files.upload_file(kb, writer, embed, site, str(upload["name"]), data)
        logger.info("Upload %s of %s: %s %s", upload["name"], site, learned.status, learned.reason)
        await kb.batch([("DELETE FROM file_upload_parts WHERE upload_id = ?", [upload["id"]]),
                        ("DELETE FROM file_uploads WHERE id = ?", [upload["id"]])])
        done.append(learned)
    return done
