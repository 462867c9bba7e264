"""URL normalisation and the rules that keep a URL out of the page list. Pure: no Scrapy import.

`normalize_url` gives each page one spelling, so the same page reached from a link, a sitemap and a
redirect is one row. The canonical form:

- absolute (joined to `base`), `http`/`https` only; anything else (`mailto:`, `tel:`,
  `javascript:`, a bare path without a base, a host with spaces, a port outside 0-65535) is None;
- whitespace around the URL and tabs/newlines inside it are removed, and `\\` before the query
  counts as `/` (both as browsers do);
- scheme and host lower case, IDN hosts in punycode (UTS #46, as browsers encode them), a trailing
  dot on the host removed, the default port (`:80` for http, `:443` for https) dropped, user
  names and passwords dropped (they are no part of a page's identity and must never be stored);
- percent-encoding canonical (RFC 3986 6.2.2): escapes of unreserved characters decoded, other
  escapes upper case, characters that need escaping escaped as UTF-8. Reserved escapes such as
  `%2F` and `%26` stay as they are, so the meaning never changes;
- dot segments resolved; no trailing slash, the root included: `https://a.com/` and
  `https://a.com` are both `https://a.com`; repeated inner slashes are kept;
- a folder's index document is the folder: a last path segment named in `INDEX_DOCUMENTS`
  (`index.html`, `index.htm`, `index.php`, `default.aspx`, ..., compared case-insensitively) is
  dropped, so `https://a.com/team/index.html` is `https://a.com/team` and `https://a.com/index.php`
  is `https://a.com` (the query stays: `/index.php?id=2` is `https://a.com?id=2`). Web servers
  answer a folder's URL with that document (Apache's and nginx's DirectoryIndex, IIS's default
  document, every static host), and a site links to both spellings, so without this one page would
  be learned twice. Only the last segment: `/index.html/x` and `/index-of-prices.html` are kept;
- no fragment; tracking parameters removed (`TRACKING_PARAMS`, `TRACKING_PREFIXES`, names
  compared case-insensitively); the other parameters sorted by name, keeping the order of values
  of a repeated name, so a link that lists them in another order is the same page (Scrapy's
  request fingerprint sorts too), while `?color=red&color=blue` keeps its meaning; an empty
  query (`?`, `?&`) removed.

The form is an identity key. Servers that redirect `/services` to `/services/` still answer it:
the redirect is followed and the final URL is normalised again. The form keeps the host's www. and
the scheme, as the site spells them; `same_site` counts www. and the apex as one site, and
`known_spelling` finds a page already known under the other spelling of its site.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Collection
from posixpath import splitext
from urllib.parse import unquote, urljoin, urlsplit

import idna

logger = logging.getLogger(__name__)

#: Query parameter names that only track a visit (ad clicks, newsletters, analytics).
#: A generic name that a site might use for itself (`ref`, `si`, `source`) is not listed.
TRACKING_PARAMS = frozenset(
    {
        "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "yclid", "twclid",
        "ttclid", "li_fat_id", "igshid", "mc_cid", "mc_eid", "_ga", "_gl", "ref_src", "_hsenc",
        "_hsmi", "__hstc", "__hssc", "__hsfp", "mkt_tok", "srsltid", "s_kwcid", "ef_id",
    }
)  # fmt: skip
#: Query parameter name prefixes that only track a visit (`utm_source`, `hsa_cam`, ...).
TRACKING_PREFIXES = ("utm_", "hsa_", "vero_", "oly_")

#: File extensions that are not web pages: documents, archives, images, media, fonts, code and
#: data feeds. `.txt` is here too: robots.txt, llms.txt and licence files are not pages to learn
#: from (documents are uploaded as files instead).
FILE_EXTENSIONS = frozenset(
    {
        ".pdf", ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp", ".rtf",
        ".csv", ".epub", ".txt",
        ".zip", ".gz", ".tgz", ".tar", ".rar", ".7z", ".bz2", ".xz",
        ".jpg", ".jpeg", ".png", ".gif", ".webp", ".svg", ".ico", ".bmp", ".tif", ".tiff", ".avif",
        ".heic",
        ".mp3", ".mp4", ".m4a", ".m4v", ".wav", ".ogg", ".webm", ".mov", ".avi", ".mkv", ".flac",
        ".aac", ".wmv",
        ".woff", ".woff2", ".ttf", ".otf", ".eot",
        ".css", ".js", ".mjs", ".map", ".json", ".xml", ".rss", ".atom", ".ics", ".vcf",
        ".exe", ".dmg", ".apk", ".msi",
    }
)  # fmt: skip
#: Path segments (compared whole, lower case, with any extension) that are account, cart,
#: admin or feed screens. Whole segments only: "/cartography" and "/accounting-services" pass.
ACCOUNT_SEGMENTS = frozenset(
    {
        "login", "log-in", "signin", "sign-in", "signup", "sign-up", "register", "logout",
        "log-out", "signout", "sign-out", "cart", "basket", "checkout", "my-account", "myaccount",
        "account", "wp-admin", "wp-login", "admin", "wp-json", "feed", "lost-password",
    }
)  # fmt: skip
#: Last path segments (lower case) that are their folder's index document, so the folder's URL.
#: `index.php` is here: a PHP site's folder URL runs its index.php (WordPress, Joomla and Drupal
#: redirect `/index.php` to `/`), and `/index.php?id=2` is `/?id=2` on them; a path below it
#: (`/index.php/about`, PATH_INFO routing) is another page and is kept.
INDEX_DOCUMENTS = frozenset(
    {
        "index.html", "index.htm", "index.shtml", "index.php", "index.asp", "index.aspx",
        "default.html", "default.htm", "default.asp", "default.aspx",
    }
)  # fmt: skip
#: Query parameters that mark a cart action or a comment-reply copy of a page (WordPress).
ACCOUNT_QUERY_PARAMS = ("add-to-cart", "replytocom")

_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SUB_DELIMS = "!$&'()*+,;="
_PATH_SAFE = frozenset(_UNRESERVED | set(_SUB_DELIMS) | set(":@/"))
# Inside one query name or value `&` and `=` stay escaped: they separate the pairs.
_QUERY_SAFE = frozenset(_UNRESERVED | set("!$'()*+,;:@/?"))
_QUERY_VALUE_SAFE = _QUERY_SAFE | {"="}
_HEX = frozenset("0123456789abcdefABCDEF")
_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
_SCHEME_PREFIX = re.compile(r"^[a-z][a-z0-9+.-]*:(?!\d)", re.IGNORECASE)
_SITE_NAME_JUNK = re.compile(r"[^a-z0-9-]+")
_STRIP = "".join(chr(c) for c in range(0x21)) + "\x7f"
_SITE_NAME_MAX = 48


def normalize_url(url: str, base: str | None = None) -> str | None:
    """The canonical form of `url` (joined to `base`), or None when it is not an http(s) URL."""
    try:
        return _normalize(url, base)
    except (ValueError, UnicodeError, idna.IDNAError) as exc:
        logger.debug("Not a URL %r: %s", url, exc)
        return None


def site_host(url: str) -> str:
    """The site a URL belongs to: its host without a leading "www.", plus ":port" when the port is
    not the scheme's default. "" when `url` is not an http(s) URL."""
    normal = normalize_url(url)
    if normal is None:
        return ""
    netloc = urlsplit(normal).netloc
    return netloc[4:] if netloc.startswith("www.") else netloc


def same_site(url: str, home: str) -> bool:
    """True when both are http(s) URLs of one site (www. and the apex are one site; another
    port or another spelling of the host, such as localhost for 127.0.0.1, is another site)."""
    host = site_host(url)
    return bool(host) and host == site_host(home)


def known_spelling(url: str, known: Collection[str]) -> str:
    """The URL under which `known` holds the page `url` names: www. and the apex are one
    site, and so are http and https, so a page named with the other spelling is the page already known
    (not a second page of the same text); `url` itself when it is known, or no spelling is."""
    if url in known:
        return url
    parts = urlsplit(url)
    host = parts.netloc[4:] if parts.netloc.startswith("www.") else parts.netloc
    for scheme in dict.fromkeys((parts.scheme, "https", "http")):
        for netloc in (host, "www." + host):
            spelled = parts._replace(scheme=scheme, netloc=netloc).geturl()
            if spelled in known:
                return spelled
    return url


def url_filter_reason(url: str) -> str:
    """"" when `url` is a candidate page, else why not: "not a web address", "file: .pdf",
    "account screen: login" or "account screen: ?add-to-cart"."""
    normal = normalize_url(url)
    if normal is None:
        return "not a web address"
    parts = urlsplit(normal)
    segments = [unquote(s).lower() for s in parts.path.split("/") if s]
    if segments:
        ext = splitext(segments[-1])[1]
        if ext in FILE_EXTENSIONS:
            return f"file: {ext}"
    for segment in segments:
        if segment in ACCOUNT_SEGMENTS or splitext(segment)[0] in ACCOUNT_SEGMENTS:
            return f"account screen: {segment}"
    names = {unquote(pair.partition("=")[0]).lower() for pair in parts.query.split("&")}
    for name in ACCOUNT_QUERY_PARAMS:
        if name in names:
            return f"account screen: ?{name}"
    return ""


def site_name_from_url(url: str) -> str:
    """A short site name from a URL or a bare host: "https://www.acme.com.au" -> "acme-com-au",
    "http://127.0.0.1:8000" -> "127-0-0-1-8000". Only [a-z0-9-], at most 48 characters.
    Takes what `validate_start_url` takes, and raises its ValueError."""
    host = site_host(validate_start_url(url))
    return _SITE_NAME_JUNK.sub("-", host).strip("-")[:_SITE_NAME_MAX].rstrip("-")


def validate_start_url(url: str) -> str:
    """The normalised start URL for a crawl. "https://" is added when no scheme is given
    ("acme.com.au" -> "https://acme.com.au"). Raises ValueError with a one-line reason."""
    if not isinstance(url, str) or not url.strip():
        raise ValueError(f"url: not a website address: {url!r} (it is empty)")
    text = url.strip()
    if any(ch.isspace() for ch in text):
        raise ValueError(f"url: not a website address: {url!r} (it contains spaces)")
    if "://" not in text and not _SCHEME_PREFIX.match(text):
        text = f"https://{text}"
    if text.split("://", 1)[0].lower() not in _DEFAULT_PORTS:
        raise ValueError(f"url: not a website address: {url!r} (only http and https are crawled)")
    normal = normalize_url(text)
    if normal is None:
        raise ValueError(f"url: not a website address: {url!r} (no valid host name)")
    host = urlsplit(normal).hostname or ""
    if "." not in host and host != "localhost" and not _is_ip(host):
        raise ValueError(
            f"url: not a website address: {url!r} (a host name needs a dot, like acme.com.au)"
        )
    return normal


def _normalize(url: str, base: str | None) -> str | None:
    if not isinstance(url, str):
        return None
    text = _clean(url)
    if base is not None:
        if not isinstance(base, str):
            return None
        text = urljoin(_clean(base), text)
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.netloc:
        return None
    host = _canonical_host(parts.netloc.rpartition("@")[2])
    if host is None:
        return None
    port = parts.port  # ValueError when out of range or not a number
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    path = _folder_of_index(_remove_dot_segments(_canonical_escapes(parts.path, _PATH_SAFE)).rstrip("/"))
    query = _canonical_query(parts.query)
    return f"{scheme}://{netloc}{path}{'?' + query if query else ''}"


def _folder_of_index(path: str) -> str:
    """`path` (no trailing slash) without a last segment that is an index document, and then
    without the slash that led to it: "/team/index.html" -> "/team", "/index.php" -> "". Again
    while the new last segment is one too ("/index.html/index.htm"), so the form is a fixed point."""
    folder, _, last = path.rpartition("/")
    while last.lower() in INDEX_DOCUMENTS:
        path = folder.rstrip("/")
        folder, _, last = path.rpartition("/")
    return path


def _clean(text: str) -> str:
    text = text.strip(_STRIP).replace("\t", "").replace("\n", "").replace("\r", "")
    cut = min((i for i in (text.find("?"), text.find("#")) if i >= 0), default=len(text))
    return text[:cut].replace("\\", "/") + text[cut:]


def _canonical_host(hostport: str) -> str | None:
    if hostport.startswith("["):
        literal = hostport[1:].partition("]")[0]
        try:
            return f"[{ipaddress.IPv6Address(literal).compressed}]"
        except ValueError:
            return None
    host = hostport.rpartition(":")[0] if ":" in hostport else hostport
    host = host.rstrip(".")
    if not host or any(ch.isspace() for ch in host):
        return None
    if not host.isascii():
        host = idna.encode(host, uts46=True).decode("ascii")
    host = host.lower()
    if len(host) > 253 or not all(_LABEL.match(label) for label in host.split(".")):
        return None
    return host


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _canonical_escapes(text: str, safe: frozenset[str]) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%" and text[i + 1 : i + 2] in _HEX and text[i + 2 : i + 3] in _HEX:
            byte = text[i + 1 : i + 3]
            decoded = chr(int(byte, 16))
            out.append(decoded if decoded in _UNRESERVED else f"%{byte.upper()}")
            i += 3
            continue
        if ch in safe:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        i += 1
    return "".join(out)


def _canonical_query(query: str) -> str:
    pairs: list[tuple[str, str]] = []
    for raw in query.split("&"):
        if not raw:
            continue
        name, eq, value = raw.partition("=")
        name = _canonical_escapes(name, _QUERY_SAFE)
        if _is_tracking(unquote(name).lower()):
            continue
        pairs.append((name, f"{eq}{_canonical_escapes(value, _QUERY_VALUE_SAFE)}"))
    pairs.sort(key=lambda pair: pair[0])  # stable: values of one name keep their order
    return "&".join(name + rest for name, rest in pairs)


def _is_tracking(name: str) -> bool:
    return name in TRACKING_PARAMS or name.startswith(TRACKING_PREFIXES)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4, on a path whose `%2E` escapes are already decoded."""
    if "." not in path:
        return path
    output: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
        elif segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
        else:
            output.append(segment)
    result = "/".join(output)
    return result if result.startswith("/") or not result else "/" + result
