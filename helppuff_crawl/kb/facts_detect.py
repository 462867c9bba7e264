"""Facts from the pages' own words: the gaps structured data leaves, filled from the contact, home and location pages.

When JSON-LD and tel:/mailto: links leave a gap (no telephone, no email, hours written only in a
footer or a paragraph, no address), the site's contact, home and location pages are read (in that
order: a "Find us" or "Location" page is where many small businesses write their address, phone
number and opening hours, as ../shared/data/sites/mr-tu-bakery's location.html does):

- with a chat model when there is one: the site's model (backend.model, else the default
  @cf/zai-org/glm-4.7-flash) on Workers AI through the client's `ai_run` when the knowledge base is on
  Cloudflare; on the local cloud, the OpenAI-compatible server HELPPUFF_LOCAL_CHAT_URL names
  (local/chat.py's OpenAIChat, HELPPUFF_LOCAL_CHAT_MODEL). One call per site, with the pages' text,
  told to give only what is written there, as one JSON object. A model that fails, or answers
  something that is not that object (not JSON, or an object with none of its fields, as a small
  model may write; "{}" says the pages write none), is noted, and the rule-based reader reads the
  pages instead;
- without one (the local default), text/contact_details.read_rules: hours lines, phone and email patterns.

Either way every candidate is checked against the page text (text/fact_checks.check: an invented
number, address or clock is not in the page) and a failing one is dropped with its reason.

The pages' text: for each stored contact, home and location page (D1 `pages`, learned this crawl or
before; at most MAX_PAGES, contact pages first, then home, then location) its title, meta description and Markdown; the furniture blocks with contact
details kept with the facts (`_site_blocks`) join the home page's; and during a crawl, the page's
footer text (`CrawlPageTexts`, kept in memory: the Markdown leaves the site footer out, and no
table keeps it, so `helppuff knowledge facts detect` on its own cannot read a footer).

What is kept never replaces the owner's facts (source 'owner') or a structured fact: after a crawl,
the keys this crawl's structured data found; on demand (`detect`), any key already stored. It is
stored with source 'crawl' (the facts table's CHECK allows 'crawl' and 'owner' only, and the
Worker reads the value whatever its source) and the page it came from as source_url.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from helppuff_crawl.cloudflare.client import CloudflareError
from helppuff_crawl.schema import contract
from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.kb.facts_table import SITE_BLOCKS_KEY, save_crawl_facts
from helppuff_crawl.kb.site_settings import get_site_settings
from helppuff_crawl.local.errors import AIError
from helppuff_crawl.text.contact_details import FACT_KEYS, Candidate, PageText, footer_text, read_rules
from helppuff_crawl.text.fact_checks import check_all

logger = logging.getLogger(__name__)

PAGE_CATEGORIES = ("contact", "home", "location")  # the pages read, in this order
MAX_PAGES = 6
MAX_PAGE_CHARS = 8_000  # of each page's text given to the model
DEFAULT_MODEL = "@cf/zai-org/glm-4.7-flash"  # the Worker's default chat model (worker/src/settings.ts)
DEFAULT_REGION = "AU"  # the Worker's default locale is en-AU
# Then these, for a site whose country neither its domain (a .com) nor its locale tells: a number
# written "(718) 353-0832" is read by North America's rules, "020 7946 0958" by the UK's.
FALLBACK_REGIONS = ("US", "GB")
MAX_ANSWER_TOKENS = 1024
# A key is a gap unless one of these is known (tel:/mailto: links are stored as phones/emails).
_COVERED_BY = {"telephone": ("telephone", "phones"), "email": ("email", "emails"), "hours": ("hours",),
               "address": ("address",)}
_TLD_REGIONS = {"uk": "GB"}
_GENERIC_TLDS = frozenset({"ai", "io", "co", "me", "tv", "cc", "fm", "ws", "to", "app"})

SYSTEM_PROMPT = """You read a small business's web pages and copy its contact details exactly as the pages write them.
Give only what is written in the pages. Leave out anything they do not write; never guess, complete or correct a value.
Answer with one JSON object and nothing else, with these fields, each only when the pages write it:
  "telephone": the business's main phone number as written (not a fax number),
  "email": the business's email address,
  "address": the business's street address as one line of the page's own words,
  "hours": the weekly opening hours as {"Monday": [["08:00", "17:00"]], ...}: English day names, 24-hour HH:MM,
           several spans for a day with a break, a day the pages do not give hours for left out.
If the pages write none of these, answer {}."""


class ChatModel(Protocol):
    """A chat model that answers one request with text."""

    name: str

    async def complete(self, messages: list[dict[str, str]]) -> str: ...


class WorkersAIChat:
    """The site's model on Workers AI, through the client's `ai_run` (Cloudflare's REST API)."""

    def __init__(self, client: Any, model: str) -> None:
        self.client = client
        self.name = model

    async def complete(self, messages: list[dict[str, str]]) -> str:
        known = contract.models()["chat"].get(self.name) or {}
        payload: dict[str, Any] = {"messages": messages, "temperature": 0,
                                   known.get("outputLimit") or "max_tokens": MAX_ANSWER_TOKENS}
        payload.update(known.get("noReasoning") or {})  # the answer, not the thinking, within the bound
        return answer_text(await self.client.ai_run(self.name, payload))


class ServerChat:
    """The local cloud's chat model: an OpenAI-compatible server (HELPPUFF_LOCAL_CHAT_URL)."""

    def __init__(self, url: str, model: str, site_model: str) -> None:
        from helppuff_crawl.local.chat import ChatServerConfig, OpenAIChat

        self.chat = OpenAIChat(ChatServerConfig(url, model))
        self.site_model = site_model
        self.name = model or site_model

    async def complete(self, messages: list[dict[str, str]]) -> str:
        payload = {"messages": messages, "temperature": 0, "max_tokens": MAX_ANSWER_TOKENS}
        return answer_text(await asyncio.to_thread(self.chat.run, self.site_model, payload))


def answer_text(result: Any) -> str:
    """The text of a chat answer: OpenAI's choices[0].message.content, or Workers AI's `response`."""
    if isinstance(result, Mapping):
        choices = result.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            message = choices[0].get("message")
            if isinstance(message, Mapping) and isinstance(message.get("content"), str):
                return message["content"]
        response = result.get("response")
        if isinstance(response, str):
            return response
        if isinstance(response, Mapping):
            return json.dumps(response)
    raise ValueError(f"the model's answer has no text: {json.dumps(result)[:200]}")


@dataclass(frozen=True)
class PageFactsConfig:
    chat_url: str = ""  # HELPPUFF_LOCAL_CHAT_URL: the local cloud's chat server, "" for none
    chat_model: str = ""  # HELPPUFF_LOCAL_CHAT_MODEL

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> PageFactsConfig:
        return cls(str(settings.get("HELPPUFF_LOCAL_CHAT_URL") or ""), str(settings.get("HELPPUFF_LOCAL_CHAT_MODEL") or ""))


class CrawlPageTexts:
    """During a crawl: the footer text of each page read (the Markdown leaves footers out)."""

    def __init__(self, config: PageFactsConfig) -> None:
        self.config = config
        self.footers: dict[str, str] = {}

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> CrawlPageTexts:
        return cls(PageFactsConfig.from_settings(settings))

    def add(self, category: str, url: str, html: str | bytes) -> None:
        if category in PAGE_CATEGORIES and html and len(self.footers) < 4 * MAX_PAGES:
            if text := footer_text(html):
                self.footers[url] = text


@dataclass
class Detection:
    """What reading the pages found, kept and dropped."""

    site: str
    reader: str = "rules"  # "rules", or "model <id>"
    model: str = ""  # the chat model asked ("" for none): with reader "rules", it failed (notes say how)
    pages: list[str] = field(default_factory=list)  # URLs read
    gaps: list[str] = field(default_factory=list)  # keys no stored or structured fact covers
    kept: list[Candidate] = field(default_factory=list)  # passed the checks and filled a gap
    known: list[Candidate] = field(default_factory=list)  # passed the checks, but the key is known already
    dropped: list[Candidate] = field(default_factory=list)  # failed a check (reason) or the model's answer
    notes: list[str] = field(default_factory=list)
    stored: bool = False  # what was kept is stored (not a dry run, something kept)

    def as_dict(self) -> dict[str, Any]:
        return {"site": self.site, "reader": self.reader, "model": self.model, "pages": self.pages,
                "gaps": self.gaps, "found": [c.as_dict() for c in [*self.kept, *self.known, *self.dropped]],
                "kept": [c.as_dict() for c in self.kept], "known": [c.as_dict() for c in self.known],
                "dropped": [c.as_dict() for c in self.dropped], "notes": self.notes, "stored": self.stored}


def gaps(known_keys: Sequence[str]) -> list[str]:
    """The fact keys nothing known covers."""
    known = set(known_keys)
    return [key for key in FACT_KEYS if not known.intersection(_COVERED_BY[key])]


async def load_pages(kb: KnowledgeBase, site: str, footers: Mapping[str, str] = {}) -> list[PageText]:
    """The stored pages' words (PAGE_CATEGORIES, in that order), with footers and the site's contact blocks."""
    marks = ", ".join("?" * len(PAGE_CATEGORIES))
    order = " ".join(f"WHEN '{category}' THEN {n}" for n, category in enumerate(PAGE_CATEGORIES))
    rows = await kb.query(
        f"SELECT url, category, title, description, markdown FROM pages WHERE site = ? AND category IN ({marks}) "
        f"AND status IN ('ok', 'unchanged') ORDER BY CASE category {order} END, length(url), url LIMIT ?",
        [site, *PAGE_CATEGORIES, MAX_PAGES])
    blocks_row = await kb.first("SELECT value FROM facts WHERE site = ? AND key = ?", [site, SITE_BLOCKS_KEY])
    blocks = [str(b) for b in json.loads(blocks_row["value"])] if blocks_row else []
    pages = []
    for row in rows:
        parts = [row["title"], row["description"], row["markdown"], footers.get(row["url"], "")]
        if row["category"] == "home":
            parts.extend(blocks)
        pages.append(PageText(row["url"], row["category"], "\n\n".join(part for part in parts if part)))
    return pages


async def site_model_and_regions(kb: KnowledgeBase, site: str, urls: Sequence[str]) -> tuple[str, list[str]]:
    """The site's chat model (backend.model) and the countries its phone numbers are read in (the
    pages' country domain, the locale's country, then en-AU's, then FALLBACK_REGIONS)."""
    model, locale = DEFAULT_MODEL, ""
    row = await get_site_settings(kb, site)
    if row is not None:
        try:
            backend = json.loads(row["settings"]).get("backend") or {}
        except (ValueError, AttributeError):
            backend = {}
        if isinstance(backend, Mapping):
            model = str(backend.get("model") or model)
            locale = str(backend.get("locale") or "")
    regions = []
    for url in urls:
        tld = (urlsplit(url).hostname or "").rsplit(".", 1)[-1].lower()
        if len(tld) == 2 and tld.isalpha() and tld not in _GENERIC_TLDS:
            regions.append(_TLD_REGIONS.get(tld, tld.upper()))
    if match := re.search(r"[-_]([A-Za-z]{2})$", locale):
        regions.append(match.group(1).upper())
    return model, list(dict.fromkeys([*regions, DEFAULT_REGION, *FALLBACK_REGIONS]))


def chat_model(kb: KnowledgeBase, config: PageFactsConfig, site_model: str) -> ChatModel | None:
    """The chat model to read with: Workers AI on Cloudflare, the local chat server when configured, else None."""
    if kb.config is not None and kb.config.remote:
        return WorkersAIChat(kb.client, site_model)
    if config.chat_url:
        return ServerChat(config.chat_url, config.chat_model, site_model)
    return None


def model_messages(pages: Sequence[PageText]) -> list[dict[str, str]]:
    text = "\n\n".join(f"## Page {page.url}\n\n{page.text[:MAX_PAGE_CHARS]}" for page in pages)
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"The pages:\n\n{text}\n\nThe JSON object:"}]


def model_candidates(answer: str, reader: str) -> list[Candidate]:
    """The candidates in a model's answer (one JSON object; reasoning and code fences around it are
    ignored); ValueError when there is no JSON object, or one that holds none of the fields asked for
    (an empty one says the pages write none)."""
    text = re.sub(r"(?s)<think>.*?</think>", "", answer)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ValueError(f"the model's answer is not a JSON object: {answer.strip()[:200]!r}")
    try:
        data = json.loads(text[start:end + 1])
    except ValueError as exc:
        raise ValueError(f"the model's answer is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError("the model's answer is not a JSON object")
    if data and not data.keys() & set(FACT_KEYS):
        raise ValueError(f"the model's answer has none of the fields asked for ({', '.join(FACT_KEYS)}), "
                         f"only {', '.join(sorted(map(str, data))[:5])}")
    found = []
    for key in FACT_KEYS:
        value = data.get(key)
        if isinstance(value, list) and key != "hours":
            value = next((v for v in value if v), None)  # "telephone": ["03 ..."]: the first
        if value not in (None, "", {}, []):
            found.append(Candidate(key, value, "", reader))
    return found


async def read(pages: Sequence[PageText], chat: ChatModel | None, regions: Sequence[str],
               detection: Detection) -> list[Candidate]:
    """The candidates the pages give: the chat model's, or the rule-based reader's without one (or when it fails)."""
    if chat is not None:
        detection.model = chat.name
        try:
            answer = await chat.complete(model_messages(pages))
            detection.reader = f"model {chat.name}"
            return model_candidates(answer, detection.reader)
        except (CloudflareError, AIError, ValueError, OSError, TimeoutError) as exc:
            # A model's failure never fails the crawl: the rules read the pages instead.
            logger.warning("Reading the pages of %s with %s failed: %s; the rule-based reader reads them",
                           detection.site, chat.name, exc)
            detection.notes.append(f"the model {chat.name} failed ({type(exc).__name__}: {exc}".splitlines()[0][:300]
                                   + "); the rule-based reader was used")
    detection.reader = "rules"
    return read_rules(pages, regions)


async def detect(kb: KnowledgeBase, site: str, config: PageFactsConfig, *, structured: Mapping[str, Any] | None = None,
                 footers: Mapping[str, str] = {}, dry_run: bool = False, always: bool = True) -> Detection:
    """Read the site's contact, home and location pages, check what they give, and store what fills a gap.

    `structured`: after a crawl, the facts its structured data found (those keys and the owner's are
    known); None on demand, when every stored key is known. `always`: read even with no gap (on demand:
    to show what the pages say); after a crawl the pages are read only for a gap."""
    detection = Detection(site)
    rows = await kb.query("SELECT key, source FROM facts WHERE site = ?", [site])
    owners = {row["key"] for row in rows if row["source"] == "owner"}
    known_keys = [*owners, *structured] if structured is not None else [row["key"] for row in rows]
    detection.gaps = gaps(known_keys)
    if not detection.gaps and not always:
        return detection
    pages = await load_pages(kb, site, footers)
    detection.pages = [page.url for page in pages]
    if not pages:
        detection.notes.append("no contact or home page is stored: crawl the site first")
        return detection
    site_model, regions = await site_model_and_regions(kb, site, detection.pages)
    candidates = await read(pages, chat_model(kb, config, site_model), regions, detection)
    checked = check_all(candidates, pages)
    detection.dropped = checked.dropped
    for candidate in checked.kept:
        if candidate.key in detection.gaps:
            detection.kept.append(candidate)
        else:
            candidate.reason = "known: the owner's" if set(_COVERED_BY[candidate.key]) & owners else "known already"
            detection.known.append(candidate)
    for candidate in detection.dropped:
        logger.info("Dropped %s from the pages of %s: %s", candidate.key, site, candidate.reason)
    if detection.kept and not dry_run:
        for candidate in detection.kept:
            await save_crawl_facts(kb, site, {candidate.key: candidate.value}, candidate.source_url)
        detection.stored = True
    return detection


async def fill_after_crawl(kb: KnowledgeBase, site: str, structured: Mapping[str, Any] | None,
                           texts: CrawlPageTexts) -> Detection:
    """After a crawl's facts are saved: fill the gaps its structured data left from the pages' words
    (`structured`: what it found; None for a targeted crawl, which fills only keys nothing stored covers)."""
    detection = await detect(kb, site, texts.config, structured=structured, footers=texts.footers, always=False)
    if detection.kept or detection.dropped:
        logger.info("Facts from the pages of %s (%s): kept %s; dropped %d", site, detection.reader,
                    ", ".join(c.key for c in detection.kept) or "none", len(detection.dropped))
    return detection
