"""The local cloud's Queues: Cloudflare's pull-consumer semantics on SQLite (leases, visibility timeouts,
retries with delays, max_retries then the dead-letter queue, permissive acks, Queues' limits), through
Cloudflare's SDK as the crawler calls it, and two processes pulling from one queue."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.cloudflare.client import CloudflareClient, CloudflareError
from helppuff_crawl.local.cloud import LocalCloud, LocalTransport
from helppuff_crawl.local.queues import LocalQueues, QueueError
from tests.conftest import run_async


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0  # in the past: a real-time reader sees what it pushed

    def __call__(self) -> float:
        return self.now


def _queues(tmp_path: Path, max_retries: int = 2, dead_letter: str | None = "jobs-dead") -> tuple[LocalQueues, str, Clock]:
    clock = Clock()
    queues = LocalQueues(tmp_path / "queues.sqlite3", clock=clock)
    queue_id = queues.create_queue({"queue_name": "jobs"})["queue_id"]
    queues.create_consumer(queue_id, {"type": "http_pull", "dead_letter_queue": dead_letter,
                                      "settings": {"max_retries": max_retries, "visibility_timeout_ms": 10_000}})
    return queues, queue_id, clock


def _bodies(pulled: dict[str, Any]) -> list[str]:
    return [m["body"] for m in pulled["messages"]]


def test_a_lease_hides_a_message_until_its_timeout(tmp_path: Path) -> None:
    queues, queue_id, clock = _queues(tmp_path)
    queues.push(queue_id, {"body": "one", "content_type": "text"})
    first = queues.pull(queue_id, {"batch_size": 10})
    assert _bodies(first) == ["one"] and first["messages"][0]["attempts"] == 1
    assert _bodies(queues.pull(queue_id, {})) == []  # leased: another consumer gets nothing
    clock.now += 9.9
    assert _bodies(queues.pull(queue_id, {})) == []
    clock.now += 0.2  # past the consumer's 10 s visibility timeout: delivered again
    again = queues.pull(queue_id, {"visibility_timeout_ms": 1000})
    assert _bodies(again) == ["one"] and again["messages"][0]["attempts"] == 2
    assert again["messages"][0]["lease_id"] != first["messages"][0]["lease_id"]
    # Permissive, as Cloudflare: the first lease, long expired, still acknowledges it.
    assert queues.ack(queue_id, {"acks": [{"lease_id": first["messages"][0]["lease_id"]}]})["ackCount"] == 1
    clock.now += 5
    assert _bodies(queues.pull(queue_id, {})) == [] and queues.pull(queue_id, {})["message_backlog_count"] == 0
    warned = queues.ack(queue_id, {"acks": [{"lease_id": "nope"}]})
    assert warned["ackCount"] == 0 and list(warned["warnings"]) == ["nope"]


def test_delays_retries_and_the_dead_letter_queue(tmp_path: Path) -> None:
    queues, queue_id, clock = _queues(tmp_path, max_retries=2)
    queues.push(queue_id, {"body": {"job": 1}, "content_type": "json", "delay_seconds": 60})
    assert _bodies(queues.pull(queue_id, {})) == []
    clock.now += 60
    pulled = queues.pull(queue_id, {})["messages"][0]
    assert json.loads(base64.b64decode(pulled["body"])) == {"job": 1}  # json bodies arrive base64
    assert pulled["metadata"]["CF-Content-Type"] == "json"
    assert queues.ack(queue_id, {"retries": [{"lease_id": pulled["lease_id"], "delay_seconds": 30}]})["retryCount"] == 1
    clock.now += 29
    assert _bodies(queues.pull(queue_id, {})) == []
    clock.now += 1
    second = queues.pull(queue_id, {})["messages"][0]
    assert second["attempts"] == 2
    clock.now += 10  # its lease times out: the third and last delivery (max_retries 2)
    third = queues.pull(queue_id, {})["messages"][0]
    assert third["attempts"] == 3
    queues.ack(queue_id, {"retries": [{"lease_id": third["lease_id"]}]})  # retried once more than allowed
    assert queues.pull(queue_id, {})["message_backlog_count"] == 0
    dead = next(q for q in queues.list_queues() if q["queue_name"] == "jobs-dead")
    # The dead-letter queue has no consumer yet: add one to read what it holds.
    queues.create_consumer(dead["queue_id"], {"type": "http_pull"})
    letters = queues.pull(dead["queue_id"], {})["messages"]
    assert [json.loads(base64.b64decode(m["body"])) for m in letters] == [{"job": 1}]


def test_without_a_dead_letter_queue_a_spent_message_is_deleted(tmp_path: Path) -> None:
    queues, queue_id, clock = _queues(tmp_path, max_retries=0, dead_letter=None)
    queues.push(queue_id, {"body": "x", "content_type": "text"})
    assert _bodies(queues.pull(queue_id, {})) == ["x"]
    clock.now += 11
    assert queues.pull(queue_id, {})["message_backlog_count"] == 0
    assert [q["queue_name"] for q in queues.list_queues()] == ["jobs"]


@pytest.mark.parametrize(("call", "payload", "status", "code"), [
    ("push", {"body": "x" * 128_001, "content_type": "text"}, 413, 10204),
    ("push", {"body": "x", "content_type": "v8"}, 400, 10203),
    ("push", {"body": "x", "content_type": "text", "delay_seconds": 43_201}, 400, 10203),
    ("push", {"content_type": "text"}, 400, 10207),
    ("push_batch", {"messages": [{"body": "x", "content_type": "text"}] * 101}, 400, 10206),
    ("push_batch", {"messages": [{"body": "x" * 100_000, "content_type": "text"}] * 3}, 413, 10205),
    ("pull", {"batch_size": 101}, 400, 10207),
    ("pull", {"visibility_timeout_ms": 12 * 3600 * 1000 + 1}, 400, 10207),
    ("ack", {"retries": [{"lease_id": "x", "delay_seconds": -1}]}, 400, 10203),
])
def test_queues_limits_are_refused_with_queues_codes(tmp_path: Path, call: str, payload: dict[str, Any],
                                                      status: int, code: int) -> None:
    queues, queue_id, _ = _queues(tmp_path)
    with pytest.raises(QueueError) as refused:
        getattr(queues, call)(queue_id, payload)
    assert (refused.value.status, refused.value.code) == (status, code)
    with pytest.raises(QueueError) as missing:
        queues.push("0" * 32, {"body": "x", "content_type": "text"})
    assert missing.value.code == 10104


def test_the_sdk_path_and_a_queue_without_a_pull_consumer(tmp_path: Path) -> None:
    async def scenario() -> None:
        client = CloudflareClient(LocalTransport(LocalCloud(tmp_path)), "local")
        queue = await client.queue_create("helppuff-crawl")
        with pytest.raises(CloudflareError, match="no HTTP pull consumer"):
            await client.queue_pull(queue["queue_id"], 1, 1000)
        with pytest.raises(CloudflareError, match="already exists"):
            await client.queue_create("helppuff-crawl")
        await client.queue_create_pull_consumer(queue["queue_id"], {"max_retries": 3, "visibility_timeout_ms": 5000})
        await client.queue_send(queue["queue_id"], '{"site": "acme"}', delay_seconds=0)
        messages, backlog = await client.queue_pull(queue["queue_id"], 5, 1000)
        assert [m["body"] for m in messages] == ['{"site": "acme"}'] and backlog == 1
        assert messages[0]["metadata"]["CF-Content-Type"] == "text"
        done = await client.queue_ack(queue["queue_id"], acks=[messages[0]["lease_id"]])
        assert done["ackCount"] == 1
        assert [c["type"] for c in await client.queue_consumers(queue["queue_id"])] == ["http_pull"]
        await client.aclose()

    run_async(scenario())


_PULLER = """
import json, sys, time
from pathlib import Path
from helppuff_crawl.local.queues import LocalQueues
queues = LocalQueues(Path(sys.argv[1]))
got = []
while True:
    messages = queues.pull(sys.argv[2], {"batch_size": 3, "visibility_timeout_ms": 600000})["messages"]
    if not messages:
        break
    got += [m["body"] for m in messages]
    time.sleep(0.01)  # let the other consumer in
print(json.dumps(got))
"""


def test_two_processes_pulling_one_queue_get_each_message_once(tmp_path: Path) -> None:
    queues, queue_id, _ = _queues(tmp_path)
    for start in range(0, 300, 100):
        queues.push_batch(queue_id, {"messages": [{"body": str(i), "content_type": "text"} for i in range(start, start + 100)]})
    root = Path(__file__).parent.parent
    pullers = [subprocess.Popen([sys.executable, "-c", _PULLER, str(tmp_path / "queues.sqlite3"), queue_id],
                                stdout=subprocess.PIPE, text=True, cwd=root) for _ in range(2)]
    got = [json.loads(p.communicate(timeout=120)[0]) for p in pullers]
    assert sorted(got[0] + got[1], key=int) == [str(i) for i in range(300)]  # every message, each once
    assert got[0] and got[1]  # both took some
