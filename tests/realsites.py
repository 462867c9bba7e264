"""The real small-business sites of ../shared/data/sites, and how their hosts serve them.

Each folder is a copy of a real site's repository (its SOURCES.md says which). `REAL_SITES` names,
for each, the production hosts its pages link to absolutely (found by grepping the folder: its
sitemap, canonical links, JSON-LD and nav links) and how its host answers paths with no file, so
that tests/sitesserver.py SiteServer serves it on 127.0.0.1 as the host would:

    server = real_site_server("eagle-eye-backflow")   # None when ../shared/data/sites is absent
    with server:
        ...  # https://eagleeyebackflow.ca/faq.html in its pages is now server.url + "/faq.html"

Used by tests/test_real_sites.py, bench/retrieval.py and bench/same_knowledge.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.sitesserver import SiteServer

ROOT = Path(__file__).resolve().parent.parent
SHARED_SITES = ROOT.parent / "shared" / "data" / "sites"


@dataclass(frozen=True)
class RealSite:
    folder: str  # under ../shared/data/sites; also the site's name in the knowledge base
    domains: tuple[str, ...]  # production hosts its files link to absolutely
    fallback: str | None = None  # a single-page app's host answers extension-less paths with this file
    host: str = ""  # where it is hosted, as its repository shows it (for the reader)


REAL_SITES: dict[str, RealSite] = {
    site.folder: site
    for site in (
        # Only relative links; its own links to github.com and yelp.com are other sites.
        RealSite("mr-tu-bakery", (), host="GitHub Pages"),
        RealSite("zahnarzt-werland", ("www.zahnarztpraxis-werland.de",), host="a static web space"),
        RealSite("eagle-eye-backflow", ("eagleeyebackflow.ca",), host="a static host with pretty URLs"),
        # Nav links /about, /services, ... are router.js views of index.html: Netlify's
        # `/* /index.html 200` answers them with it.
        RealSite("affairs-of-beauty", ("affairsofbeauty.com",), fallback="index.html", host="Netlify"),
        RealSite("ga-plumbing", ("gaplumbing.netlify.app",), host="Netlify"),
    )
}


def shared_sites_dir() -> Path | None:
    """../shared/data/sites, or None when it is absent (externally written test material)."""
    return SHARED_SITES if SHARED_SITES.is_dir() else None


def real_site_server(name: str, port: int = 0, *, sites: Path | None = None) -> SiteServer | None:
    """A (not yet started) SiteServer for shared site `name` with its host's options, or None when
    ../shared/data/sites (or `sites`, another copy of it) or the site's folder is absent. KeyError for
    a name not in REAL_SITES."""
    site = REAL_SITES[name]
    base = sites if sites is not None else shared_sites_dir()
    if base is None or not (base / site.folder).is_dir():
        return None
    return SiteServer(base / site.folder, port, domains=site.domains, fallback=site.fallback)
