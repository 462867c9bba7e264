"""Sitemap parsing and the bounded walk through nested sitemap indexes.

Pure functions and one small state class; no Scrapy import. The site spider decides the seeds (the
robots.txt ``Sitemap:`` lines, else :data:`DEFAULT_SITEMAP_PATHS` on the site's origin), fetches what
:meth:`SitemapWalk.next_url` names and feeds each body back through :meth:`SitemapWalk.add`.

Hostile input is bounded:

- XML is read with lxml's incremental parser in recover mode, with entity resolution, network access,
  comments, processing instructions and huge trees all off: an entity bomb or an external entity
  (``SYSTEM "file:///etc/passwd"``) is never expanded or read.
- Gzip is recognised by its magic bytes (``1f 8b``), whatever the name or headers say, and is
  decompressed in steps up to ``max_size`` bytes (10 MiB). A bigger document is cut at the cap, the part
  before the cap is parsed, and the document carries the error "decompressed size over 10 MiB".
- At most ``MAX_ENTRIES`` entries are read from one document, and a walk fetches at most
  ``max_sitemaps`` sitemaps, collects at most ``max_urls`` page URLs and never fetches a URL twice.
- Garbage gives a document of kind ``"invalid"`` with a one-line reason; nothing here raises on input.
"""

from __future__ import annotations

import logging
import re
import zlib
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any
from urllib.parse import SplitResult, urljoin, urlsplit

import lxml.etree

logger = logging.getLogger(__name__)

MAX_SITEMAPS = 25
MAX_URLS = 1000
MAX_DECOMPRESSED = 10 * 1024 * 1024
# The sitemap protocol's own limits: 50,000 entries per file and URLs under 2,048 characters.
MAX_ENTRIES = 50_000
MAX_URL_LENGTH = 2048
DEFAULT_SITEMAP_PATHS = ("/sitemap.xml", "/sitemap_index.xml", "/wp-sitemap.xml")

_GZIP_MAGIC = b"\x1f\x8b"
# A .xml.gz served with Content-Encoding: gzip and not decoded on the way is gzip inside gzip.
_MAX_GZIP_LAYERS = 2
_HTTP_URL = re.compile(r"https?://\S+\Z", re.IGNORECASE)
# Child sitemaps named for posts are fetched after the others: blog posts matter least to a
# small business's knowledge base, and the sitemap and URL limits should go to pages first.
_POST_WORDS = frozenset({"post", "posts", "blog", "blogs", "news", "article", "articles"})


@dataclass(frozen=True)
class SitemapEntry:
    """One ``<url>`` or ``<sitemap>`` element."""

    loc: str  # absolute URL, whitespace stripped
    lastmod: str | None = None  # as written (W3C datetime expected), None when absent or empty
    alternates: tuple[str, ...] = ()  # absolute hrefs of <xhtml:link> children, in document order


@dataclass
class SitemapDocument:
    """A parsed sitemap body."""

    kind: str  # "urlset", "sitemapindex", or "invalid"
    entries: list[SitemapEntry] = field(default_factory=list)
    error: str = ""  # why invalid or partial, one line; "" when the whole document was read


def decode_body(
    body: bytes,
    url: str = "",
    headers: Mapping[str, Any] | None = None,
    max_size: int = MAX_DECOMPRESSED,
) -> tuple[bytes, str]:
    """Return ``(xml bytes, error)``: ``body`` gunzipped when it is gzip, never more than ``max_size``.

    The gzip magic bytes decide. A ``.gz`` name or a gzip Content-Type/Content-Encoding without them
    means the body was already decoded on the way (Scrapy's HttpCompressionMiddleware, a server that
    decodes for us), so it is returned as it is. On a size overrun the first ``max_size`` bytes come
    back with the error ``"decompressed size over 10 MiB"`` (``"size over ..."`` for a plain body).
    """
    if body[:2] != _GZIP_MAGIC:
        if _says_gzip(url, headers):
            logger.debug("Sitemap %s is named or labelled gzip but is not gzip; read as is", url)
        if len(body) > max_size:
            return body[:max_size], f"size over {_mib(max_size)}"
        return body, ""
    data = body
    for _ in range(_MAX_GZIP_LAYERS):
        data, error = _gunzip(data, max_size)
        if error or data[:2] != _GZIP_MAGIC:
            return data, error
    return data, "gzip nested too deep"


def parse_sitemap(
    body: bytes,
    url: str = "",
    headers: Mapping[str, Any] | None = None,
    max_size: int = MAX_DECOMPRESSED,
) -> SitemapDocument:
    """Parse a sitemap or sitemap index (plain, gzip, or one URL per line); never raises.

    Locs and alternates are made absolute against ``url``. Only the elements that match the root are
    read: ``<url>`` in a urlset, ``<sitemap>`` in a sitemapindex; an element without ``<loc>`` is
    skipped, as is a loc longer than ``MAX_URL_LENGTH``.
    """
    xml, error = decode_body(body, url, headers, max_size)
    head = xml.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head:
        return SitemapDocument("invalid", [], error or "empty")
    if not head.startswith(b"<"):
        entries = _parse_text(head, url)
        if entries:
            return SitemapDocument("urlset", entries, error)
        return SitemapDocument("invalid", [], error or "not XML")
    doc = _parse_xml(xml, url)
    if error:
        doc.error = error
    return doc


def is_post_sitemap(url: str) -> bool:
    """True when a sitemap URL's path or query names posts, a blog or news (fetched last)."""
    parts = _split(url)
    if parts is None:
        return False
    # WordPress core lists every post type as wp-sitemap-posts-<type>-N.xml: only <type> counts.
    text = f"{parts.path}?{parts.query}".lower().replace("wp-sitemap-posts-", "wp-sitemap-")
    return not _POST_WORDS.isdisjoint(re.split(r"[^a-z0-9]+", text))


class SitemapWalk:
    """Which sitemap to fetch next, and the page URLs found; bounded and cycle-free.

    Protocol: call :meth:`next_url` until it returns None and fetch each URL (concurrently if you
    like); feed every answer, or its failure, to :meth:`add`; then call :meth:`next_url` again. The walk
    is over when :meth:`next_url` returns None and :attr:`pending` is empty. Post sitemaps wait until
    no other sitemap is queued. Sitemaps left queued when a limit is reached go to :attr:`problems`.
    A URL the caller decides not to fetch after all is fed to :meth:`add` with ``None`` and a reason,
    so that :attr:`pending` empties.
    """

    def __init__(
        self,
        seeds: Sequence[str],
        max_sitemaps: int = MAX_SITEMAPS,
        max_urls: int = MAX_URLS,
        *,
        alternates: bool = False,
    ) -> None:
        self.max_sitemaps = max_sitemaps
        self.max_urls = max_urls
        self.alternates = alternates  # also collect <xhtml:link> alternates as page URLs
        self.fetched: list[str] = []  # sitemap URLs fed to add(), failures included, in order
        self.page_urls: list[str] = []  # absolute page URLs as found, deduplicated
        self.lastmod: dict[str, str] = {}  # page URL -> lastmod, when given
        self.problems: list[tuple[str, str]] = []  # (sitemap URL, reason)
        self.offsite: list[str] = []  # child sitemaps on another host than the index listing them
        self.pending: set[str] = set()  # handed out by next_url(), not yet fed to add()
        self._issued = 0
        self._queues: tuple[deque[str], deque[str]] = (deque(), deque())  # (others, posts)
        self._seen: set[str] = set()
        self._page_set: set[str] = set()
        self._cycles: set[str] = set()
        for seed in seeds:
            self._enqueue(seed, parent="")

    def next_url(self) -> str | None:
        """The next sitemap to fetch, or None when none is queued or a limit is reached."""
        if len(self.page_urls) >= self.max_urls:
            self._drop_queued(f"URL limit ({self.max_urls}) reached")
            return None
        if self._issued >= self.max_sitemaps:
            self._drop_queued(f"sitemap limit ({self.max_sitemaps}) reached")
            return None
        for queue in self._queues:
            if queue:
                url = queue.popleft()
                self._issued += 1
                self.pending.add(url)
                return url
        return None

    def add(
        self,
        url: str,
        body: bytes | None,
        headers: Mapping[str, Any] | None = None,
        error: str = "",
        *,
        base_url: str = "",
    ) -> SitemapDocument | None:
        """Record one fetched sitemap; queue an index's children, collect a urlset's page URLs.

        ``body`` None means the fetch failed: ``error`` says why (``"404"``, ``"timeout"``...) and
        None is returned. ``base_url`` is the URL after redirects, used for relative locs.
        """
        url = url.partition("#")[0]
        self.pending.discard(url)
        self._seen.add(url)
        self.fetched.append(url)
        if body is None:
            self.problems.append((url, error or "fetch failed"))
            return None
        base = base_url.partition("#")[0] or url
        if base != url:
            # Redirected (Yoast sends /sitemap.xml to /sitemap_index.xml): the target is read now.
            self._seen.add(base)
            for queue in self._queues:
                if base in queue:
                    queue.remove(base)
        doc = parse_sitemap(body, base, headers)
        if doc.error:
            self.problems.append((url, doc.error))
        if doc.kind == "sitemapindex":
            for entry in doc.entries:
                self._enqueue(entry.loc, parent=base)
        elif doc.kind == "urlset":
            self._collect(url, doc.entries)
        logger.debug("Sitemap %s: %s, %d entries", url, doc.kind, len(doc.entries))
        return doc

    def _enqueue(self, url: str, parent: str) -> None:
        url = url.strip().partition("#")[0]
        if not _is_http(url):
            self.problems.append((url, "not an http(s) URL"))
            return
        if url in self._seen:
            if url not in self._cycles:  # one record per URL, however often it is listed
                self._cycles.add(url)
                self.problems.append((url, "listed again (cycle or duplicate); not fetched twice"))
            return
        self._seen.add(url)
        if parent and _site_host(url) != _site_host(parent):
            self.offsite.append(url)
        self._queues[1 if is_post_sitemap(url) else 0].append(url)

    def _collect(self, sitemap_url: str, entries: list[SitemapEntry]) -> None:
        over = 0
        for entry in entries:
            locs = (entry.loc, *entry.alternates) if self.alternates else (entry.loc,)
            for loc in locs:
                if loc in self._page_set or not _is_http(loc):
                    continue
                if len(self.page_urls) >= self.max_urls:
                    over += 1
                    continue
                self._page_set.add(loc)
                self.page_urls.append(loc)
                if entry.lastmod and loc == entry.loc:
                    self.lastmod[loc] = entry.lastmod
        if over:
            self.problems.append(
                (sitemap_url, f"URL limit ({self.max_urls}) reached; {over} more URLs ignored")
            )

    def _drop_queued(self, reason: str) -> None:
        for queue in self._queues:
            while queue:
                self.problems.append((queue.popleft(), reason))


_RESOURCE_LIMIT = getattr(lxml.etree.ErrorTypes, "ERR_RESOURCE_LIMIT", None)


def _parse_xml(xml: bytes, url: str) -> SitemapDocument:
    parser = lxml.etree.iterparse(
        BytesIO(xml),
        events=("start", "end"),
        recover=True,
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        remove_blank_text=True,
        collect_ids=False,
    )
    kind = ""
    item = ""
    entries: list[SitemapEntry] = []
    depth = 0
    closed = False
    try:
        for event, elem in parser:
            if event == "start":
                depth += 1
                if depth == 1:
                    root = _local_name(elem)
                    if root not in ("urlset", "sitemapindex"):
                        return SitemapDocument("invalid", [], f"not a sitemap: <{root or '?'}>")
                    kind, item = root, ("url" if root == "urlset" else "sitemap")
                continue
            depth -= 1
            if depth == 0:
                closed = True
            elif depth == 1:
                if _local_name(elem) == item and (entry := _entry(elem, url)):
                    entries.append(entry)
                    if len(entries) >= MAX_ENTRIES:
                        return SitemapDocument(kind, entries, f"over {MAX_ENTRIES} entries; the rest ignored")
                _forget(elem)
    except lxml.etree.LxmlError as exc:
        if not kind:
            return SitemapDocument("invalid", [], "not XML")
        return SitemapDocument(kind, entries, f"XML parse stopped: {_one_line(str(exc))}")
    if not kind:
        return SitemapDocument("invalid", [], "not XML")
    error = ""
    # A resource limit (the entity amplification guard: "billion laughs") stops the parse; in
    # recover mode lxml 6.2 then closes the open elements instead of raising, so the document
    # looks whole and the rest of it is silently gone. Say it stopped.
    stopped = next((e for e in parser.error_log if e.type == _RESOURCE_LIMIT), None) if _RESOURCE_LIMIT else None
    if stopped is not None or not closed:
        last = stopped or parser.error_log.last_error
        error = f"XML parse stopped: {_one_line(last.message if last else 'document cut short')}"
    return SitemapDocument(kind, entries, error)


def _entry(elem: lxml.etree._Element, base: str) -> SitemapEntry | None:
    loc: str | None = None
    lastmod: str | None = None
    alternates: list[str] = []
    for child in elem:
        name = _local_name(child)
        if name == "loc" and loc is None:
            loc = (child.text or "").strip()
        elif name == "lastmod" and lastmod is None:
            lastmod = (child.text or "").strip() or None
        elif name == "link" and (href := (child.get("href") or "").strip()):
            if len(href) <= MAX_URL_LENGTH and (absolute := _absolute(base, href)):
                alternates.append(absolute)
    if not loc or len(loc) > MAX_URL_LENGTH or not (absolute := _absolute(base, loc)):
        return None
    return SitemapEntry(absolute, lastmod, tuple(alternates))


def _forget(elem: lxml.etree._Element) -> None:
    """Free a read element and its earlier siblings, so memory stays flat on big documents."""
    elem.clear()
    parent = elem.getparent()
    if parent is not None:
        while elem.getprevious() is not None:
            del parent[0]


def _parse_text(text: bytes, url: str) -> list[SitemapEntry]:
    """A text sitemap: one absolute http(s) URL per line, nothing else; [] when it is not one."""
    entries: list[SitemapEntry] = []
    for raw in text.splitlines():
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            continue
        if not _HTTP_URL.match(line):
            return []
        if len(entries) < MAX_ENTRIES and len(line) <= MAX_URL_LENGTH and _split(line):
            entries.append(SitemapEntry(line))
    return entries


def _gunzip(data: bytes, max_size: int) -> tuple[bytes, str]:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    todo = data
    try:
        while True:
            chunk = inflater.decompress(todo, max_size + 1 - len(out))
            out += chunk
            if len(out) > max_size:
                return bytes(out[:max_size]), f"decompressed size over {_mib(max_size)}"
            todo = inflater.unconsumed_tail
            if inflater.eof:
                return bytes(out), ""
            if not todo and not chunk:
                return bytes(out), "gzip data cut short"
    except zlib.error as exc:
        return bytes(out), f"bad gzip data: {exc}"


def _says_gzip(url: str, headers: Mapping[str, Any] | None) -> bool:
    parts = _split(url)
    if parts and parts.path.lower().endswith(".gz"):
        return True
    for key, value in (headers or {}).items():
        name = (key.decode("latin-1") if isinstance(key, bytes) else str(key)).lower()
        if name in ("content-type", "content-encoding") and "gzip" in _header_text(value).lower():
            return True
    return False


def _header_text(value: Any) -> str:
    """A header value as text; Scrapy's Headers hold lists of bytes."""
    if isinstance(value, (list, tuple)):
        value = value[0] if value else ""
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def _local_name(elem: lxml.etree._Element) -> str:
    tag = elem.tag
    if not isinstance(tag, str):  # entity references and other non-element nodes
        return ""
    return tag.rpartition("}")[2]


def _site_host(url: str) -> str:
    parts = _split(url)
    host = (parts.hostname or "") if parts else ""
    return host.lower().removeprefix("www.")


def _split(url: str) -> SplitResult | None:
    try:
        return urlsplit(url)
    except ValueError:  # "http://[::1" and other unparsable netlocs
        return None


def _absolute(base: str, url: str) -> str | None:
    """``url`` resolved against ``base``; None when either cannot be parsed."""
    try:
        absolute = urljoin(base, url)
        urlsplit(absolute)
    except ValueError:
        return None
    return absolute


def _is_http(url: str) -> bool:
    return url[:8].lower().startswith(("http://", "https://")) and _split(url) is not None


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB"


def _one_line(text: str) -> str:
    return " ".join(text.split())[:200]
