"""Item pipelines: what to do with a page (extract, hash, store)."""
