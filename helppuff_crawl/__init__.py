"""HelpPuff Crawl: turn a small business's website into a chat assistant's knowledge base."""

__version__ = "0.1.0"
