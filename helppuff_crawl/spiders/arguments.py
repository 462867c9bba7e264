"""The site spider's arguments, what to crawl (`SiteArgs`), and its config, how (`CrawlConfig`).

    scrapy crawl site -a url=https://acme.com.au [-a site=acme] [-a max_pages=300]
        [-a render_js=auto|always|never] [-a include=GLOB,GLOB] [-a exclude=GLOB,GLOB]
        [-a discover_only=1] [-a only='["https://acme.com.au/contact"]']

Spider arguments arrive as strings. `SiteArgs.parse` checks them and raises ValueError naming the
argument, which `scrapy crawl site` and `helppuff crawl` print as one line before anything starts
(commands/crawl.py, cli/crawl.py). They become settings with spider priority (`SiteArgs.settings`, set
by SiteSpider.from_crawler), which the components read, and the spider reads its own from the settings
too: `CrawlConfig.from_settings`, where a bad value is a ValueError naming the setting.

- `url` (or `start_url`): the home page, required ("acme.com.au" is https://acme.com.au:
  web/urls.validate_start_url); `site`: letters, digits and '-', at most 48 (default: from the host).
- `max_pages`: a whole number from 1 to MAX_PAGES_LIMIT; `render_js`: one of RENDER_MODES.
- `include`, `exclude`: comma-separated globs; an empty `exclude` keeps the default excludes.
- `discover_only`: true or false (1/0, yes/no, on/off): list the candidates, record nothing.
- `only`: a targeted crawl, a JSON list of at most MAX_NAMED_PAGES page URLs, normalised; a URL of
  another site, or one that is no page to learn (a file, an account screen), is refused with the
  reason (`SiteArgs.refused`), and a list with no page of the site is an error. Not with
  `discover_only`.

Pure: no Scrapy import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from helppuff_crawl.web.urls import (
    normalize_url,
    same_site,
    site_host,
    site_name_from_url,
    url_filter_reason,
    validate_start_url,
)

MAX_PAGES_LIMIT = 1000
MAX_NAMED_PAGES = 100  # pages a targeted crawl may name
RENDER_MODES = ("auto", "always", "never")


def _globs(value: str | list[str] | tuple[str, ...] | None, name: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    globs = tuple(item.strip() for item in items if item.strip())
    if not globs:
        raise ValueError(f"{name}: give one or more comma-separated globs, e.g. '**/blog/**'")
    return globs


def _named_pages(value: Any, start: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The `only` argument: a JSON list of page URLs (or a list), each normalised. Returns the pages on
    the site (deduplicated, in order) and those refused with the reason (another site, not a page to
    learn). ValueError for what is not such a list, more than MAX_NAMED_PAGES, or a URL that is not an
    absolute http(s) one; and when not one page named is on the site (a targeted crawl of nothing)."""
    if value is None or value == "" or value == []:
        return (), ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"only: expected a JSON list of page URLs, e.g. '[\"{start}/contact\"]' ({exc})") from None
    if not isinstance(value, (list, tuple)) or not all(isinstance(url, str) for url in value):
        raise ValueError(f"only: expected a JSON list of page URLs (strings), got {value!r}"[:300])
    if not value:
        return (), ()  # "[]": a full crawl
    if len(value) > MAX_NAMED_PAGES:
        raise ValueError(f"only: at most {MAX_NAMED_PAGES} pages, got {len(value)}")
    pages: dict[str, None] = {}
    refused: dict[str, str] = {}
    for raw in value:
        if urlsplit(raw.strip()).scheme.lower() not in ("http", "https"):
            raise ValueError(f"only: not an http(s) URL: {raw!r}"[:300])
        url = normalize_url(raw.strip())
        if url is None:
            raise ValueError(f"only: not a web address: {raw!r}"[:300])
        if not same_site(url, start):
            refused.setdefault(url, f"another site: {site_host(url)} is not {site_host(start)}")
        elif why := url_filter_reason(url):
            refused.setdefault(url, f"not a page to learn ({why})")
        else:
            pages[url] = None
    if not pages:
        listed = "; ".join(f"{url}: {why}" for url, why in refused.items())
        raise ValueError(f"only: not one page named is on the site {site_host(start)}: {listed}"[:1000])
    return tuple(pages), tuple(refused.items())


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{name}: expected true or false, got {value!r}")


@dataclass(frozen=True)
class SiteArgs:
    """The spider arguments, validated (they arrive as strings)."""

    url: str
    site: str
    max_pages: int | None
    render_js: str | None
    include: tuple[str, ...]
    exclude: tuple[str, ...] | None
    discover_only: bool
    only: tuple[str, ...] = ()  # a targeted crawl: the pages named that are on the site, normalised
    refused: tuple[tuple[str, str], ...] = ()  # (URL, why) of the pages named that are not

    @classmethod
    def parse(cls, url: str | None = None, site: str | None = None, max_pages: Any = None,
              render_js: str | None = None, include: Any = None, exclude: Any = None,
              discover_only: Any = False, start_url: str | None = None, only: Any = None,
              **unknown: Any) -> SiteArgs:
        if unknown:
            names = ", ".join(sorted(unknown))
            raise ValueError(f"unknown argument {names}: use url, site, max_pages, render_js, include, exclude, only")
        raw = url or start_url
        if not raw:
            raise ValueError("url: required, e.g. -a url=https://acme.com.au")
        start = validate_start_url(str(raw))
        name = (site or site_name_from_url(start)).strip().lower()
        if not name or not all(c.isalnum() or c == "-" for c in name) or len(name) > 48:
            raise ValueError(f"site: use letters, digits and '-' (at most 48), got {site!r}")
        pages: int | None = None
        if max_pages not in (None, ""):
            try:
                pages = int(str(max_pages))
            except ValueError:
                raise ValueError(f"max_pages: expected a whole number, got {max_pages!r}") from None
            if not 1 <= pages <= MAX_PAGES_LIMIT:
                raise ValueError(f"max_pages: must be between 1 and {MAX_PAGES_LIMIT}, got {pages}")
        if render_js not in (None, "") and render_js not in RENDER_MODES:
            raise ValueError(f"render_js: must be one of {', '.join(RENDER_MODES)}, got {render_js!r}")
        named, refused = _named_pages(only, start)
        discover = _flag(discover_only, "discover_only")
        if named and discover:
            raise ValueError("only: a targeted crawl fetches the pages named; discover_only lists the candidates")
        return cls(
            url=start,
            site=name,
            max_pages=pages,
            render_js=render_js or None,
            include=_globs(include, "include"),
            exclude=_globs(exclude, "exclude") if exclude not in (None, "") else None,
            discover_only=discover,
            only=named,
            refused=refused,
        )

    def settings(self) -> dict[str, Any]:
        """The settings the arguments become (SiteSpider.from_crawler sets them with spider priority)."""
        out: dict[str, Any] = {"HELPPUFF_SITE": self.site, "HELPPUFF_START_URL": self.url}
        if self.max_pages is not None:
            out["HELPPUFF_MAX_PAGES"] = self.max_pages
        if self.render_js is not None:
            out["HELPPUFF_RENDER_JS"] = self.render_js
        if self.include:
            out["HELPPUFF_INCLUDE"] = list(self.include)
        if self.exclude is not None:
            out["HELPPUFF_EXCLUDE"] = list(self.exclude)
        if self.only:
            out["HELPPUFF_ONLY"] = list(self.only)
        if self.discover_only:
            # Nothing is recorded: no pipelines, and no run.
            out["ITEM_PIPELINES"] = {}
            out["HELPPUFF_RUN_ENABLED"] = False
        return out


@dataclass(frozen=True)
class CrawlConfig:
    """How to crawl: from HELPPUFF_* settings (spider arguments become settings)."""

    max_pages: int
    render_js: str
    render_min_text: int
    render_min_scripts: int
    include: tuple[str, ...]
    exclude: tuple[str, ...] | None
    follow_links: bool
    max_discovery_fetches: int
    max_sitemaps: int
    max_sitemap_urls: int
    sample_size: int
    script_fetches: int
    script_few_links: int
    boilerplate: bool = True  # the boilerplate pipeline is on: a targeted crawl with no stored furniture needs a sample

    @property
    def globs(self) -> dict[str, tuple[str, ...]]:
        """The tick globs as `decide_tick` takes them (no exclude setting: its default excludes)."""
        return {"include": self.include, **({} if self.exclude is None else {"exclude": self.exclude})}

    @classmethod
    def from_settings(cls, settings: Any) -> CrawlConfig:
        max_pages = settings.getint("HELPPUFF_MAX_PAGES")
        if not 1 <= max_pages <= MAX_PAGES_LIMIT:
            raise ValueError(f"HELPPUFF_MAX_PAGES must be between 1 and {MAX_PAGES_LIMIT}, got {max_pages}")
        render = settings.get("HELPPUFF_RENDER_JS")
        if render not in RENDER_MODES:
            raise ValueError(f"HELPPUFF_RENDER_JS must be one of {', '.join(RENDER_MODES)}, got {render!r}")
        exclude = settings.getlist("HELPPUFF_EXCLUDE") if settings.get("HELPPUFF_EXCLUDE") is not None else None
        fetches = settings.getint("HELPPUFF_DISCOVERY_MAX_FETCHES")
        if fetches < 2:
            raise ValueError(f"HELPPUFF_DISCOVERY_MAX_FETCHES must be >= 2, got {fetches}")
        script_fetches = settings.getint("HELPPUFF_SCRIPT_LINKS_MAX_FETCHES")
        if script_fetches < 0:
            raise ValueError(f"HELPPUFF_SCRIPT_LINKS_MAX_FETCHES must be >= 0, got {script_fetches}")
        return cls(
            max_pages=max_pages,
            render_js=render,
            render_min_text=settings.getint("HELPPUFF_RENDER_MIN_TEXT"),
            render_min_scripts=settings.getint("HELPPUFF_RENDER_MIN_SCRIPTS"),
            include=tuple(settings.getlist("HELPPUFF_INCLUDE")),
            exclude=tuple(exclude) if exclude is not None else None,
            follow_links=settings.getbool("HELPPUFF_FOLLOW_LINKS"),
            max_discovery_fetches=fetches,
            max_sitemaps=settings.getint("HELPPUFF_SITEMAP_MAX_SITEMAPS"),
            max_sitemap_urls=settings.getint("HELPPUFF_SITEMAP_MAX_URLS"),
            sample_size=settings.getint("HELPPUFF_BOILERPLATE_SAMPLE"),
            script_fetches=script_fetches,
            script_few_links=settings.getint("HELPPUFF_SCRIPT_LINKS_FEW_LINKS"),
            boilerplate=settings.getbool("HELPPUFF_BOILERPLATE_ENABLED"),
        )
