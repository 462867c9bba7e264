"""Pure helpers for web formats (URLs, robots.txt, sitemaps, categories). No Scrapy import."""
