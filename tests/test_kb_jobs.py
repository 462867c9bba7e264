"""Crawl jobs in D1: how requests merge (the shared cases the Worker runs too), and how a worker
takes, beats, finishes, releases and gives up a job; a message's job read back."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.clock import iso, parse_iso
from helppuff_crawl.kb import jobs
from tests.conftest import local_kb, run_async

CASES = json.loads((Path(jobs.__file__).parent.parent / "schema" / "crawl_jobs_cases.json").read_text())
NOW = parse_iso(CASES["now"])


class RecordingSender(jobs.Sender):
    """Records the messages asked to be sent (the queue itself is tested in test_local_queues.py)."""

    def __init__(self, fail: bool = False) -> None:
        self.sent: list[tuple[dict[str, Any], float]] = []
        self.fail = fail

    async def send(self, body: str, delay_seconds: float) -> None:
        if self.fail:
            raise ConnectionError("queue unreachable")
        self.sent.append((json.loads(body), delay_seconds))


def _urls(value: Any) -> list[str]:
    if isinstance(value, dict):
        low, high = value["range"]
        return [f"https://acme.com.au/p{i}" for i in range(low, high)]
    return list(value)


async def _waiting(kb: Any, site: str) -> dict[str, Any] | None:
    return await kb.first("SELECT * FROM crawl_requests WHERE site = ? AND handled_at IS NULL AND taken_at IS NULL",
                          [site])


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["name"] for c in CASES["cases"]])
def test_shared_merge_cases(case: dict[str, Any], tmp_path: Path) -> None:
    async def scenario() -> None:
        kb = local_kb(tmp_path)
        site = CASES["site"]
        for step in case["steps"]:
            if "take" in step:
                row = await _waiting(kb, site)
                assert row is not None
                assert (await jobs.take(kb, row["id"], 600, "test:1", now=NOW)).job is not None
                continue
            ask = step["ask"]
            await jobs.ask(kb, None, site, ask["kind"], _urls(ask["urls"]), ask["reason"], ask["delay"], now=NOW)
        row = await _waiting(kb, site)
        expect = case["expect"]
        if expect is None:
            assert row is None
            return
        assert row is not None
        got = {"kind": row["kind"], "urls": json.loads(row["urls"]), "reason": row["reason"], "asked": row["asked"],
               "due": (parse_iso(row["not_before"]) - NOW).total_seconds()}
        assert got == {**expect, "urls": _urls(expect["urls"])}
        await kb.close()

    run_async(scenario())


def test_a_message_is_sent_once_unless_the_job_becomes_due_earlier(tmp_path: Path) -> None:
    async def scenario() -> None:
        kb = local_kb(tmp_path)
        sender = RecordingSender()
        first = await jobs.ask(kb, sender, "acme", "retry", ["https://acme.com.au/a"], "retry", 900, now=NOW)
        assert first.sent and sender.sent[0][1] == 900
        assert sender.sent[0][0] == {"site": "acme", "kind": "retry", "urls": ["https://acme.com.au/a"],
                                     "reason": "retry", "requested_at": iso(NOW), "request": first.job.request}
        again = await jobs.ask(kb, sender, "acme", "retry", ["https://acme.com.au/b"], "retry", 7200, now=NOW)
        assert not again.sent and len(sender.sent) == 1  # due no earlier than the message already sent
        sooner = await jobs.ask(kb, sender, "acme", "urls", ["https://acme.com.au/c"], "webhook", 0, now=NOW)
        assert sooner.sent and sender.sent[1][1] == 0 and sender.sent[1][0]["kind"] == "urls"
        assert sooner.job.request == first.job.request  # one job
        await kb.close()

    run_async(scenario())


def test_a_failed_send_leaves_the_job_unsent_for_the_next_sender(tmp_path: Path) -> None:
    async def scenario() -> None:
        kb = local_kb(tmp_path)
        asked = await jobs.ask(kb, RecordingSender(fail=True), "acme", "full", [], "schedule", now=NOW)
        assert not asked.sent and "ConnectionError: queue unreachable" in asked.send_error
        assert [job.request for job in await jobs.unsent(kb)] == [asked.job.request]
        sender = RecordingSender()
        assert (await jobs.send(kb, sender, asked.job, now=NOW)).sent
        assert await jobs.unsent(kb) == [] and len(sender.sent) == 1
        await kb.close()

    run_async(scenario())


def test_take_beat_release_finish_and_give_up(tmp_path: Path) -> None:
    async def scenario() -> None:
        kb = local_kb(tmp_path)
        asked = await jobs.ask(kb, None, "acme", "full", [], "schedule", now=NOW)
        request = asked.job.request
        first = await jobs.take(kb, request, 600, "host:1", now=NOW)
        assert first.job is not None and first.attempts == 1
        # A second delivery while the taker beats: busy; once its beat is stale, taken over.
        assert (await jobs.take(kb, request, 600, "host:2", now=NOW + timedelta(seconds=599))).why == "busy"
        later = NOW + timedelta(seconds=601)
        over = await jobs.take(kb, request, 600, "host:2", now=later)
        assert over.job is not None and over.attempts == 2
        # Released (SIGTERM): the next delivery takes it at once.
        await jobs.release(kb, request, "run-1")
        third = await jobs.take(kb, request, 600, "host:3", now=later)
        assert third.job is not None and third.attempts == 3
        await jobs.finish(kb, request, "run-2")
        assert (await jobs.take(kb, request, 600, "host:4", now=later)).why == "handled"
        row = await kb.first("SELECT handled_at, run_id FROM crawl_requests WHERE id = ?", [request])
        assert row is not None and row["handled_at"] and row["run_id"] == "run-2"
        assert (await jobs.take(kb, "nosuchid", 600, now=later)).why == "unknown"
        # A job due later is not taken early; a dead job is listed with its reason.
        retry = await jobs.ask(kb, None, "acme", "retry", ["https://acme.com.au/a"], "retry", 900, now=NOW)
        assert (await jobs.take(kb, retry.job.request, 600, now=NOW)).why == "early"
        assert (await jobs.take(kb, retry.job.request, 600, now=NOW + timedelta(seconds=900))).job is not None
        await jobs.give_up(kb, retry.job.request, "failed 4 times; last: home page 503")
        dead = await jobs.dead_jobs(kb, "acme")
        assert [(d["id"], d["dead_reason"]) for d in dead] == [(retry.job.request, "failed 4 times; last: home page 503")]
        await kb.close()

    run_async(scenario())


def _message(body: str, content_type: str = "text") -> dict[str, Any]:
    if content_type == "json":
        body = base64.b64encode(body.encode()).decode()
    return {"id": "m1", "body": body, "lease_id": "l1", "attempts": 1, "metadata": {"CF-Content-Type": content_type}}


def test_messages_read_back_as_jobs_and_bad_ones_say_why() -> None:
    job = jobs.CrawlJob("acme", "urls", ("https://acme.com.au/a",), "webhook", "2026-12-01T09:00:00Z", "ab12cd34")
    assert jobs.parse_message(_message(job.message())) == job
    assert jobs.parse_message(_message(job.message(), "json")) == job  # as a Worker's json send arrives
    for body, why in [("not json", "not JSON"), ('{"site": "acme"}', "not a crawl job"),
                      ('{"site": "acme", "request": "x", "kind": "some"}', "kind is 'some'"),
                      ('{"site": "acme", "request": "x", "kind": "urls", "urls": "a"}', "urls must be a list")]:
        with pytest.raises(jobs.JobError, match=why):
            jobs.parse_message(_message(body))


def test_requests_are_checked() -> None:
    assert jobs.check_request("urls", [], "x") == ("full", [])
    assert jobs.check_request("retry", ["a", "a", "b"], "x") == ("retry", ["a", "b"])
    assert jobs.check_request("urls", [f"u{i}" for i in range(101)], "x") == ("full", [])
    with pytest.raises(jobs.JobError, match="kind must be"):
        jobs.check_request("partial", [], "x")
    with pytest.raises(jobs.JobError, match="needs a reason"):
        jobs.check_request("full", [], " ")


def test_the_delay_is_capped_at_queues_twelve_hours(tmp_path: Path) -> None:
    async def scenario() -> None:
        kb = local_kb(tmp_path)
        sender = RecordingSender()
        asked = await jobs.ask(kb, sender, "acme", "retry", ["https://acme.com.au/a"], "retry", 20 * 3600, now=NOW)
        assert asked.sent and sender.sent[0][1] == 12 * 3600  # then `take` says "early" and it waits again
        await kb.close()

    run_async(scenario())


