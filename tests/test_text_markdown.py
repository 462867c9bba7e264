"""helppuff_crawl.text.markdown: main content, cleaning, FAQ markup, pruning and Markdown, on inline HTML."""

from __future__ import annotations

import pytest

from helppuff_crawl.text.markdown import extract, parse_html, to_markdown

URL = "https://acme.example/page"

# -- which element is the root ---------------------------------------------------------------------------------

ROOTS = [
    pytest.param(
        "<body><header><h1>Acme</h1><nav><a href='/'>Home</a></nav></header>"
        "<main><h1>Hot water</h1><p>We fix it.</p></main><footer>(c) Acme</footer></body>",
        "main", "# Hot water\n\nWe fix it.", id="main",
    ),
    pytest.param(
        "<body><div class='top'>Top bar text</div><div role='main'><h2>Welcome</h2><p>Content here.</p></div></body>",
        "role-main", "## Welcome\n\nContent here.", id="role-main",
    ),
    pytest.param(
        "<body><div>Menu stuff</div><article><h1>News</h1><p>Story text.</p></article></body>",
        "article", "# News\n\nStory text.", id="article",
    ),
    pytest.param(
        "<body><div id='content'><h1>About</h1><p>We are a family business.</p></div></body>",
        "body", "# About\n\nWe are a family business.", id="no-container",
    ),
    pytest.param(
        # cards are <article>s, but none holds a quarter of the page: the body is the root
        "<body><h1>Our work</h1><p>Decks, fences and pergolas across the city for twenty years.</p>"
        "<article>Deck</article><article>Fence</article></body>",
        "body", "# Our work\n\nDecks, fences and pergolas across the city for twenty years.\n\nDeck\n\nFence",
        id="cards-are-not-the-root",
    ),
    pytest.param(
        "<body><main><p>Hi</p></main><div>" + "Long text outside the tiny main element. " * 5 + "</div></body>",
        "body", "Hi\n\n" + ("Long text outside the tiny main element. " * 5).strip(), id="main-not-substantial",
    ),
    pytest.param(
        # a page of stories: the first substantial <main> is the page's own
        "<body><main><h1>First story</h1><p>Text of the first story.</p></main>"
        "<main><h1>Next story</h1><p>Text of the next story, which is a little longer.</p></main></body>",
        "main", "# First story\n\nText of the first story.", id="first-main",
    ),
    pytest.param(
        # a location page's address, phone and hours are <article> boxes beside a longer note: all are content
        "<body><section class='map-title'>Flushing</section><div class='map-details'>"
        "<article><span>136-29 Roosevelt Ave, Flushing, NY</span></article>"
        "<article><span>Tel: (718) 353-0832</span></article><article><span>Monday to Sunday: 6 AM - 6 PM</span>"
        "</article><article>*Hours may be subject to change due to weather, holidays, or unforeseen events. "
        "We thank you for your understanding.</article></div></body>",
        "body", "Flushing\n\n136-29 Roosevelt Ave, Flushing, NY\n\nTel: (718) 353-0832\n\n"
        "Monday to Sunday: 6 AM - 6 PM\n\n*Hours may be subject to change due to weather, holidays, or "
        "unforeseen events. We thank you for your understanding.", id="article-boxes-are-all-content",
    ),
    pytest.param(
        # two stories in two sections, their headings outside the <article>s: both stay, and the headings
        "<body><section><h2>About us</h2><article>We bake buns and tarts every morning in Flushing.</article>"
        "</section><section><h2>Our history</h2><article>Opened by the Tu family in 1998 on Roosevelt Ave.</article>"
        "</section></body>",
        "body", "## About us\n\nWe bake buns and tarts every morning in Flushing.\n\n## Our history\n\n"
        "Opened by the Tu family in 1998 on Roosevelt Ave.", id="articles-in-sections",
    ),
    pytest.param(
        # one <article> without a heading that holds most of the text is still the page's content
        "<body><div>Menu stuff</div><article><p>" + "The story goes on and on. " * 4 + "</p></article></body>",
        "article", ("The story goes on and on. " * 4).strip(), id="article-without-heading-most-text",
    ),
    pytest.param(
        # ... but not when another headingless box beside it is content too
        "<body><article><p>" + "The story goes on and on. " * 4 + "</p></article><article>Tel: 5550100</article>"
        "</body>",
        "body", ("The story goes on and on. " * 4).strip() + "\n\nTel: 5550100", id="one-box-of-two",
    ),
    pytest.param(
        # a page of teasers with headings: the first substantial one is the root, as before
        "<body><div>Latest posts from the blog</div><article><h2>Spring menu</h2><p>New tarts and a longer list "
        "of buns.</p></article><article><h2>Holiday hours</h2><p>Closed on the first.</p></article></body>",
        "article", "## Spring menu\n\nNew tarts and a longer list of buns.", id="teasers-with-headings",
    ),
]


@pytest.mark.parametrize(("html", "method", "markdown"), ROOTS)
def test_root(html: str, method: str, markdown: str) -> None:
    result = extract(html, URL)
    assert (result.method, result.markdown) == (method, markdown)


# -- what cleaning drops and keeps --------------------------------------------------------------------------------

CLEANING = [
    pytest.param(
        "<body><script>var x = 1;</script><style>p {}</style><noscript>Enable JS</noscript>"
        "<template><p>T</p></template><svg><text>S</text></svg><iframe src='x'>F</iframe>"
        "<p>Real text.</p><img src='a.png' alt='A picture'><button>Click</button></body>",
        "Real text.", id="non-text",
    ),
    pytest.param(
        "<body><header><p>Call us today</p></header><main><header><h1>Hot water</h1>"
        "<p>Fast repairs.</p></header><p>We fix it.</p><aside>Side note</aside>"
        "<form><label>Name</label><input></form></main><footer>(c) Acme</footer></body>",
        "# Hot water\n\nFast repairs.\n\nWe fix it.", id="header-in-main-stays",
    ),
    pytest.param(
        "<body><div role='banner'>Banner</div><div role='navigation'>Nav</div><p>Text.</p>"
        "<div role='contentinfo'>Info</div><div role='complementary'>Aside</div><div role='search'>Search</div></body>",
        "Text.", id="roles",
    ),
    pytest.param(
        "<body><main><p>Text.</p></main><div id='CybotCookiebotDialog'><p>We use cookies.</p></div>"
        "<div class='cookie-notice'>Accept</div><div class='cky-consent-bar'>Consent</div>"
        "<div class='gdpr-box'>GDPR</div><div class='modal fade'>Modal</div><div class='popup'>Popup</div>"
        "<div id='newsletterSignup'>Join</div><dialog>Dialog</dialog><div role='dialog'>Role dialog</div>"
        "<div aria-modal='true'>Aria modal</div><div role='alertdialog'>Alert</div></body>",
        "Text.", id="banners-and-modals",
    ),
    pytest.param(
        "<body><main><p>Text.</p><p hidden>Hidden</p><p aria-hidden='true'>Icon</p>"
        "<p style='display: none'>None</p><p style='visibility:hidden'>Invisible</p>"
        "<span class='sr-only'>Skip to content</span></main></body>",
        "Text.", id="hidden",
    ),
    pytest.param(
        # a state class on a wrapper, a bakery's cookies, an inactive tab: all content
        "<body class='modal-open'><main class='has-popup'><h1>Prices</h1>"
        "<section class='cookies'><h2>Cookies we bake</h2><p>Choc chip.</p></section>"
        "<div role='tabpanel' hidden><p>Tab two.</p></div></main></body>",
        "# Prices\n\n## Cookies we bake\n\nChoc chip.\n\nTab two.", id="legitimate-content-stays",
    ),
    pytest.param(
        # ASP.NET wraps the whole page in a <form>
        "<body><form id='aspnetForm'><div class='page'><h1>Smith Dental</h1>"
        "<p>Family dentistry in Geelong since 1990.</p></div></form></body>",
        "# Smith Dental\n\nFamily dentistry in Geelong since 1990.", id="page-form-stays",
    ),
    pytest.param(
        "<body><main><h1>News</h1><div class='newsletter-archive'>" + "<p>Issue text for the month.</p>" * 60
        + "</div></main><div class='newsletter'>Join our list</div></body>",
        "# News\n\n" + "\n\n".join(["Issue text for the month."] * 60), id="long-banner-named-content-stays",
    ),
]


@pytest.mark.parametrize(("html", "markdown"), CLEANING)
def test_cleaning(html: str, markdown: str) -> None:
    assert extract(html, URL).markdown == markdown


# -- small-business structure ------------------------------------------------------------------------------------

STRUCTURE = [
    pytest.param(
        "<main><h2>Opening hours</h2><table><tr><td>Monday</td><td>8:00</td><td>17:00</td></tr>"
        "<tr><td>Saturday</td><td>9:00</td><td>12:00</td></tr><tr><td>Sunday</td><td>Closed</td><td></td></tr>"
        "</table></main>",
        "## Opening hours\n\n| Monday | 8:00 | 17:00 |\n| --- | --- | --- |\n| Saturday | 9:00 | 12:00 |\n"
        "| Sunday | Closed |  |",
        id="hours-table-every-column",
    ),
    pytest.param(
        "<main><table><thead><tr><th>Job</th><th>Price</th></tr></thead><tbody><tr><td>Call-out</td>"
        "<td>$99</td></tr><tr><td>Gas | electric</td><td>$150</td></tr></tbody></table></main>",
        "| Job | Price |\n| --- | --- |\n| Call-out | $99 |\n| Gas \\| electric | $150 |",
        id="price-table-header-and-rows",
    ),
    pytest.param(
        "<main><table><thead><tr><th>Item</th><th>Fee</th></tr></thead><tbody>"
        "<tr><th colspan='2'>Preventive</th></tr><tr><td>Scale and clean</td><td>$115</td></tr></tbody>"
        "<tbody><tr><th colspan='2'>Extractions</th></tr><tr><td>Simple</td><td>$220</td></tr></tbody>"
        "</table></main>",
        "| Item | Fee |\n| --- | --- |\n| Preventive | |\n| Scale and clean | $115 |\n| Extractions | |\n"
        "| Simple | $220 |",
        id="section-label-rows-inside-the-body-are-rows",
    ),
    pytest.param(
        "<main><table><tr><td><h3>Layout</h3><p>Left column.</p></td><td><p>Right column.</p></td></tr>"
        "</table></main>",
        "### Layout\n\nLeft column.\n\nRight column.", id="layout-table-unwrapped",
    ),
    pytest.param(
        "<main><h2>Services</h2><ul><li>Drains</li><li>Hot water<ul><li>Gas</li><li>Electric</li></ul></li>"
        "<li><a href='/taps'>Taps</a></li></ul><ol><li>Call</li><li>Book</li></ol></main>",
        "## Services\n\n- Drains\n- Hot water\n  - Gas\n  - Electric\n- Taps\n\n1. Call\n2. Book",
        id="service-list-every-item",
    ),
    pytest.param(
        "<main><h1>Title</h1>\n\n\n<p>Line one<br>line two with <a href='/x'>a link</a> and <strong>bold</strong>"
        " and <em>it</em>.</p><div></div><div></div><p>   </p><h4>Small</h4><p>x_y*z</p><hr>"
        "<pre>code\n  block</pre></main>",
        "# Title\n\nLine one\nline two with a link and **bold** and *it*.\n\n#### Small\n\nx_y*z\n\n---\n\n"
        "```\ncode\n  block\n```",
        id="markdown-conventions",
    ),
    pytest.param(
        "<main><h2>Sprechzeiten</h2><div class='hours-row'><span class='day'>Montag</span>"
        "<span class='time'>10:00 – 13:00</span></div><div class='hours-row'><span>Freitag</span>"
        "<span><em>nach Vereinbarung</em></span></div></main>",
        "## Sprechzeiten\n\nMontag 10:00 – 13:00\n\nFreitag *nach Vereinbarung*",
        id="cells-of-a-row-are-two-words",
    ),
    pytest.param(
        "<main><p><b>un</b>believable, <strong>bold</strong>. <span class='drop'>H</span><span>ello</span></p>"
        "<p><span>Say</span><span>hi</span> there</p><div><span>$</span><span>99</span></div></main>",
        "**un**believable, **bold**. Hello\n\nSayhi there\n\n$99",
        id="a-word-split-in-running-text-stays-whole",
    ),
]


@pytest.mark.parametrize(("html", "markdown"), STRUCTURE)
def test_structure(html: str, markdown: str) -> None:
    assert extract(html, URL).markdown == markdown


def test_small_business_landing_page_is_kept_whole() -> None:
    # Badges, cards and quotes are what trafilatura's article scoring drops; a landing page keeps them.
    html = (
        "<html><head><title>GA Plumbing</title></head><body><main><section><h1>Plumbing done right.</h1>"
        "<p>24/7 emergency service, same-day appointments, and no-surprise pricing.</p><ul class='badges'>"
        "<li>Owner-Operated</li><li>Licensed &amp; Insured</li><li>Financing Available</li></ul></section>"
        "<section><h2>Popular Services</h2><article><h3>Drain Cleaning</h3><p>Clogs cleared fast with auger/jetting."
        " Camera inspections on request.</p></article><article><h3>Water Heaters</h3><p>Repair or replace tank &amp;"
        " tankless. Same-day replacements available.</p></article></section><section><h2>Pricing</h2><article>"
        "<h3>Drain Clear</h3><p>$129-$249</p><p>Single fixture, standard access. No surprises.</p></article>"
        "</section><section><h2>What customers say</h2><blockquote>Showed up fast at 10pm and stopped a major leak."
        " Professional and kind.</blockquote></section></main></body></html>"
    )
    result = extract(html, URL)
    assert result.method == "main"
    assert result.markdown == (
        "# Plumbing done right.\n\n24/7 emergency service, same-day appointments, and no-surprise pricing.\n\n"
        "- Owner-Operated\n- Licensed & Insured\n- Financing Available\n\n## Popular Services\n\n"
        "### Drain Cleaning\n\nClogs cleared fast with auger/jetting. Camera inspections on request.\n\n"
        "### Water Heaters\n\nRepair or replace tank & tankless. Same-day replacements available.\n\n"
        "## Pricing\n\n### Drain Clear\n\n$129-$249\n\nSingle fixture, standard access. No surprises.\n\n"
        "## What customers say\n\n> Showed up fast at 10pm and stopped a major leak. Professional and kind."
    )


ARTICLE = (
    "<html><head><title>When to replace a hot water system | Acme Plumbing</title></head><body><main>"
    "<h1>When to replace a hot water system</h1><p class='byline'>By Sam Smith · 3 March 2024</p>"
    "<p>Hot water systems last about twelve years, and most fail slowly: the water takes longer to heat, the tank"
    " starts to rumble, and rust shows in the first bucket from the tap.</p>"
    "<p>When a tank leaks from the bottom it cannot be repaired and has to be replaced, but a leaking valve or a"
    " failed thermostat is a quick fix that costs far less than a new system.</p>"
    "<h2>Repair prices</h2><table><tr><th>Job</th><th>Price</th></tr><tr><td>Thermostat</td><td>$180</td></tr>"
    "<tr><td>Valve</td><td>$120</td></tr></table>"
    "<p>We carry the common parts for gas and electric systems in the van, so most repairs are finished on the"
    " first visit without a second call-out fee.</p>"
    "<div class='share'>Share <a href='https://facebook.com/x'>Facebook</a> <a href='https://x.com/y'>X</a></div>"
    "<h3>Related articles</h3><ul>"
    "<li><a href='/blog/a'>Gas or electric: which hot water system is cheaper to run</a></li>"
    "<li><a href='/blog/b'>Five signs your drains are blocked and what to do about it</a></li>"
    "<li><a href='/blog/c'>How to read your water meter and find a hidden leak</a></li></ul>"
    "</main></body></html>"
)


def test_article_is_pruned_by_trafilatura_and_keeps_its_table() -> None:
    result = extract(ARTICLE, URL)
    assert result.method == "main+trafilatura"
    assert result.markdown == (
        "# When to replace a hot water system\n\n"
        "Hot water systems last about twelve years, and most fail slowly: the water takes longer to heat, the tank"
        " starts to rumble, and rust shows in the first bucket from the tap.\n\n"
        "When a tank leaks from the bottom it cannot be repaired and has to be replaced, but a leaking valve or a"
        " failed thermostat is a quick fix that costs far less than a new system.\n\n"
        "## Repair prices\n\n| Job | Price |\n| --- | --- |\n| Thermostat | $180 |\n| Valve | $120 |\n\n"
        "We carry the common parts for gas and electric systems in the van, so most repairs are finished on the"
        " first visit without a second call-out fee."
    )


# -- FAQ markup ---------------------------------------------------------------------------------------------------

FAQ = [
    pytest.param(
        "<main><div class='accordion'><div class='accordion-item'><h2 class='accordion-header'>"
        "<button class='accordion-button' aria-expanded='true' aria-controls='c1'>Do you do emergencies?</button>"
        "</h2><div id='c1' class='accordion-collapse collapse show'><div class='accordion-body'>Yes, 24/7.</div>"
        "</div></div><div class='accordion-item'><h2 class='accordion-header'><button aria-expanded='false' "
        "aria-controls='c2'>What areas?</button></h2><div id='c2' class='collapse' hidden><div><p>Richmond.</p>"
        "<p>And Hawthorn.</p></div></div></div></div></main>",
        "**Do you do emergencies?**\nYes, 24/7.\n\n**What areas?**\nRichmond.\n\nAnd Hawthorn.",
        [("Do you do emergencies?", "Yes, 24/7."), ("What areas?", "Richmond. And Hawthorn.")],
        id="bootstrap-accordion",
    ),
    pytest.param(
        "<main><div class='faq'><div class='faq-item'><button class='faq-question'>How much is a call-out?"
        "</button><div class='faq-answer' hidden><p>$99.</p></div></div></div></main>",
        "**How much is a call-out?**\n$99.", [("How much is a call-out?", "$99.")], id="button-and-hidden-panel",
    ),
    pytest.param(
        "<main><div class='elementor-toggle'><div class='elementor-toggle-item'><div class='elementor-tab-title' "
        "role='button' aria-controls='t1'><span class='icon'><i></i></span><a class='elementor-toggle-title'>"
        "What areas do you cover?</a></div><div id='t1' class='elementor-tab-content' style='display:none'>"
        "We cover Melbourne.</div></div></div></main>",
        "**What areas do you cover?**\nWe cover Melbourne.", [("What areas do you cover?", "We cover Melbourne.")],
        id="elementor-toggle",
    ),
    pytest.param(
        "<main><div class='accordion'><h3>Do you sell parts?</h3><div>No, only repairs.</div>"
        "<h3>Are you licensed?</h3><div><p>Yes.</p><p>Licence 123.</p></div></div></main>",
        "**Do you sell parts?**\nNo, only repairs.\n\n**Are you licensed?**\nYes.\n\nLicence 123.",
        [("Do you sell parts?", "No, only repairs."), ("Are you licensed?", "Yes. Licence 123.")],
        id="heading-accordion",
    ),
    pytest.param(
        "<main><div class='schema-faq'><div class='schema-faq-section'><strong class='schema-faq-question'>"
        "Is parking available?</strong> <p class='schema-faq-answer'>Yes, out the back.</p></div></div></main>",
        "**Is parking available?**\nYes, out the back.", [("Is parking available?", "Yes, out the back.")],
        id="question-class",
    ),
    pytest.param(
        "<main><h2>Questions</h2><details><summary>Do you <b>charge</b> a call-out fee?</summary>Yes, $99, "
        "<em>waived</em> if you go ahead.</details><details open><summary>Warranty</summary><p>Two years.</p>"
        "</details></main>",
        "## Questions\n\n**Do you charge a call-out fee?**\nYes, $99, *waived* if you go ahead.\n\n"
        "**Warranty**\nTwo years.",
        # "Warranty" is a bold term but not a question: not a FAQ pair
        [("Do you charge a call-out fee?", "Yes, $99, waived if you go ahead.")],
        id="details",
    ),
    pytest.param(
        "<main><dl><dt>Do you work weekends?</dt><dd>Saturdays only.</dd><dt>Cash?</dt><dd>Card only.</dd></dl>"
        "</main>",
        "**Do you work weekends?**\nSaturdays only.\n\n**Cash?**\nCard only.",
        [("Do you work weekends?", "Saturdays only."), ("Cash?", "Card only.")], id="definition-list",
    ),
    pytest.param(
        "<main><section class='faq'><h2>FAQ</h2><h3>Parking</h3><p>Out the back.</p><p>Free.</p></section></main>",
        "## FAQ\n\n**Parking**\nOut the back.\n\nFree.", [("Parking", "Out the back. Free.")],
        id="inside-faq-section-without-question-mark",
    ),
    pytest.param(
        "<header><button class='menu-toggle' aria-expanded='false'>Menu</button><ul><li><a href='/a'>A</a></li>"
        "</ul></header><main><p>Content.</p></main>",
        "Content.", [], id="menu-toggle-is-not-a-question",
    ),
    pytest.param(
        "<main><p>Content.</p><div class='toggle-wrap'><button aria-expanded='false'>Services</button><ul>"
        "<li><a href='/a'>A</a></li><li><a href='/b'>B</a></li><li><a href='/c'>C</a></li><li><a href='/d'>D</a></li>"
        "</ul></div></main>",
        "Content.\n\n- A\n- B\n- C\n- D", [], id="toggle-of-links-is-not-a-question",
    ),
]


@pytest.mark.parametrize(("html", "markdown", "pairs"), FAQ)
def test_faq_markup(html: str, markdown: str, pairs: list[tuple[str, str]]) -> None:
    result = extract(html, URL)
    assert (result.markdown, result.faq) == (markdown, pairs)


# -- title, description, links, input ---------------------------------------------------------------------------------

METADATA = [
    pytest.param(
        "<head><title>  Hot   water\n| Acme </title><meta property='og:title' content='OG'>"
        "<meta name='Description' content=' Fast  repairs '></head><body><h1>H</h1></body>",
        "Hot water | Acme", "Fast repairs", id="title-and-description",
    ),
    pytest.param(
        "<head><meta property='og:title' content='OG title'><meta property='og:description' content='OG desc'>"
        "</head><body><h1>H</h1></body>",
        "OG title", "OG desc", id="open-graph",
    ),
    pytest.param("<body><h1> First <b>heading</b></h1><h1>Second</h1></body>", "First heading", "", id="h1"),
]


@pytest.mark.parametrize(("html", "title", "description"), METADATA)
def test_title_and_description(html: str, title: str, description: str) -> None:
    result = extract(html, URL)
    assert (result.title, result.description) == (title, description)


def test_links_are_absolute_in_order_once_without_fragments() -> None:
    html = (
        "<body><nav><a href='/about'>About</a><a href='services/'>Services</a></nav><main>"
        "<a href='https://other.example/x#top'>X</a><a href='/about#team'>Team</a><a href='#top'>Top</a>"
        "<a href='mailto:a@b.c'>Mail</a><a href='tel:123'>Call</a><a href='javascript:void(0)'>JS</a>"
        "<a href=' /contact '>Contact</a><a>No href</a></main></body>"
    )
    assert extract(html, "https://acme.example/dir/page").links == [
        "https://acme.example/about", "https://acme.example/dir/services/", "https://other.example/x",
        "https://acme.example/contact",
    ]


def test_links_use_base_href() -> None:
    html = "<head><base href='https://cdn.example/root/'></head><body><a href='a'>A</a></body>"
    assert extract(html, URL).links == ["https://cdn.example/root/a"]


def test_bytes_are_decoded_from_their_meta_charset() -> None:
    html = "<html><head><meta charset='windows-1252'><title>Café</title></head><body><p>Crème brûlée</p></body>"
    result = extract(html.encode("cp1252"), URL)
    assert (result.title, result.markdown) == ("Café", "Crème brûlée")


@pytest.mark.parametrize("html", ["", "   ", b"", b"\x00"])
def test_empty_input(html: str | bytes) -> None:
    result = extract(html, URL)
    assert (result.method, result.markdown, result.title, result.links) == ("empty", "", "", [])


def test_xml_declaration_and_control_characters_are_tolerated() -> None:
    html = "<?xml version='1.0' encoding='utf-8'?>\n<html><body><p>A\x0bB</p></body></html>"
    assert extract(html, URL).markdown == "AB"


def test_drop_blocks_removes_fingerprinted_blocks() -> None:
    from helppuff_crawl.text.boilerplate import blocks

    cta = "<section class='cta'><h2>Need a plumber?</h2><p>Book online today.</p></section>"
    html = f"<main><h1>Drains</h1><p>We clear drains.</p>{cta}</main>"
    fingerprints = frozenset(b.fingerprint for b in blocks(html) if b.tag == "section")
    assert extract(html, URL).markdown.endswith("Book online today.")
    assert extract(html, URL, drop_blocks=fingerprints).markdown == "# Drains\n\nWe clear drains."


def test_to_markdown_converts_an_element() -> None:
    doc = parse_html("<div><h2>Hi</h2><ul><li>a</li><li>b</li></ul></div>")
    assert doc is not None
    assert to_markdown(doc.find(".//div")) == "## Hi\n\n- a\n- b"


def test_converter_tags_find_their_parents_as_bs4_does():
    """The converter's Tag class walks up for `find_parent(name)`; it finds what bs4's own search finds."""
    from bs4 import BeautifulSoup, Tag

    from helppuff_crawl.text.markdown import _CONVERTER, _Tag

    assert _CONVERTER.options["bs4_options"]["element_classes"] == {Tag: _Tag}

    markup = ("<div class='a'><pre><code><b>x</b></code></pre><section class='b'><p><i>y</i></p></section>"
              "<table><tr><td><span>z</span></td></tr></table></div>")
    ours = BeautifulSoup(markup, "lxml", element_classes={Tag: _Tag})
    theirs = BeautifulSoup(markup, "lxml")
    assert all(type(tag) is _Tag for tag in ours.find_all(True))
    for name in ("pre", "table", "section", "div", "ul", "body", "html"):
        for mine, bs4s in zip(ours.find_all(True), theirs.find_all(True), strict=True):
            found, expected = mine.find_parent(name), bs4s.find_parent(name)
            assert (found is None) == (expected is None)
            if found is not None:
                assert str(found) == str(expected)
    # any other question goes to bs4's own search
    assert ours.find("i").find_parent("section", class_="b")["class"] == ["b"]
    assert ours.find("i").find_parent("section", class_="c") is None
    assert ours.find("i").find_parent(["section", "div"]).name == "section"
