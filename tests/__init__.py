"""Tests talk to 127.0.0.1 only: proxy variables are blanked so nothing is routed elsewhere."""

import os

for _name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
    os.environ.pop(_name, None)
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
