"""Scrapy commands of this project (COMMANDS_MODULE): `crawl` validates the site spider's arguments first."""
