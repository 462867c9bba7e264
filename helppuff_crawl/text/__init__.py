"""Pure text processing (Markdown extraction, facts, boilerplate, hashing, chunking). No Scrapy import."""
