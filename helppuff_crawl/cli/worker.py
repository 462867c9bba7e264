"""`helppuff worker`: take crawl jobs from the crawl queue and run them, one at a time.

    helppuff worker [--once] [-s NAME=VALUE ...]

The long-running consumer of the crawl container (the image's entrypoint), and of this machine. It
pulls one message at a time with the HTTP pull-consumer API (kb/crawl_queue.py: Cloudflare Queues, or
the local cloud's), takes the job the message names (kb/jobs.py `take`: a job already handled, or held
by a worker that is still beating, is left alone), and runs it as `helppuff crawl START_URL --site S`
in a process of its own (the site's stored helppuff.json as --config; `--only URL` for each page a
`urls` or `retry` job names; for a `discover` job, `helppuff discover --json`, whose pages it records for
the owner's Set up: kb/discoveries.py; for a `detect` job, `helppuff knowledge facts detect`), beating the
job while it runs. Then:

- the run is done: the job is handled by it, and the message acknowledged;
- the crawl refused its input (exit status 2: a bad config, no deploy): the job is given up at once;
- the run failed: the message comes back after HELPPUFF_RETRY_DELAYS (+15 min, then +2 h, ...); after
  HELPPUFF_QUEUE_MAX_RETRIES failed tries the job is given up, dead with its reason (`helppuff status`);
- SIGTERM (or SIGINT): the crawl is asked to stop (Scrapy finishes the pages in hand and records the
  run as stopped), the job is released and its message put back at once for the next worker; the
  worker exits.

A worker killed outright (kill -9) neither acks nor releases: its job's message is delivered again
after the visibility timeout (HELPPUFF_QUEUE_VISIBILITY), and taken by whoever gets it once the dead
worker's beat is older than HELPPUFF_RUN_STALE_AFTER; its run is marked failed by the stale-run
mending every crawl's start does. A pull the queue's API keeps failing (after the client's retries)
is one line on stderr, and the worker pulls again 30 s later; so is a job's beat that D1 refuses, and
the crawl goes on. `--once`: take what is queued now, then exit (status 1 when a job failed). Each job
is one line on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helppuff_crawl.cli import one_line
from helppuff_crawl.cli.crawl import parse_set_options, project_settings
from helppuff_crawl.cloudflare.client import CloudflareError
from helppuff_crawl.devloop.crawl_worker import die_with_parent

UNREACHED_HOME = ("failed", "blocked", "skipped", "gone")  # a discovery whose only page is the home page, unread
QUEUE_TROUBLE_WAIT = 30.0  # seconds a long-running worker waits after the queue's API failed


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("worker", help="take crawl jobs from the crawl queue and run them")
    parser.add_argument("--once", action="store_true", help="take what is queued now, then exit")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting, for the worker and each crawl it runs")
    parser.set_defaults(func=run)


@dataclass
class Outcome:
    """One delivery's end: what was done with the message, and the line printed for it."""

    line: str
    failed: bool = False


class Worker:
    def __init__(self, settings: Any, set_options: list[str]) -> None:
        self.settings = settings
        self.set_options = set_options
        self.stopping = asyncio.Event()
        self.child: asyncio.subprocess.Process | None = None
        self.retry_delays = [int(d) for d in settings.getlist("HELPPUFF_RETRY_DELAYS")] or [900]
        self.stale_after = settings.getfloat("HELPPUFF_RUN_STALE_AFTER")
        self.beat_every = settings.getfloat("HELPPUFF_RUN_HEARTBEAT")

    def stop(self) -> None:
        """SIGTERM: stop taking jobs, and ask the crawl in hand to stop."""
        self.stopping.set()
        if self.child is not None and self.child.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.child.send_signal(signal.SIGTERM)

    async def serve(self, once: bool) -> int:
        from helppuff_crawl.kb import jobs, runs
        from helppuff_crawl.kb.crawl_queue import open_queue
        from helppuff_crawl.kb.database import KnowledgeBase

        failed = False
        async with KnowledgeBase.from_settings(self.settings) as kb:
            queue = await open_queue(kb, self.settings)
            await runs.reap_dead_runs(kb, self.stale_after)
            for job in await jobs.unsent(kb):  # asked for while the queue could not be reached
                await jobs.send(kb, queue, job)
            while not self.stopping.is_set():
                try:
                    messages, _ = await queue.pull(1)
                except CloudflareError as exc:
                    if once:
                        raise
                    # The queue's API failed after the client's own retries: a long-running worker waits.
                    print(f"queue: {one_line(str(exc))}; pulling again in {QUEUE_TROUBLE_WAIT:.0f} s",
                          file=sys.stderr, flush=True)
                    messages = []
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.stopping.wait(), QUEUE_TROUBLE_WAIT)
                    continue
                if not messages:
                    if once:
                        break
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.stopping.wait(), queue.config.poll)
                    continue
                try:
                    outcome = await self.deliver(kb, queue, messages[0])
                except CloudflareError as exc:
                    if once:
                        raise
                    # An ack or retry refused after the client's own retries: the job's row says what
                    # became of it, and the message comes back when its lease ends, to be acknowledged
                    # then ("already done") or run again. A long-running worker carries on.
                    print(f"queue: {one_line(str(exc))}; message {messages[0].get('id')} comes back when its "
                          "lease ends", file=sys.stderr, flush=True)
                    failed = True
                    continue
                print(outcome.line, flush=True)
                failed = failed or outcome.failed
        return 1 if failed else 0

    async def deliver(self, kb: Any, queue: Any, message: dict[str, Any]) -> Outcome:
        from helppuff_crawl.kb import jobs

        lease = str(message.get("lease_id") or "")
        try:
            job = jobs.parse_message(message)
        except jobs.JobError as exc:
            await queue.ack(lease)  # not a crawl job: nothing could ever run it
            return Outcome(f"message {message.get('id')}: dropped: {exc}", failed=True)
        taken = await jobs.take(kb, job.request, self.stale_after)
        label = f"job {job.request} ({job.site})"
        if taken.job is None:
            if taken.why in ("handled", "unknown"):
                await queue.ack(lease)
                return Outcome(f"{label}: already {'done' if taken.why == 'handled' else 'gone'}; message acknowledged")
            if taken.why == "early":
                await queue.retry(lease, await jobs.seconds_until_due(kb, job.request))
                return Outcome(f"{label}: not due yet; back in the queue")
            await queue.retry(lease, self.stale_after)
            return Outcome(f"{label}: another worker is on it; back in the queue")
        job = taken.job
        named = f", {len(job.urls)} page{'s' if len(job.urls) != 1 else ''}" if job.urls else ""
        label = f"job {job.request} ({job.site}, {job.kind}{named})"
        max_retries = queue.config.max_retries
        if taken.attempts > max_retries + 1:
            why = f"taken {taken.attempts - 1} times without finishing"
            await jobs.give_up(kb, job.request, why)
            await queue.ack(lease)
            return Outcome(f"{label}: given up: {why}", failed=True)
        status, run_id, result = await self.crawl(kb, job)
        if self.stopping.is_set() and status != 0:
            await jobs.release(kb, job.request, run_id)
            await queue.retry(lease, 0)
            return Outcome(f"{label}: interrupted ({result}); back in the queue")
        if status == 0:
            await jobs.finish(kb, job.request, run_id)
            await queue.ack(lease)
            return Outcome(f"{label}: {result}")
        if status == 2 or taken.attempts > max_retries:
            why = result if status == 2 else f"failed {taken.attempts} times; last: {result}"
            await jobs.give_up(kb, job.request, why, run_id)
            await queue.ack(lease)
            return Outcome(f"{label}: given up: {why}", failed=True)
        delay = self.retry_delays[min(taken.attempts, len(self.retry_delays)) - 1]
        await jobs.release(kb, job.request, run_id)
        await queue.retry(lease, delay)
        return Outcome(f"{label}: failed ({result}); tried again in {delay} s", failed=True)

    async def _target(self, kb: Any, site: str) -> tuple[str | None, dict[str, Any] | None]:
        """The site's start URL (its latest run's, else the one the owner gave when adding it from the
        dashboard: kb/discoveries.py) and stored helppuff.json."""
        from helppuff_crawl.kb import discoveries, runs, site_settings
        from helppuff_crawl.kb.schedule import site_schedule

        last = await runs.last_run(kb, site)
        stored = await site_settings.get_site_settings(kb, site)
        start = last["start_url"] if last else await discoveries.start_url(kb, site)
        return start, site_schedule(stored["settings"] if stored else None)[1]

    async def crawl(self, kb: Any, job: Any) -> tuple[int, str | None, str]:
        """Run the job's crawl in a process of its own, beating the job; (exit status, run id, result line).
        A discover job runs `helppuff discover --json` instead and records what it found (`discovered`); a
        detect job runs `helppuff knowledge facts detect --json` (the details read from the pages kept)."""
        start_url, config = await self._target(kb, job.site)
        if start_url is None:
            return 2, None, f"site {job.site} has never been crawled: start it with `helppuff crawl URL --site {job.site}`"
        helppuff = str(Path(sys.executable).parent / "helppuff")
        discover, detect = job.kind == "discover", job.kind == "detect"
        if detect:
            command = [helppuff, "knowledge", "facts", "detect", "--site", job.site, "--json"]
        else:
            command = [helppuff, "discover" if discover else "crawl", start_url, "--site", job.site]
        if discover:
            command.append("--json")
        for option in self.set_options:
            command += ["-s", option]
        for url in job.urls:
            command += ["--only", url]
        with tempfile.TemporaryDirectory(prefix="helppuff-worker-") as folder:
            if config is not None and not detect:
                path = Path(folder) / "helppuff.json"
                path.write_text(json.dumps(config), encoding="utf-8")
                command += ["--config", str(path)]
            # Its own session (a terminal's Ctrl-C reaches the worker, which passes on one SIGTERM), and
            # killed with the worker: a crawl never outlives the worker whose job it is.
            self.child = await asyncio.create_subprocess_exec(
                *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True, preexec_fn=die_with_parent)
            if self.stopping.is_set():
                self.stop()
            output = asyncio.ensure_future(self.child.communicate())
            try:
                while not output.done():
                    await asyncio.wait([output], timeout=self.beat_every)
                    if not output.done():
                        await self._beat(kb, job.request)
            finally:
                if not output.done():  # left by an error of the worker's own: the crawl goes with it
                    with contextlib.suppress(ProcessLookupError):
                        self.child.kill()
                    await asyncio.wait([output])
            stdout, stderr = output.result()
            status = self.child.returncode or 0
            self.child = None
        if discover:
            return await self.discovered(kb, job.site, start_url, status, stdout, stderr)
        if detect:
            return _detected(status, stdout, stderr)
        lines = stdout.decode("utf-8", "replace").strip().splitlines()
        errors = stderr.decode("utf-8", "replace").strip().splitlines()
        run_id = lines[0].split()[1].rstrip(":") if lines and lines[0].startswith("run ") else None
        if status == 0 and lines:
            result = f"{lines[0]}; {lines[-1]}"
        else:
            result = (lines[0] if lines and lines[0].startswith("run ") else "") or (errors[-1] if errors else "no output")
        return status, run_id, result

    async def discovered(self, kb: Any, site: str, start_url: str, status: int, stdout: bytes,
                         stderr: bytes) -> tuple[int, str | None, str]:
        """Record what `helppuff discover --json` found (kb/discoveries.py): its pages, or why there are
        none; a discovery that found nothing is recorded and the job done (asking again is the owner's)."""
        from helppuff_crawl.kb import discoveries

        errors = stderr.decode("utf-8", "replace").strip().splitlines()
        try:
            found = json.loads(stdout.decode("utf-8", "replace")) if status in (0, 1) else None
        except ValueError:
            found = None
        if self.stopping.is_set() and found is None:
            return status or 1, None, "stopped"
        pages = found.get("pages") if isinstance(found, dict) else None
        unreached = bool(pages) and len(pages) == 1 and pages[0].get("status") in UNREACHED_HOME
        if not pages or unreached:
            why = (f"{start_url} could not be read: {pages[0].get('reason') or pages[0].get('status')}" if unreached
                   else (errors[-1] if status == 2 and errors else "") or f"no pages found at {start_url}")
            await discoveries.record(kb, site, start_url, [], why)
            return 0, None, f"discovered nothing: {why}"
        await discoveries.record(kb, site, start_url, pages)
        ticked = sum(1 for page in pages if page.get("ticked"))
        return 0, None, f"discovered {len(pages)} pages ({ticked} ticked)"

    @staticmethod
    async def _beat(kb: Any, request: str) -> None:
        """The job's beat while its crawl runs. One that D1 refuses (after the client's retries) is a
        line on stderr, and the crawl goes on: the next beat comes `beat_every` later, and the job is
        taken from this worker only once its beat is older than HELPPUFF_RUN_STALE_AFTER."""
        from helppuff_crawl.kb import jobs

        try:
            await jobs.beat(kb, request)
        except CloudflareError as exc:
            print(f"job {request}: beat not recorded: {one_line(str(exc))}; the crawl goes on",
                  file=sys.stderr, flush=True)


def _detected(status: int, stdout: bytes, stderr: bytes) -> tuple[int, str | None, str]:
    """The result of `helppuff knowledge facts detect --json`: the details it stored, or why it failed."""
    try:
        found = json.loads(stdout.decode("utf-8", "replace"))
    except ValueError:
        found = None
    if status != 0 or not isinstance(found, dict):
        errors = stderr.decode("utf-8", "replace").strip().splitlines()
        return status or 1, None, errors[-1] if errors else "no output"
    kept = [str(c.get("key", "")) for c in found.get("kept") or [] if isinstance(c, dict)] if found.get("stored") else []
    pages = len(found.get("pages") or [])
    return 0, None, f"read {pages} page{'s' if pages != 1 else ''} for the business details; stored: {', '.join(kept) or 'nothing new'}"


def run(args: argparse.Namespace) -> int:
    settings = project_settings(parse_set_options(args.set))
    worker = Worker(settings, args.set)

    async def main() -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, worker.stop)
        return await worker.serve(args.once)

    return asyncio.run(main())
