"""`render_js: auto` decided on the main content and the page's scripts (web/pagecheck.py), on small pages.

Every page here has a site header, nav, cookie banner and footer of well over 300 characters, so the
whole-page measure (`text_and_scripts`) never calls them thin: what decides is the main content.
"""

from __future__ import annotations

import pytest

from helppuff_crawl.text.boilerplate import learn_furniture
from helppuff_crawl.web.pagecheck import (
    needs_rendering,
    page_shape,
    render_reason,
    text_and_scripts,
)
from tests.js_built import MENU_MAIN, MENU_SCRIPT

URL = "https://bakery.example/menu.html"

_HEADER = """<header><a href="/" class="logo">Mr Crumb Bakery</a>
<nav><ul>{links}</ul></nav></header>
<div class="cookie-banner">We use cookies to remember your order and to count visits. Accept or manage them.</div>"""
_FOOTER = """<footer><p>Mr Crumb Bakery, 41 Main Street, Flushing NY 11354. Open every day from 7 am to 8 pm.</p>
<p>Call (718) 555 0101 or email hello@bakery.example for cakes made to order and catering for parties.</p>
<p>&copy; 2025 Mr Crumb Bakery. All rights reserved. Designed by a friend of the family.</p>
<ul>{links}</ul></footer>"""
_LINKS = "".join(f'<li><a href="/{name.lower()}.html">{name}</a></li>'
                 for name in ("Home", "Menu", "About", "Location", "Contact", "Catering", "Gallery", "Careers"))


def _page(main: str, *, head: str = "", end: str = "") -> str:
    """A page of the site: `head` in <head>, `main` between the header and footer, `end` before </body>."""
    return (f"<!DOCTYPE html><html><head><title>Page</title>{head}</head><body>"
            f"{_HEADER.format(links=_LINKS)}{main}{_FOOTER.format(links=_LINKS)}{end}</body></html>")


_MENU = _page(MENU_MAIN, head='<script defer src="script.js"></script>', end=MENU_SCRIPT)

_ARTICLE_TEXT = " ".join(
    f"<p>Paragraph {n}: our sourdough starts two days before it is baked, with flour milled upstate, "
    "water, salt and a starter that has been fed every morning since the bakery opened in 1998.</p>"
    for n in range(8)
)
_ANALYTICS = """<script async src="https://www.googletagmanager.com/gtag/js?id=G-ABC123"></script>
<script>window.dataLayer = window.dataLayer || []; function gtag(){dataLayer.push(arguments);}
gtag('js', new Date()); gtag('config', 'G-ABC123');</script>
<script>(function(w,d,s,l,i){w[l]=w[l]||[];w[l].push({'gtm.start': new Date().getTime(),event:'gtm.js'});
var f=d.getElementsByTagName(s)[0], j=d.createElement(s); j.async=true;
j.src='https://www.googletagmanager.com/gtm.js?id='+i; f.parentNode.insertBefore(j,f);
})(window,document,'script','dataLayer','GTM-XYZ');</script>
<script>!function(f,b,e,v,n,t,s){if(f.fbq)return;n=f.fbq=function(){n.callMethod?n.callMethod.apply(n,arguments)
:n.queue.push(arguments)};t=b.createElement(e);t.async=!0;t.src=v;s=b.getElementsByTagName(e)[0];
s.parentNode.insertBefore(t,s)}(window,document,'script','https://connect.facebook.net/en_US/fbevents.js');
fbq('init', '1234567890'); fbq('track', 'PageView');</script>
<script src="https://connect.facebook.net/en_US/sdk.js"></script>"""
_CONTACT_MAIN = "<main><h1>Contact</h1><p>Call (718) 555 0101.</p><form><label>Name<input></label></form></main>"
_FOOTER_SCRIPT = '<script src="/assets/js/main.js"></script>'
_MENU_TOGGLE = "<script>document.querySelector('.nav-toggle').addEventListener('click', toggleNav);</script>"


def test_the_furniture_is_long_enough_for_the_whole_page_measure_to_miss_every_thin_page() -> None:
    chars, scripts = text_and_scripts(_MENU)
    assert chars >= 300 and scripts == 2  # the rule on the whole text would not render the menu
    assert text_and_scripts(_page(_CONTACT_MAIN, end=_FOOTER_SCRIPT))[0] >= 300


@pytest.mark.parametrize(("html", "reason"), [
    # Shaped like mr-tu-bakery's menu: category labels, an empty list an inline script fills from JSON.
    (_MENU, "an inline script builds the page"),
    (_page(MENU_MAIN, end=MENU_SCRIPT), "an inline script builds the page"),  # with that one script alone
    # The script written after </html> (as the bakery's is): libxml2 keeps it in a second root.
    (_MENU.replace(MENU_SCRIPT, "").replace("</html>", "</html>" + MENU_SCRIPT), "an inline script builds the page"),
    # jQuery's $(el).load(url) fetches and writes in one call.
    (_page(MENU_MAIN, end="<script>$('#menu-content').load('/menu-fragment.html');</script>"),
     "an inline script builds the page"),
    # A long article: its analytics change nothing.
    (_page(f"<main><article><h1>Our bread</h1>{_ARTICLE_TEXT}</article></main>", head=_ANALYTICS), ""),
    # A long article with a script building a widget: the main content is already there.
    (_page(f"<main><article><h1>Our bread</h1>{_ARTICLE_TEXT}</article></main>", end=MENU_SCRIPT), ""),
    # A thin page whose only scripts are analytics, a tag manager and a pixel is not built by them.
    (_page(_CONTACT_MAIN, head=_ANALYTICS), ""),
    # A short contact page with a footer script (a menu toggle): as fetched.
    (_page(_CONTACT_MAIN, end=_FOOTER_SCRIPT), ""),
    # ... and with inline code beside it: two page scripts, enough to have built it.
    (_page(_CONTACT_MAIN, end=_FOOTER_SCRIPT + _MENU_TOGGLE), "2 page scripts"),
    # A map widget and a captcha from other hosts do not build a contact page.
    (_page(_CONTACT_MAIN, end='<script src="https://maps.googleapis.com/maps/api/js?key=k"></script>'
                              '<script src="https://www.google.com/recaptcha/api.js"></script>'), ""),
    # Data and configuration are not code: JSON-LD, a template, `var settings = {...}`.
    (_page(_CONTACT_MAIN, head='<script type="application/ld+json">{"@type": "Bakery"}</script>'
                               '<script type="text/template"><div>{{ name }}</div></script>'
                               '<script>var wpcf7 = {"api": {"root": "/wp-json/"}};</script>', end=_FOOTER_SCRIPT), ""),
    # Cloudflare's /cdn-cgi/ scripts (email decoding) are on every proxied page: not the page's code.
    (_page(_CONTACT_MAIN, end=_FOOTER_SCRIPT + '<script src="/cdn-cgi/scripts/5c5dd728/email-decode.min.js"></script>'),
     ""),
    # An app shell: an empty root and one bundle, from the site or from a CDN.
    (_page('<div id="root"></div>', end='<script type="module" src="/assets/index-4f2a.js"></script>'),
     "an empty app root"),
    (_page('<div id="app"><div class="spinner"></div></div>',
           end='<script src="https://cdn.example.net/app.js"></script>'), "an empty app root"),
    (_page("<app-root></app-root>", end='<script src="/main.3c1f.js" type="module"></script>'), "an empty app root"),
    (_page("<div id='root'></div>", end='<script src="https://www.googletagmanager.com/gtm.js"></script>'), ""),
    # An empty root inside the nav is the nav's (a menu widget), not the page's.
    (_page('<nav><div id="app"></div></nav>' + _CONTACT_MAIN, end='<script src="/assets/app.js"></script>'), ""),
    # A root the server already filled (server-side rendering) is no shell.
    (_page(f'<div id="__next"><main><h1>Our bread</h1>{_ARTICLE_TEXT}</main></div>',
           end='<script src="/_next/static/chunks/main.js"></script>'), ""),
    (_page('<div id="__next"><p>Closed today.</p></div>',
           end='<script src="/_next/static/chunks/main.js"></script>'), ""),
    # A <noscript> asking for JavaScript.
    (_page("<noscript>You need to enable JavaScript to run this app.</noscript><div class='page'></div>",
           end='<script src="/static/js/main.js"></script>'), "a <noscript> asks for JavaScript"),
    # With no script at all, a browser has nothing to run.
    (_page('<div id="root"></div>'), ""),
    ("", ""),
])
def test_render_reason(html: str, reason: str) -> None:
    why = render_reason(html, url=URL)
    assert (why.split(", ", 1)[1] if why else "") == reason, why
    assert needs_rendering(html, url=URL) is bool(reason)


def test_the_reason_gives_the_main_content_size() -> None:
    assert page_shape(_MENU, URL).main_chars < 60  # "Menu All Pastry Cake Bread Drinks Page 1"
    assert render_reason(_MENU, url=URL).startswith(f"{page_shape(_MENU, URL).main_chars} characters of main content")


def test_scripts_are_counted_by_kind() -> None:
    shape = page_shape(_page(_CONTACT_MAIN, head=_ANALYTICS, end=_FOOTER_SCRIPT + _MENU_TOGGLE
                             + '<script src="https://www.bakery.example/js/cart.js"></script>'
                             + '<script src="https://unpkg.com/lucide@latest"></script>'), URL)
    # Page: main.js, the inline toggle, www.'s cart.js (www. and the apex are one site). Library: lucide.
    # Tracking: gtag.js, the gtag, GTM and pixel snippets, the Meta SDK.
    assert (shape.page_scripts, shape.library_scripts, shape.tracking_scripts) == (3, 1, 5)
    assert not shape.builds and shape.app_shell == ""


def test_the_main_content_is_measured_only_when_the_scripts_could_have_built_the_page() -> None:
    one_script = _page(_CONTACT_MAIN, end=_FOOTER_SCRIPT)
    assert page_shape(one_script, URL, min_scripts=2).main_chars is None  # one page script: nothing to measure
    assert page_shape(one_script, URL, min_scripts=1).main_chars == page_shape(one_script, URL).main_chars
    assert page_shape(_MENU, URL, min_scripts=2).main_chars == page_shape(_MENU, URL).main_chars  # it builds


def test_the_thresholds_are_the_settings() -> None:
    two_scripts = _page(_CONTACT_MAIN, end=_FOOTER_SCRIPT + _MENU_TOGGLE)
    assert needs_rendering(two_scripts, url=URL, min_scripts=2)
    assert not needs_rendering(two_scripts, url=URL, min_scripts=3)
    assert needs_rendering(_page(_CONTACT_MAIN, end=_FOOTER_SCRIPT), url=URL, min_scripts=1)
    chars = page_shape(_MENU, URL).main_chars
    assert needs_rendering(_MENU, chars + 1, url=URL) and not needs_rendering(_MENU, chars, url=URL)


def test_the_site_s_repeated_blocks_count_only_when_known() -> None:
    # A long call-to-action strip in a plain <div> on every page: page furniture by no markup.
    strip = ('<div class="cta"><h2>Order a cake</h2><p>' + "Birthday, wedding and office cakes made to order, "
             "delivered across Queens and Brooklyn, with forty flavours and gluten-free sponges. " * 3 + "</p></div>")
    pages = [_page(f"<main><h1>{name}</h1><p>{name} at Mr Crumb.</p>{strip}</main>")
             for name in ("Cakes", "Bread", "Tea")]
    thin = _page(f"<main>{MENU_MAIN}{strip}</main>", end=MENU_SCRIPT)
    assert render_reason(thin, url=URL) == ""  # the strip looks like content to one page alone
    furniture = learn_furniture(pages)
    assert furniture.drop
    assert "an inline script builds the page" in render_reason(thin, url=URL, drop_blocks=furniture.drop)
