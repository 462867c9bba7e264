"""`helppuff deploy`, and the state file every other command reads, run as an operator runs them.

"On Cloudflare" here is the local cloud served over loopback (helppuff_crawl/local/server.py) and
reached with an API token and account id, as api.cloudflare.com is: it addresses D1 databases by
UUID only and holds D1's limits, so a command that would fail on Cloudflare fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from helppuff_crawl.cloudflare.state import DeployState
from helppuff_crawl.deploy.worker import (
    WorkerDeployError,
    read_jsonc,
    widget_tag,
    worker_url,
)
from helppuff_crawl.local.cloud import LocalCloud
from helppuff_crawl.local.d1 import migration_files
from helppuff_crawl.deploy.toolchain import WORKER_DIR
from helppuff_crawl.local.server import LocalCloudServer, serve_local_cloud

ROOT = Path(__file__).resolve().parent.parent
HELPPUFF = str(Path(sys.executable).parent / "helppuff")
TOKEN = "token-for-the-served-local-cloud"
ACCOUNT = "0123456789abcdef0123456789abcdef"
MODEL = "@local/all-minilm-l6-v2"  # a model the local cloud runs (it has no bge-m3)


@pytest.fixture
def cloudflare(tmp_path: Path) -> Iterator[tuple[LocalCloudServer, str, LocalCloud]]:
    cloud = LocalCloud(tmp_path / "cloudflare")
    server, url = serve_local_cloud(cloud, token=TOKEN)
    yield server, url, cloud
    server.close()
    cloud.close()


def _helppuff(tmp_path: Path, *args: str, api: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(tmp_path / "kb"), "CLOUDFLARE_API_TOKEN": TOKEN if api else "",
           "CLOUDFLARE_ACCOUNT_ID": ACCOUNT if api else "", "HELPPUFF_CLOUDFLARE_API_BASE": api or
           "https://api.cloudflare.com/client/v4"}
    return subprocess.run([HELPPUFF, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False,
                          timeout=600)


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert "Traceback" not in result.stderr, result.stderr
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_deploy_then_crawl_with_no_id_set_by_hand(serve_site, cloudflare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site = serve_site("acme-plumbing")
    _, api, cloud = cloudflare
    model = ["-s", f"HELPPUFF_EMBED_MODEL={MODEL}"]
    # Before a deploy: one line naming the fix, and nothing fetched or created.
    early = _helppuff(tmp_path, "crawl", site.url, "--site", "acme", "--render-js", "never", *model, api=api)
    assert early.returncode == 2
    line = _one_line(early)
    assert "D1 database helppuff has no id in" in line and "helppuff deploy --site" in line
    assert cloud.databases() == []
    status = _helppuff(tmp_path, "knowledge", "status", "--site", "acme", *model, api=api)
    assert status.returncode == 2 and "helppuff deploy" in _one_line(status)

    deployed = _helppuff(tmp_path, "deploy", "--site", "acme", "--no-worker", "--json", *model, api=api)
    assert deployed.returncode == 0, deployed.stderr
    report = json.loads(deployed.stdout)
    (database,) = cloud.databases()
    assert report["d1_database_id"] == database["uuid"] and report["d1_created"] and report["index_created"]
    applied = cloud.database(database["uuid"]).query([("SELECT name FROM d1_migrations ORDER BY name", [])])
    assert [row["name"] for row in applied[0]["results"]] == [f.name for f in migration_files()]
    assert DeployState(tmp_path / "kb").database_id(ACCOUNT, "helppuff") == database["uuid"]
    # The crawl queue, its dead-letter queue and its HTTP pull consumer, recorded.
    queues = {q["queue_name"]: q for q in cloud.queues.list_queues()}
    assert sorted(queues) == ["helppuff-crawl", "helppuff-crawl-dead"]
    assert report["queue_id"] == queues["helppuff-crawl"]["queue_id"] == DeployState(tmp_path / "kb").queue_id(
        ACCOUNT, "helppuff-crawl")
    (consumer,) = queues["helppuff-crawl"]["consumers"]
    assert consumer["type"] == "http_pull" and consumer["dead_letter_queue"] == "helppuff-crawl-dead"
    assert consumer["settings"]["batch_size"] == 1

    again = json.loads(_helppuff(tmp_path, "deploy", "--site", "acme", "--no-worker", "--json", *model,
                                 api=api).stdout)
    assert (again["d1_database_id"], again["d1_created"], again["index_created"], again["migrations"],
            again["queue_made"]) == (database["uuid"], False, False, [], [])  # idempotent
    assert len(cloud.databases()) == 1

    crawl = _helppuff(tmp_path, "crawl", site.url, "--site", "acme", "--render-js", "never", *model, api=api)
    assert crawl.returncode == 0, crawl.stderr
    learned = cloud.database(database["uuid"]).query(
        [("SELECT COUNT(*) AS n FROM pages WHERE site = 'acme' AND status = 'ok'", [])])[0]["results"]
    assert learned[0]["n"] >= 15
    # Its failed pages' retry job went to Cloudflare's queue.
    assert cloud.queues.pull(report["queue_id"], {})["message_backlog_count"] == 1


def test_a_stale_id_is_one_line_naming_deploy(cloudflare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, api, _ = cloudflare
    gone = "00000000-0000-4000-8000-000000000000"
    DeployState(tmp_path / "kb").record_database(ACCOUNT, "helppuff", gone)
    status = _helppuff(tmp_path, "knowledge", "status", "--site", "acme", "-s", f"HELPPUFF_EMBED_MODEL={MODEL}",
                       api=api)
    assert status.returncode == 2
    line = _one_line(status)
    assert gone in line and "is not on account" in line and "helppuff deploy" in line
    assert DeployState(tmp_path / "kb").database_id(ACCOUNT, "helppuff") is None  # forgotten, to be deployed again


def test_the_local_cloud_finds_or_creates_its_database_and_records_it(tmp_path: Path) -> None:
    first = _helppuff(tmp_path, "deploy", "--site", "acme", "--no-worker", "--json")
    assert first.returncode == 0, first.stderr
    uuid = json.loads(first.stdout)["d1_database_id"]
    assert DeployState(tmp_path / "kb").database_id("local", "helppuff") == uuid
    (tmp_path / "kb" / "state.json").unlink()  # a lost state file: the database is found again by its name
    status = _helppuff(tmp_path, "knowledge", "status", "--json")
    assert status.returncode == 0, status.stderr
    assert DeployState(tmp_path / "kb").database_id("local", "helppuff") == uuid


def test_a_dry_run_builds_the_bundle_and_touches_nothing(cloudflare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    if not (WORKER_DIR / "node_modules" / "wrangler").exists():
        pytest.skip("the Worker's toolchain is not installed: run `bash scripts/setup-worker.sh`")
    _, api, cloud = cloudflare
    out = tmp_path / "out"
    dry = _helppuff(tmp_path, "deploy", "--site", "acme", "--dry-run", "--outdir", str(out), "--json",
                    "-s", f"HELPPUFF_EMBED_MODEL={MODEL}", "-s", "HELPPUFF_QUEUE=acme-crawl", api=api)
    assert dry.returncode == 0, dry.stderr
    report = json.loads(dry.stdout)
    assert report["dry_run"] and report["d1_created"] and report["index_created"] and report["migrations"]
    assert cloud.databases() == [] and cloud._vectorize_list() == [] and cloud.queues.list_queues() == []
    assert report["queue_made"] == ["queue helppuff-crawl-dead", "queue acme-crawl"]
    assert not (tmp_path / "kb").exists()
    assert any(path.endswith(".js") for path in report["bundle"])
    config = json.loads((out / "config" / "wrangler.deploy.json").read_text(encoding="utf-8"))
    (d1,) = config["d1_databases"]
    assert d1["database_name"] == "helppuff" and d1["database_id"] == "00000000-0000-0000-0000-000000000000"
    assert "env" not in config and Path(config["main"]).is_file()
    checked_in = read_jsonc((WORKER_DIR / "wrangler.jsonc").read_text(encoding="utf-8"))
    assert config["ratelimits"] == checked_in["ratelimits"]
    # The cron trigger as declared; the queue producer sends to the queue the deploy made (HELPPUFF_QUEUE).
    assert config["triggers"] == checked_in["triggers"] and config["triggers"]["crons"]
    assert config["queues"]["producers"] == [{"binding": "CRAWL_QUEUE", "queue": "acme-crawl"}]


def test_jsonc_comments_and_trailing_commas_but_not_inside_strings() -> None:
    text = '{\n  // a comment\n  "a": "http://x//y", /* block */ "b": [1, 2,],\n  "c": "/* kept */",\n}'
    assert read_jsonc(text) == {"a": "http://x//y", "b": [1, 2], "c": "/* kept */"}


def test_the_workers_url_and_the_widget_tag_from_wranglers_output() -> None:
    output = ("Total Upload: 143.71 KiB / gzip: 31.02 KiB\nUploaded helppuff (4.12 sec)\n"
              "Deployed helppuff triggers (1.03 sec)\n  https://helppuff.acme-plumbing.workers.dev\n"
              "Current Version ID: 6c1d3f0e-2a4b-4d55-8e1c-0f9a7b3c2d11\n")
    url = worker_url(output)
    assert url == "https://helppuff.acme-plumbing.workers.dev"
    assert widget_tag(url + "/", "acme") == (
        '<script src="https://helppuff.acme-plumbing.workers.dev/widget.js" data-site="acme" async></script>')
    with pytest.raises(WorkerDeployError, match="no workers.dev URL"):
        worker_url("Uploaded helppuff (4.12 sec)\nDeployed helppuff triggers (1.03 sec)\n  example.com/*\n")


def test_the_send_email_binding_only_when_a_sender_is_named() -> None:
    from helppuff_crawl.deploy.worker import WorkerTarget, deploy_config

    plain = deploy_config(WorkerTarget("helppuff", "db-id", "helppuff"))
    assert "send_email" not in plain and "EMAIL_FROM" not in (plain.get("vars") or {})
    mailing = deploy_config(WorkerTarget("helppuff", "db-id", "helppuff", email_from="helppuff@acme.com.au"))
    assert mailing["send_email"] == [{"name": "EMAIL"}]
    assert mailing["vars"]["EMAIL_FROM"] == "helppuff@acme.com.au"
    assert {k: v for k, v in mailing["vars"].items() if k != "EMAIL_FROM"} == (plain.get("vars") or {})
