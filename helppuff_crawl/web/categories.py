"""Page categories and the default tick of each discovered page. Pure: no Scrapy import.

`categorize(url, title)` reads the URL path first, then the title when the path says nothing:

1. The root path, or one segment named index/home/default/homepage (any extension) -> home.
2. Sections that own everything below them, decided by the first path segment: `BLOG_ROOTS`
   (and the WordPress archives category/tag/author) -> blog, `PRODUCT_ROOTS` -> product. Dated
   paths (`/2019/05/post`, or a year as the first segment) -> blog.
3. Otherwise the segments are read from the last to the first (the last is the most specific:
   "/about/team" is team, "/services/plumber-richmond" is location) and the first segment that
   matches a category gives it. Within one segment the categories are tried in the order of
   `CATEGORY_KEYS` ("/privacy-policy" is legal, "/refund-policy" policy, "/book-a-service"
   booking, "/service-areas" location).
4. Nothing in the path: the title's first part (before " | ", " - ", " — ", " – ", " · ",
   " :: " or " » ", which usually start the site name) is matched the same way:
   "Contact Us" -> contact, "Hot Water Repairs | Acme" -> service.
5. Else other.

Matching is by words, never substrings: a segment or title is split into lower-case words at
anything that is not a letter or a digit (of any alphabet: "/über-uns" is "über", "uns"), and a
key ("about", "refund-policy") matches when its words appear in a row. The keys are English, and
the same pages' usual names in German, French, Spanish, Italian, Dutch and Portuguese ("/kontakt",
"/anfahrt", "/leistungen", "/horaires", "/contacto", "/chi-siamo", "/openingstijden"): a small
business names its pages in its own language, and the Worker leans questions towards categories
(a phone number or opening hours towards contact, where a page of opening hours belongs too), and
the facts are read from the contact pages (kb/facts_detect.py). So "/cartography" is not cart, "/bookkeeping" is not booking and
"/facebook" is not book. Keys starting with "^" must start the segment ("/terms" is policy,
"/plumbing-terms-explained" is not; "/returns" is policy, "/tax-returns" is not). Location pages also match the usual small-business shapes:
a trade followed by a place ("/plumber-melbourne", "/electricians-st-kilda") or a trade, then
"in"/"near", then a place ("/plumbing-in-richmond", "/emergency-plumber-near-me"). These shapes
are read in paths only: in a title ("Plumbers you can trust") they would guess too often.

Policy pages and legal pages. A visitor asks a small business about its rules of trade: how late
they may cancel, whether the deposit comes back, what a no-show costs, how to pay, what the
guarantee or warranty covers, returns, refunds, shipping. Those pages are category "policy" and are
learned like any other page. Legal pages are the ones a visitor does not ask the chat about and
whose text would crowd out answers (privacy and data protection, cookies, imprint/Impressum, GDPR,
disclaimers, copyright, a website's terms of use): category "legal", unticked. "Policy" alone is
not legal any more: "/privacy-policy" and "/cookie-policy" are legal by their first word, every
other "/...-policy" and "/policies" is policy. Terms of service, terms and conditions and terms of
sale ("/terms", "/terms-of-service", "/tos", German "/agb") are policy too: on a small business's
site they are where deposits, payment methods, rescheduling and satisfaction guarantees are
written (../shared/data/sites/affairs-of-beauty's terms-of-service.html holds its deposits,
payment methods, late arrivals and its 48-hour correction guarantee, and its cancellation policy
points to it), so leaving them out leaves such questions unanswered; their legal boilerplate
(liability, intellectual property) is passages that few questions reach. "/terms-of-use", which
governs the website rather than the trade, stays legal.

`decide_tick` says whether a page starts ticked. In order:

1. An include glob match: ticked ("include glob '<glob>'"); include wins over everything.
2. category legal: unticked, "legal page".
3. Archives: unticked, "archive page": /tag/x, /category/x, /author/x, /product-category/x,
   /product-tag/x, /page/N, ?page=N or ?paged=N, and, for blog pages, date archives (/2019,
   /blog/2019/05).
4. Deep blog posts: unticked, "deep blog post": a blog page two or more segments below the blog
   root (/blog/2019/my-post, /news/tips/my-post) or on a dated path (/2019/05/my-post). The blog
   index and the posts directly under it (/blog/my-post) stay ticked: they are the recent,
   linked-to ones, and a small-business blog rarely nests them.
5. An exclude glob match: unticked, "exclude glob '<glob>'".
6. Else ticked, reason "".

Glob syntax (`glob_match`): matched against the URL's percent-decoded path ("/" for the root;
no host, no query), case-insensitive. "*" matches within one segment (no "/"), "**" across
segments (anything, "/" included); every other character is literal. A pattern written as a
full URL ("https://acme.com/blog/**") is matched by its path, and a pattern that starts with
neither "/" nor "*" is taken from the root ("blog/**" is "/blog/**").
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from helppuff_crawl.web.urls import normalize_url

logger = logging.getLogger(__name__)

# CATEGORIES, every category a page can have, is the shared contract's (helppuff_crawl/schema/
# knowledge.json), which the Worker reads too: a new category goes there, and its keys in CATEGORY_KEYS.

#: First path segments whose whole section is the blog (wordpress archives included).
BLOG_ROOTS = frozenset(
    {"blog", "blogs", "news", "articles", "article", "posts", "post", "insights", "journal",
     "latest-news", "our-blog", "category", "tag", "author"}
)  # fmt: skip
#: First path segments whose whole section is the shop.
PRODUCT_ROOTS = frozenset(
    {"shop", "store", "product", "products", "collections", "product-category", "product-tag"}
)  # fmt: skip

#: Keys per category, matched on the words of a path segment or of the title. The order is the
#: priority when one segment matches several categories.
CATEGORY_KEYS: dict[str, tuple[str, ...]] = {
    "legal": (
        "privacy", "terms-of-use", "legal", "cookie", "cookies", "disclaimer", "gdpr", "imprint",
        "impressum", "copyright", "datenschutz", "datenschutzerklaerung", "dsgvo",
    ),
    "faq": (
        "faq", "faqs", "questions", "frequently-asked", "q-a", "haeufige-fragen", "häufige-fragen",
        "preguntas-frecuentes", "domande-frequenti", "veelgestelde-vragen", "perguntas-frequentes",
    ),
    # The rules of trade a visitor asks about (the module docstring says why terms are here).
    "policy": (
        "policy", "policies", "^terms", "terms-and-conditions", "terms-of-service", "terms-of-sale",
        "terms-of-trade", "tos", "agb", "cancellation", "cancellations", "cancel", "refund",
        "refunds", "^returns", "deposit", "deposits", "no-show", "no-shows", "guarantee",
        "guarantees", "warranty", "warranties", "^shipping", "widerruf", "widerrufsbelehrung",
    ),
    "pricing": (
        "pricing", "price", "prices", "price-list", "rates", "fee", "fees", "cost", "costs",
        "financing", "finance", "payment", "payments", "payment-plans", "preise", "preisliste",
        "kosten", "tarifs", "prix", "precios", "tarifas", "prezzi", "listino", "prijzen", "precos", "preços",
    ),
    "booking": (
        "book", "booking", "bookings", "book-now", "book-online", "schedule", "scheduling",
        "appointment", "appointments", "reserve", "reservation", "reservations", "termin",
        "termine", "terminvereinbarung", "online-termin", "buchen", "buchung", "reservierung",
        "rendez-vous", "reserver", "réserver", "cita", "citas", "reserva", "reservas",
        "prenota", "prenotazione", "prenotazioni", "afspraak", "afspraken", "reserveren", "agendamento",
    ),
    # Opening hours are asked of the contact details (worker/src/intent.ts leans them there too).
    "contact": (
        "contact", "contact-us", "get-in-touch", "enquire", "enquiry", "enquiries", "inquire",
        "inquiry", "inquiries", "quote", "quotes", "find-us", "hours", "opening-hours",
        "opening-times", "business-hours", "kontakt", "kontaktformular", "oeffnungszeiten",
        "öffnungszeiten", "sprechzeiten", "sprechstunden", "contactez-nous", "nous-contacter",
        "horaires", "contacto", "contactenos", "contáctenos", "horario", "horarios", "contatti",
        "contatto", "contattaci", "orari", "contacteer", "openingstijden", "contato", "fale-conosco",
    ),
    "testimonials": (
        "testimonials", "testimonial", "reviews", "review", "bewertungen", "erfahrungen",
        "temoignages", "témoignages", "opiniones", "testimonios", "recensioni", "recensies",
        "depoimentos",
    ),
    "team": (
        "team", "our-team", "staff", "people", "leadership", "unser-team", "equipe", "équipe",
        "equipo", "nuestro-equipo", "squadra", "ons-team",
    ),
    "about": (
        "about", "about-us", "who-we-are", "our-story", "our-history", "why-us", "why-choose",
        "our-mission", "ueber-uns", "uber-uns", "über-uns", "a-propos", "à-propos", "qui-sommes-nous",
        "quienes-somos", "quiénes-somos", "sobre-nosotros", "chi-siamo", "over-ons", "sobre-nos",
    ),
    "location": (
        "location", "locations", "area", "areas", "service-area", "service-areas", "suburb",
        "suburbs", "regions", "cities", "where-we-work", "near-me", "directions", "how-to-find-us",
        "anfahrt", "anreise", "standort", "standorte", "wegbeschreibung", "lageplan", "plan-d-acces",
        "ubicacion", "ubicación", "como-llegar", "cómo-llegar", "dove-siamo", "come-raggiungerci",
        "routebeschrijving", "localizacao", "localização", "como-chegar",
    ),
    "service": (
        "service", "services", "what-we-do", "solutions", "treatments", "repair", "repairs",
        "installation", "installations", "maintenance", "leistungen", "leistungsspektrum",
        "behandlungen", "angebot", "dienstleistungen", "prestations", "soins", "servicios",
        "tratamientos", "servizi", "trattamenti", "diensten", "behandelingen", "servicos", "serviços",
    ),
    "product": ("product", "products", "shop"),
    "blog": ("blog", "blogs", "news", "articles", "posts"),
}  # fmt: skip
_PRIORITY = tuple(CATEGORY_KEYS)

#: Trades named before a place in location pages ("/plumber-melbourne").
TRADES = frozenset(
    {
        "plumber", "plumbers", "electrician", "electricians", "builder", "builders", "roofer",
        "roofers", "painter", "painters", "cleaner", "cleaners", "locksmith", "locksmiths",
        "landscaper", "landscapers", "gardener", "gardeners", "dentist", "dentists", "lawyer",
        "lawyers", "solicitor", "solicitors", "accountant", "accountants", "mechanic",
        "mechanics", "carpenter", "carpenters", "tiler", "tilers", "concreter", "concreters",
        "glazier", "glaziers", "handyman", "removalist", "removalists", "movers", "chiropractor",
        "chiropractors", "physio", "physiotherapist", "physiotherapists", "vet", "vets",
        "hairdresser", "hairdressers", "barber", "barbers", "florist", "florists", "hvac",
        "contractor", "contractors", "installer", "installers",
    }
)  # fmt: skip
#: Kinds of work named before "in"/"near" and a place ("/plumbing-in-richmond").
_WORK = TRADES | {
    "plumbing", "electrical", "roofing", "painting", "cleaning", "landscaping", "gardening",
    "building", "dental", "removals", "service", "services", "repair", "repairs",
}  # fmt: skip
# Words after a trade that make it something other than a place ("/plumber-jobs").
_NOT_PLACE = frozenset(
    {"service", "services", "repair", "repairs", "tips", "guide", "jobs", "job", "careers",
     "training", "tools", "insurance", "licence", "license", "vs", "apprenticeship", "near", "in"}
)  # fmt: skip

_PAGE_EXTENSION = re.compile(r"\.(?:html?|php\d?|aspx?|jsp|shtml|cfm)$")
_HOME_SEGMENTS = frozenset({"index", "home", "default", "homepage"})
_WORD = re.compile(r"[^\W_]+")  # letters (any alphabet: "über", "öffnungszeiten") and digits
_TITLE_SEPARATOR = re.compile(r"\s+(?:\||-|—|–|·|::|»)\s+|\s*[|—–·»]\s*")
_YEAR = re.compile(r"^(?:199\d|20\d\d)$")
_MONTH = re.compile(r"^(?:0?[1-9]|1[0-2])$")
_ARCHIVE_PARENTS = frozenset({"tag", "category", "author", "product-category", "product-tag"})
_GLOB_HINT = "(give a path pattern such as '**/blog/**')"
_PAGE_QUERY = re.compile(r"(?:^|&)(?:page|paged)=\d+(?:&|$)", re.IGNORECASE)


@dataclass(frozen=True)
class TickDecision:
    """Whether a page starts ticked, and why (reason "" when ticked by default)."""

    ticked: bool
    reason: str


#: Paths unticked by default: privacy, tag, page, author, cart, checkout, my-account.
#: Cart takes two globs, so that "/cartography" is not a cart. Terms are not here: they are
#: policy pages, learned (see the module docstring).
DEFAULT_EXCLUDE = (
    "**/privacy**", "**/tag/**", "**/page/**", "**/author/**", "**/cart",
    "**/cart/**", "**/checkout**", "**/my-account**",
)  # fmt: skip


def categorize(url: str, title: str = "") -> str:
    """The category of a page, one of the contract's CATEGORIES, from its URL path and then its title."""
    segments = _segments(url)
    if not segments or (len(segments) == 1 and segments[0] in _HOME_SEGMENTS):
        return "home"
    root = segments[0]
    if root in BLOG_ROOTS or _is_dated(segments):
        return "blog"
    if root in PRODUCT_ROOTS:
        return "product"
    for segment in reversed(segments):
        words = _WORD.findall(segment)
        found = _match_words(words) or ("location" if _is_trade_place(words) else "")
        if found:
            return found
    first = _TITLE_SEPARATOR.split((title or "").strip(), maxsplit=1)[0]
    words = _WORD.findall(first.lower())
    if words == ["home"]:
        return "home"
    return _match_words(words) or "other"


def decide_tick(
    url: str,
    category: str,
    include: Sequence[str] = (),
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
) -> TickDecision:
    """Whether a discovered page starts ticked; every untick (and include) records its reason."""
    include = _check_globs("include", include)
    exclude = _check_globs("exclude", exclude)
    path = _glob_path(url)
    for pattern in include:
        if glob_match(pattern, path):
            return TickDecision(True, f"include glob '{pattern}'")
    segments = _segments(url)
    if category == "legal":
        return TickDecision(False, "legal page")
    if _is_archive(segments, urlsplit(normalize_url(url) or url).query, category):
        return TickDecision(False, "archive page")
    if category == "blog" and _is_deep_post(segments):
        return TickDecision(False, "deep blog post")
    for pattern in exclude:
        if glob_match(pattern, path):
            return TickDecision(False, f"exclude glob '{pattern}'")
    return TickDecision(True, "")


def glob_match(pattern: str, path: str) -> bool:
    """True when the URL path `path` matches `pattern` (syntax in the module docstring)."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise ValueError(f"glob: not a pattern: {pattern!r} {_GLOB_HINT}")
    return _compile(pattern.strip()).fullmatch(path or "/") is not None


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    if pattern.lower().startswith(("http://", "https://")):
        pattern = urlsplit(pattern).path or "/"
    elif not pattern.startswith(("/", "*")):
        pattern = "/" + pattern
    parts = re.split(r"(\*\*|\*)", pattern)
    regex = "".join(
        ".*" if part == "**" else "[^/]*" if part == "*" else re.escape(part) for part in parts
    )
    return re.compile(regex, re.IGNORECASE | re.DOTALL)


def _check_globs(name: str, patterns: Sequence[str]) -> tuple[str, ...]:
    if isinstance(patterns, str):
        raise ValueError(f"{name}: give a list of globs, not one string: {patterns!r}")
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern.strip():
            raise ValueError(f"{name}: not a glob: {pattern!r} {_GLOB_HINT}")
    return tuple(p.strip() for p in patterns)


def _segments(url: str) -> list[str]:
    path = urlsplit(normalize_url(url) or url or "").path
    segments = [unquote(s).lower() for s in path.split("/") if s]
    if segments:
        segments[-1] = _PAGE_EXTENSION.sub("", segments[-1])
    return [s for s in segments if s]


def _glob_path(url: str) -> str:
    return unquote(urlsplit(normalize_url(url) or url or "").path) or "/"


def _match_words(words: list[str]) -> str:
    for category in _PRIORITY:
        for key in CATEGORY_KEYS[category]:
            anchored = key.startswith("^")
            key_words = key.lstrip("^").split("-")
            if _has_run(words, key_words, anchored):
                return category
    return ""


def _has_run(words: list[str], run: list[str], anchored: bool) -> bool:
    size = len(run)
    starts = range(1) if anchored else range(len(words) - size + 1)
    return any(words[i : i + size] == run for i in starts)


def _is_trade_place(words: list[str]) -> bool:
    for i, word in enumerate(words[:-1]):
        rest = words[i + 1 :]
        if word in _WORK and rest[0] in ("in", "near") and len(rest) > 1:
            return True
        if word in TRADES and rest[0] not in _NOT_PLACE:
            return True
    return False


def _is_dated(segments: list[str]) -> bool:
    if segments and _YEAR.match(segments[0]):
        return True
    return any(
        _YEAR.match(a) and _MONTH.match(b) for a, b in zip(segments, segments[1:], strict=False)
    )


def _is_archive(segments: list[str], query: str, category: str) -> bool:
    if _PAGE_QUERY.search(query):
        return True
    for i, segment in enumerate(segments[:-1]):
        following = segments[i + 1]
        if segment in _ARCHIVE_PARENTS or (segment == "page" and following.isdigit()):
            return True
    if category != "blog":  # "/product/2001" is a product number, not a year
        return False
    for i, segment in enumerate(segments):  # date archives: the path ends at a year or month
        if _YEAR.match(segment):
            tail = segments[i + 1 :]
            return not tail or (len(tail) == 1 and bool(_MONTH.match(tail[0])))
    return False


def _is_deep_post(segments: list[str]) -> bool:
    if _is_dated(segments):
        return True
    for i, segment in enumerate(segments):
        if segment in BLOG_ROOTS:
            return len(segments) - i - 1 >= 2
    return False
