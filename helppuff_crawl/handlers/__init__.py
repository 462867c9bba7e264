"""Download handlers: how a request is fetched once the downloader middlewares let it through."""
