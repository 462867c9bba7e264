"""The container test is slow (it runs the image built by scripts/build-image.sh): the main `pytest`
run does not collect it. scripts/test-container.sh builds the image and runs it with
HELPPUFF_CONTAINER_TEST=1."""

from __future__ import annotations

import os

collect_ignore = [] if os.environ.get("HELPPUFF_CONTAINER_TEST") == "1" else ["test_image.py"]
