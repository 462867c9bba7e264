"""Downloader middlewares: how to fetch (robots.txt rules, the browser budget)."""
