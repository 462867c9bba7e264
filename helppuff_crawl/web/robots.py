"""robots.txt rules for one crawler, per RFC 9309, with Protego as the parser.

Pure: no Scrapy import. :meth:`RobotsRules.parse` takes a robots.txt body and our User-Agent and
returns the rules of the one group that applies to us (``helppuff-crawler``, else ``*``, else none),
the crawl delay asked of us and the ``Sitemap:`` lines. The downloader middleware
(``helppuff_crawl.middlewares.robotstxt``) fetches robots.txt and applies the result.

How the work is split:

1. A small line pass reads each line the way Protego does (comments, ``#``, field names in any case,
   Protego's lenient spellings such as ``User agent foo`` without a colon) and hands Protego a
   cleaned body. It fixes where Protego's grouping differs from RFC 9309:

   - An unknown record (``Invalid-Unknown-Line: x``), or a ``Crawl-delay``/``Request-rate`` line,
     between two ``User-agent`` lines does not end the group (RFC 9309 §2.2.4: other records must not
     interfere with the defined ones). Unknown records are dropped; the other two move after the
     group's last ``User-agent`` line.
   - A group's user-agent value is matched by its product token, the first word up to any ``/``
     (``FOO BAR`` and ``Foo/1.2`` are the group for ``foo``), and by equality, case-insensitive
     (RFC 9309 §2.2.1), where Protego would also take ``foo`` for ``foobar-news``. Each
     ``User-agent`` line is rewritten to ``*``, to a name for us, or to a name for everyone else.
   - Each ``Allow``/``Disallow`` value is handed to Protego as an opaque token, so Protego groups the
     rules while the values keep their exact spelling.

2. Protego parses the cleaned body: groups (merging every group that names us), ``Crawl-delay``,
   ``Request-rate`` and ``Sitemap``. Protego has no public accessor for a group's rules, so
   :func:`_protego_group` reads them from its rule set (``_user_agents``, ``_rules``), names that
   have been stable since Protego's first releases; the conformance tests fail loudly if they change.

3. Matching is ours, because Protego normalises both sides (it decodes ``%62`` to ``b`` and
   re-encodes the URL) where RFC 9309 §2.2.2 and Google's reference matcher compare the URL as the
   crawler sends it: the path, parameters and query of the URL as given (already percent-encoded by
   Scrapy; only ``%xx`` escapes are upper-cased), against patterns whose non-ASCII characters (and
   the few ASCII ones a percent-encoded URL never holds raw, such as a space) are UTF-8
   percent-encoded and whose escapes are upper-cased, never decoded. ``*`` matches any run of
   characters, a final ``$`` anchors the end, the longest matching pattern wins and ``Allow`` wins a
   tie. A literal ``*`` or ``$`` in a URL is compared as ``%2A``/``%24``, so ``Disallow: /a-%2A``
   names ``/a-*`` (RFC 9309 §2.2.3), and a ``$`` before a pattern's end is a literal ``$``.
   ``/robots.txt`` itself is always allowed. As in Google's matcher and Protego,
   ``Allow: /dir/index.html`` also allows ``/dir/``.

The body is read up to :data:`MAX_ROBOTS_BYTES` (500 KiB, RFC 9309 §2.5), cut at the last whole line;
a UTF-8 byte order mark (or the start of one) is skipped, invalid UTF-8 is decoded with replacement
characters, and lines end at CR, LF or CRLF. Nothing here raises on garbage.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from urllib.parse import quote, urljoin

from protego import Protego

logger = logging.getLogger(__name__)

#: The most of a robots.txt body that is read (RFC 9309 §2.5 asks for at least 500 KiB).
MAX_ROBOTS_BYTES = 500 * 1024

_BOM = b"\xef\xbb\xbf"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

# The records we use, under every spelling Protego accepts for them.
_FIELDS = {
    "user-agent": "user-agent",
    "useragent": "user-agent",
    "user agent": "user-agent",
    "allow": "allow",
    "disallow": "disallow",
    "dissallow": "disallow",
    "dissalow": "disallow",
    "disalow": "disallow",
    "diasllow": "disallow",
    "disallaw": "disallow",
    "sitemap": "sitemap",
    "sitemaps": "sitemap",
    "site-map": "sitemap",
    "crawl-delay": "crawl-delay",
    "crawl delay": "crawl-delay",
    "request-rate": "request-rate",
    "request rate": "request-rate",
}

# Group names in the body handed to Protego: ours, and everyone else's. Neither contains the other,
# so Protego's own agent matching can never confuse them.
_OURS = "ours"
_OTHERS = "others"

# Characters that str.splitlines() (which Protego uses) reads as line breaks inside a value.
_SPLITLINES_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")

# In a pattern: a %xx escape, or a character that can never appear raw in a percent-encoded URL.
_PATTERN_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}|[^\x21-\x7e]|[\"<>\\^`{|}]")
_URL_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def product_token(user_agent: str) -> str:
    """The product token robots.txt groups are matched by, lowercased: the first word up to any "/".

    ``helppuff-crawler/0.1.0 (+https://helppuff.com/crawler)`` gives ``helppuff-crawler``.
    A ``User-agent:`` value goes through the same function, so ``FOO BAR`` gives ``foo``;
    ``*`` stays ``*``, and other ``*`` are dropped (``foobot*`` gives ``foobot``, as in Protego).
    """
    words = user_agent.split(None, 1)
    if not words:
        return ""
    word = words[0]
    if word == "*":
        return "*"
    return word.split("/", 1)[0].replace("*", "").lower()


def match_path(url: str) -> str:
    """The part of a URL that robots.txt patterns are matched against: path, parameters and query.

    The scheme, authority and fragment are dropped, the rest is kept as given (``%xx`` escapes
    upper-cased), and an empty result is ``/``: Google's ``GetPathParamsQuery``. A raw ``*`` or ``$``
    is written ``%2A`` or ``%24``, so that patterns can name them (RFC 9309 §2.2.3).
    """
    start = 2 if url.startswith("//") else 0
    path_start = _find_any(url, "/?;", start)
    scheme_end = url.find("://", start)
    if scheme_end != -1 and (path_start == -1 or scheme_end < path_start):
        path_start = _find_any(url, "/?;", scheme_end + 3)
    if path_start == -1:
        return "/"
    hash_pos = url.find("#", start)
    if hash_pos != -1 and hash_pos < path_start:
        return "/"
    path = url[path_start : hash_pos if hash_pos != -1 else len(url)]
    if not path.startswith("/"):
        path = "/" + path
    if "%" in path:
        path = _URL_ESCAPE.sub(lambda m: m.group().upper(), path)
    # "*" and "$" are special in patterns, which match them verbatim as %2A and %24 (RFC 9309 §2.2.3).
    return path.replace("*", "%2A").replace("$", "%24")


def normalise_pattern(value: str) -> str:
    """A rule's value as it is matched: ``%xx`` escapes upper-cased (never decoded), non-ASCII and
    characters that a percent-encoded URL never holds raw (space, ``"<>\\^`{|}``, controls)
    UTF-8 percent-encoded. ``á`` gives ``%C3%A1``, ``%aa`` gives ``%AA``. A ``$`` other than a final
    one is a plain character, written ``%24`` as :func:`match_path` writes it in URLs."""
    anchor = "$" if value.endswith("$") else ""
    body = value[:-1] if anchor else value
    return _PATTERN_ESCAPE.sub(_escape_match, body).replace("$", "%24") + anchor


def _escape_match(match: re.Match[str]) -> str:
    text = match.group()
    return text.upper() if text.startswith("%") else quote(text, safe="")


def _find_any(text: str, chars: str, start: int) -> int:
    positions = [pos for pos in (text.find(char, start) for char in chars) if pos != -1]
    return min(positions) if positions else -1


@dataclass(frozen=True)
class RobotsRule:
    """One ``Allow``/``Disallow`` rule of our group."""

    allow: bool
    pattern: str  # normalised by normalise_pattern(); "*" and a final "$" are special
    _parts: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _anchored: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        anchored = self.pattern.endswith("$")
        body = self.pattern[:-1] if anchored else self.pattern
        object.__setattr__(self, "_parts", tuple(body.split("*")))
        object.__setattr__(self, "_anchored", anchored)

    @property
    def priority(self) -> int:
        """The longest matching pattern wins (RFC 9309 §2.2.2): its length in characters."""
        return len(self.pattern)

    def matches(self, path: str) -> bool:
        """Whether the pattern matches ``path`` (from :func:`match_path`)."""
        parts = self._parts
        first = parts[0]
        if not path.startswith(first):
            return False
        if len(parts) == 1:
            return not self._anchored or len(path) == len(first)
        pos = len(first)
        for part in parts[1:-1]:
            pos = path.find(part, pos)
            if pos == -1:
                return False
            pos += len(part)
        last = parts[-1]
        if self._anchored:
            return len(path) - len(last) >= pos and path.endswith(last)
        return path.find(last, pos) != -1


@dataclass(frozen=True)
class RobotsRules:
    """What a robots.txt asks of one crawler. Build with :meth:`parse`, :meth:`allow_all` or
    :meth:`disallow_all`."""

    rules: tuple[RobotsRule, ...] = ()  # our group's rules, in matching order (longest first)
    group: str = ""  # the group that applied: our product token, "*", or "" for none
    crawl_delay: float | None = None  # seconds: Crawl-delay or Request-rate, the larger
    sitemaps: list[str] = field(default_factory=list)  # Sitemap: lines, in order, no duplicates
    reason: str = ""  # "" when parsed, else why everything is allowed or disallowed
    truncated: bool = False  # the body was over MAX_ROBOTS_BYTES and was cut
    verdict: bool | None = None  # allow_all: True, disallow_all: False, parsed: None

    @classmethod
    def allow_all(cls, reason: str) -> RobotsRules:
        return cls(reason=reason, verdict=True)

    @classmethod
    def disallow_all(cls, reason: str) -> RobotsRules:
        return cls(reason=reason, verdict=False)

    @classmethod
    def parse(cls, body: bytes | str, user_agent: str, base_url: str | None = None) -> RobotsRules:
        """Parse a robots.txt body for ``user_agent`` (a User-Agent string or a product token).

        ``base_url`` (the robots.txt URL) resolves relative ``Sitemap:`` lines; without it they are
        kept as written.
        """
        data = body if isinstance(body, bytes) else body.encode("utf-8", "replace")
        truncated = len(data) > MAX_ROBOTS_BYTES
        if truncated:
            data = data[:MAX_ROBOTS_BYTES]
            last_break = max(data.rfind(b"\n"), data.rfind(b"\r"))
            data = data[: last_break + 1]
        for size in (3, 2, 1):  # a byte order mark, or a broken start of one, is skipped
            if data.startswith(_BOM[:size]):
                data = data[size:]
                break
        text = data.decode("utf-8", "replace")

        token = product_token(user_agent)
        cleaned, values = _clean(_LINE_BREAK.split(text), token)
        parser = Protego.parse(cleaned)
        group, raw_rules = _OURS, _protego_group(parser, _OURS)
        if raw_rules is None:
            group, raw_rules = "*", _protego_group(parser, "*")
        rules = _rules(raw_rules or [], values)
        sitemaps = _sitemaps(parser, base_url)
        delay = _crawl_delay(parser)
        return cls(
            rules=rules,
            group=(token if group == _OURS else group) if raw_rules is not None else "",
            crawl_delay=delay,
            sitemaps=sitemaps,
            truncated=truncated,
        )

    def allowed(self, url: str) -> bool:
        """Whether we may fetch ``url`` (absolute, percent-encoded as Scrapy requests are)."""
        if self.verdict is not None:
            return self.verdict
        path = match_path(url)
        if path.split("?", 1)[0] == "/robots.txt":
            return True
        for rule in self.rules:
            if rule.matches(path):
                return rule.allow
        return True


def _directive(line: str) -> tuple[str, str] | None:
    """The (field, value) of a line without its comment, for the fields we use, or None.

    Mirrors Protego's reading: ``field: value``, else ``field value`` for a known field of one or two
    words (``user agent foo``, ``disallow /a:b``).
    """
    if ":" in line:
        name, raw = line.split(":", 1)
        known = _FIELDS.get(name.strip().lower())
        if known:
            return known, raw.strip()
        if not raw or raw[0].isspace():
            return None  # a record we do not use ("Invalid-Unknown-Line: x", "Host: x")
    words = line.split()
    for count in (1, 2):
        known = _FIELDS.get(" ".join(words[:count]).lower())
        if known:
            return known, " ".join(words[count:])
    return None


def _clean(lines: list[str], token: str) -> tuple[str, list[str]]:
    """The body handed to Protego, and the Allow/Disallow values its tokens stand for."""
    out: list[str] = []
    sitemaps: list[str] = []
    values: list[str] = []
    held: list[str] = []  # Crawl-delay/Request-rate seen between User-agent lines
    in_agents = False
    for raw_line in lines:
        line = raw_line.split("#", 1)[0].strip()
        parsed = _directive(line) if line else None
        if parsed is None:
            continue
        name, value = parsed
        if name == "user-agent":
            key = product_token(value)
            agent = "*" if key == "*" else _OURS if token and key == token else _OTHERS
            out.append(f"user-agent: {agent}")
            in_agents = True
        elif name in ("allow", "disallow"):
            out.extend(held)
            held.clear()
            in_agents = False
            if value:
                values.append(value)
                out.append(f"{name}: /{len(values) - 1}")
            else:
                out.append(f"{name}:")  # empty, yet still a rule line: it ends the agent lines
        elif not value:
            continue
        elif name == "sitemap":
            sitemaps.append(_SPLITLINES_BREAKS.sub(lambda m: quote(m.group()), value))
        else:
            record = f"{name}: {_SPLITLINES_BREAKS.sub(' ', value)}"
            (held if in_agents else out).append(record)
    out.extend(held)
    # Sitemap lines first: they belong to no group, and so cannot disturb one.
    return "\n".join([f"sitemap: {url}" for url in sitemaps] + out), values


def _protego_group(parser: Protego, name: str) -> list[tuple[str, str]] | None:
    """The (field, token) rules of Protego's rule set for group ``name``, or None if there is none."""
    rule_set = parser._user_agents.get(name)  # noqa: SLF001 - no public accessor for a group's rules
    if rule_set is None:
        return None
    return [(rule.field, rule.value._pattern) for rule in rule_set._rules]  # noqa: SLF001


def _rules(raw_rules: list[tuple[str, str]], values: list[str]) -> tuple[RobotsRule, ...]:
    rules: list[RobotsRule] = []
    for name, tokenised in raw_rules:
        pattern = normalise_pattern(values[int(tokenised[1:])])
        allow = name == "allow"
        rules.append(RobotsRule(allow, pattern))
        if allow:
            # /dir/index.html (or index.htm) allowed: /dir/ is the same page (Google, Protego).
            slash = pattern.rfind("/")
            if slash != -1 and pattern.startswith("/index.htm", slash):
                rules.append(RobotsRule(True, pattern[: slash + 1] + "$"))
    rules.sort(key=lambda rule: (-rule.priority, not rule.allow))
    return tuple(rules)


def _crawl_delay(parser: Protego) -> float | None:
    delays: list[float] = []
    crawl_delay = parser.crawl_delay(_OURS)
    if crawl_delay is not None:
        delays.append(float(crawl_delay))
    rate = parser.request_rate(_OURS)
    if rate is not None and rate.requests > 0:
        delays.append(rate.seconds / rate.requests)
    delays = [delay for delay in delays if math.isfinite(delay) and delay >= 0]
    return max(delays) if delays else None


def _sitemaps(parser: Protego, base_url: str | None) -> list[str]:
    found: list[str] = []
    for url in parser.sitemaps:
        if base_url:
            try:
                url = urljoin(base_url, url)
            except ValueError:
                logger.debug("Sitemap line %r cannot be joined to %s", url, base_url)
        if url not in found:
            found.append(url)
    return found
