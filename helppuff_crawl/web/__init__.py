"""Pure helpers for web formats (URLs, robots.txt, sitemaps, categories, addresses) and for pages (their
checks and status, canonical links, links in scripts). No Scrapy import."""
