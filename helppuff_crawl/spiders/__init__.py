"""spiders."""
