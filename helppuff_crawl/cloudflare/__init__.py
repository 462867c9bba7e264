"""cloudflare."""
