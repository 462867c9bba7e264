"""JS-built pages: whether `render_js: auto` renders a fetched page (`render_reason`).

Pure functions over HTML; no Scrapy import. `render_js: auto` renders a page whose main content is
thin and whose scripts can have built it: the decision runs on every fetched page, so it reads one
parse (about 1-2 ms a page; bench/render_decision.py). What becomes of a page otherwise (blocked,
gone, not HTML, a challenge page) is web/page_status.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import lxml.etree
import lxml.html

from helppuff_crawl.text.html_text import parse_html, text_length
from helppuff_crawl.text.markdown import main_content
from helppuff_crawl.web.urls import site_host


def text_and_scripts(html: str) -> tuple[int, int]:
    """Characters of visible text in <body>, and the number of <script> elements.

    The whole-page measure `render_js: auto` decided on before it read the main content
    (bench/render_decision.py times both side by side).
    """
    if not html.strip():
        return 0, 0
    try:
        doc = lxml.html.document_fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return 0, 0
    scripts = len(doc.xpath("//script"))
    for element in doc.xpath("//script|//style|//noscript|//template"):
        element.drop_tree()
    body = doc.find("body")
    text = body.text_content() if body is not None else doc.text_content()
    return len(" ".join(text.split())), scripts


# --- render_js: auto ------------------------------------------------------------------------

# Script types a browser runs; the others hold data (ld+json, json, importmap, templates).
# Cloudflare's Rocket Loader rewrites "text/javascript" as "<hash>-text/javascript".
_RUN_TYPES = frozenset({"", "module", "text/babel", "text/jsx"})
# Analytics, tag managers, ads, pixels, consent managers and monitoring: none of them writes a
# page's content. A script file from one of these hosts (or a subdomain) is tracking.
_TRACKING_HOSTS = (
    "googletagmanager.com", "google-analytics.com", "analytics.google.com", "doubleclick.net",
    "googleadservices.com", "googlesyndication.com", "adservice.google.com", "connect.facebook.net",
    "facebook.net", "hotjar.com", "clarity.ms", "plausible.io", "cdn.matomo.cloud", "segment.com",
    "segment.io", "mixpanel.com", "hs-scripts.com", "hs-analytics.net", "hsadspixel.net", "ads-twitter.com",
    "snap.licdn.com", "bat.bing.com", "cloudflareinsights.com", "stats.wp.com", "cookiebot.com",
    "cookielaw.org", "onetrust.com", "usercentrics.eu", "cookieyes.com", "termly.io", "iubenda.com",
    "newrelic.com", "nr-data.net", "sentry-cdn.com", "analytics.tiktok.com", "s.pinimg.com",
    "mc.yandex.ru", "fullstory.com", "heapanalytics.com", "crazyegg.com", "mouseflow.com",
    "quantserve.com", "scorecardresearch.com", "adroll.com", "criteo.com", "criteo.net", "taboola.com",
    "outbrain.com", "klaviyo.com", "tiqcdn.com", "googleoptimize.com",
)
# Inline tracking snippets (GTM, gtag, GA, the Meta pixel, Matomo, Hotjar, ...) are short; a long
# script that also pushes to the dataLayer is the site's own code.
_TRACKING_SNIPPET = re.compile(
    r"googletagmanager|google-analytics|\bgtag\s*\(|\bdataLayer\b|\bfbq\s*\(|\b_gaq\b|GoogleAnalyticsObject"
    r"|\b_paq\b|hotjar|clarity\.ms|\bplausible\b|mixpanel|\b_hsq\b|\btwq\s*\(|\bttq\.|\b_linkedin_partner_id"
    r"|\buetq\b|\bsnaptr\s*\(|\bpintrk\s*\(|\bym\s*\(\s*\d|cloudflareinsights|klaviyo|analytics\.load\s*\("
)
_TRACKING_SNIPPET_MAX = 2000
# Real code touches the document or the network; configuration (`var wpcf7 = {...}`) does neither.
_TOUCHES_PAGE = re.compile(
    r"\bdocument\b|\bfetch\s*\(|XMLHttpRequest|\bjQuery\b|\$\s*\(|\bimport\b|\baddEventListener\b"
    r"|\bwindow\.on\w+\s*=|\bcustomElements\b"
)
# An inline script that fetches content and writes it into the page, or mounts an app.
_FETCHES = re.compile(r"\bfetch\s*\(|XMLHttpRequest|\$\.(?:ajax|get|getJSON|post)\s*\(|\baxios\b")
_WRITES = re.compile(
    r"\.(?:innerHTML|outerHTML|textContent|innerText)\s*\+?=|insertAdjacentHTML|\.(?:appendChild|append|prepend"
    r"|replaceChildren|html)\s*\(|document\.write"
)
_LOADS_INTO = re.compile(r"\.load\s*\(\s*['\"]")  # jQuery's $(el).load("/fragment")
_MOUNTS = re.compile(r"ReactDOM\.(?:render|hydrate)|\b(?:createRoot|hydrateRoot|createApp)\s*\(|\bnew\s+Vue\s*\(")
# Where single-page apps mount (by id, or Angular's <app-root>), empty until their script runs.
_APP_ROOT_IDS = frozenset({"app", "root", "__next", "__nuxt", "___gatsby", "svelte", "q-app", "react-root",
                           "app-root", "main-app"})
_IDS = lxml.etree.XPath("//@id")  # reading attributes is cheaper than testing every element (html_text.named)
# XPath, not iter(): libxml2 puts a <script> written after </html> in a second root, beside <html>.
_SCRIPTS = lxml.etree.XPath("//script")
_NOSCRIPTS = lxml.etree.XPath("//noscript")
_ASKS_FOR_JS = re.compile(r"java\s*script", re.IGNORECASE)


@dataclass(frozen=True)
class PageShape:
    """What `render_js: auto` decides on (`render_reason`); counts of <script> elements by kind."""

    main_chars: int | None  # characters of main-content text, furniture removed; None: not measured
    page_scripts: int  # inline scripts with real code, and script files of the page's own site
    library_scripts: int  # script files of other hosts that are not tracking: libraries, widgets, CDN bundles
    tracking_scripts: int  # analytics, tag managers, pixels, consent managers: files and inline snippets
    builds: bool  # an inline script fetches content and writes it into the page, or mounts an app
    app_shell: str  # "" or why the page is a shell: an empty app root, a <noscript> asking for JavaScript


def page_shape(html: str | bytes, url: str = "", *, drop_blocks: frozenset[str] = frozenset(),
               min_scripts: int | None = None) -> PageShape:
    """The page's main-content size and scripts, from one parse (see `render_reason`).

    The main content is what the extract pipeline keeps before its trafilatura pruning (which
    prunes only article-like pages, never thin ones): `text.markdown.main_content`, the same
    cleaning of nav, header, footer, asides, forms, cookie/consent banners, hidden elements and
    controls, and the same choice of root. `drop_blocks` are the site's repeated blocks
    (text/boilerplate.py) when the caller has them. The spider does not: the boilerplate pipeline
    learns them from the first sample pages, after those pages were fetched and their render
    decided. So the spider decides on the page's own furniture only, and a repeated block not
    marked up as furniture (a call-to-action strip in a <div>) counts as main content there:
    a thin page with a long such strip can stay unrendered.

    Measuring the main content is most of the cost, so with `min_scripts` it is measured only
    when the page's scripts could have built it (`render_reason`'s rules); else `main_chars` is None.
    """
    doc = parse_html(html)
    if doc is None:
        return PageShape(0, 0, 0, 0, False, "")
    page_scripts, library, tracking, builds = _scripts(doc, url)
    asks = any(_ASKS_FOR_JS.search(noscript.text_content()) for noscript in _NOSCRIPTS(doc))
    roots = [value.getparent() for value in _IDS(doc) if value.strip() in _APP_ROOT_IDS]
    roots.extend(doc.iter("app-root"))
    if min_scripts is not None and not (
        builds or page_scripts >= min_scripts or ((asks or roots) and page_scripts + library >= 1)
    ):
        return PageShape(None, page_scripts, library, tracking, builds, "")
    root, _method = main_content(doc, drop_blocks=drop_blocks)  # cleans doc: scripts and noscripts go
    if asks:
        shell = "a <noscript> asks for JavaScript"
    elif any(text_length(el) == 0 for el in roots if doc in el.iterancestors()):  # not in dropped furniture
        shell = "an empty app root"
    else:
        shell = ""
    return PageShape(text_length(root), page_scripts, library, tracking, builds, shell)


def _scripts(doc: lxml.html.HtmlElement, url: str) -> tuple[int, int, int, bool]:
    """Page, library and tracking scripts, and whether an inline one builds the page (`PageShape`)."""
    page_scripts = library = tracking = 0
    builds = False
    home = site_host(url) if url else ""
    for script in _SCRIPTS(doc):
        kind = (script.get("type") or "").strip().lower()
        if kind not in _RUN_TYPES and not kind.endswith(("javascript", "ecmascript")):
            continue  # data, not code
        src = (script.get("src") or "").strip()
        if src:
            where = _script_file(urljoin(url, src) if url else src, home)
            page_scripts += where == "page"
            library += where == "library"
            tracking += where == "tracking"
            continue
        code = script.text or ""
        if len(code) <= _TRACKING_SNIPPET_MAX and _TRACKING_SNIPPET.search(code):
            tracking += 1
        elif _TOUCHES_PAGE.search(code):
            page_scripts += 1
            builds = builds or bool(
                _LOADS_INTO.search(code) or _MOUNTS.search(code) or (_FETCHES.search(code) and _WRITES.search(code))
            )
    return page_scripts, library, tracking, builds


def _script_file(src: str, home: str) -> str:
    """Whose a script file is: "page" (the site's own), "tracking", "library" (another host's), or ""
    for Cloudflare's /cdn-cgi/ scripts (email decoding, Rocket Loader), which every proxied page has."""
    parts = urlsplit(src)
    if parts.scheme not in ("", "http", "https"):
        return "page"  # data: and blob: scripts are the page's own code
    host = parts.hostname or ""
    if host and any(host == name or host.endswith(f".{name}") for name in _TRACKING_HOSTS):
        return "tracking"
    if host and site_host(src) != home:
        return "library"
    return "" if parts.path.startswith("/cdn-cgi/") else "page"


def render_reason(html: str | bytes, min_text: int = 300, min_scripts: int = 2, *, url: str = "",
                  drop_blocks: frozenset[str] = frozenset()) -> str:
    """Why `render_js: auto` renders the page at `url` ("" when it does not).

    Only a page whose main content (`PageShape.main_chars`, whatever its nav and footer hold)
    is under `min_text` characters is rendered, and only when its scripts can have built it:

    - an inline script fetches content and writes it into the page, or mounts an app;
    - or the page is an app shell (an empty `#app`/`#root`/`#__next`-style root, or a
      <noscript> asking for JavaScript) and has one script that is not tracking, of any host;
    - or it has at least `min_scripts` page scripts: inline scripts that touch the document or
      the network (not tracking snippets, not configuration) and script files of its own site
      (not Cloudflare's /cdn-cgi/ ones). Script files of other hosts do not count here: a
      contact page with a map widget and a captcha is not built by them.

    Tracking (analytics, tag managers, pixels, consent managers), data scripts (JSON-LD, JSON,
    templates) and `/cdn-cgi/` scripts never make a page JS-built: a thin page whose only scripts
    are those stays as fetched. One script file of the site's own is not enough either: almost
    every static site has one (a menu toggle), so a short contact page with a footer script is
    learned as fetched.
    """
    shape = page_shape(html, url, drop_blocks=drop_blocks, min_scripts=min_scripts)
    if shape.main_chars is None or shape.main_chars >= min_text:
        return ""
    thin = f"{shape.main_chars} characters of main content"
    if shape.builds:
        return f"{thin}, an inline script builds the page"
    if shape.app_shell and shape.page_scripts + shape.library_scripts >= 1:
        return f"{thin}, {shape.app_shell}"
    if shape.page_scripts >= min_scripts:
        return f"{thin}, {shape.page_scripts} page scripts"
    return ""


def needs_rendering(html: str | bytes, min_text: int = 300, min_scripts: int = 2, *, url: str = "",
                    drop_blocks: frozenset[str] = frozenset()) -> bool:
    """`render_js: auto`: thin main content that the page's scripts can have built (`render_reason`)."""
    return bool(render_reason(html, min_text, min_scripts, url=url, drop_blocks=drop_blocks))
