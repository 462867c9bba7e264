"""Where the knowledge base is: the settings that name it, refused with the setting's name when wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from helppuff_crawl.kb.database import BackendConfig
from tests.crawlers import project_defaults


def test_credentials_go_together() -> None:
    with pytest.raises(ValueError, match="go together"):
        BackendConfig.from_settings({**project_defaults(), "HELPPUFF_CLOUDFLARE_API_TOKEN": "t"})


def test_the_local_cloud_by_default_and_cloudflare_with_credentials(tmp_path: Path) -> None:
    local = BackendConfig.from_settings({**project_defaults(), "HELPPUFF_DATA_DIR": str(tmp_path)})
    assert (local.remote, local.data_dir, local.database) == (False, tmp_path, "helppuff")
    remote = BackendConfig.from_settings({**project_defaults(), "HELPPUFF_CLOUDFLARE_API_TOKEN": "t",
                                          "HELPPUFF_CLOUDFLARE_ACCOUNT_ID": "a"})
    assert remote.remote and remote.api_base == "https://api.cloudflare.com/client/v4"


@pytest.mark.parametrize("name", ["HELPPUFF_D1_DATABASE", "HELPPUFF_DATA_DIR"])
def test_an_empty_name_is_refused_naming_the_setting(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        BackendConfig.from_settings({**project_defaults(), name: ""})


def test_the_local_vectorize_delay_reaches_the_local_cloud(tmp_path: Path) -> None:
    from helppuff_crawl.kb.database import open_client

    default = BackendConfig.from_settings({**project_defaults(), "HELPPUFF_DATA_DIR": str(tmp_path)})
    assert default.vectorize_delay == 1.0  # a realistic delay by default: Cloudflare's take seconds
    instant = BackendConfig.from_settings({**project_defaults(), "HELPPUFF_DATA_DIR": str(tmp_path),
                                           "HELPPUFF_LOCAL_VECTORIZE_DELAY": "0"})
    assert open_client(instant).transport.cloud.vectorize_delay == 0.0  # type: ignore[attr-defined]
    assert open_client(default).transport.cloud.vectorize_delay == 1.0  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", [-1, "soon", float("inf"), None])
def test_a_bad_vectorize_delay_is_refused_naming_it(value: object) -> None:
    with pytest.raises(ValueError, match="HELPPUFF_LOCAL_VECTORIZE_DELAY must be seconds >= 0"):
        BackendConfig.from_settings({**project_defaults(), "HELPPUFF_LOCAL_VECTORIZE_DELAY": value})
