"""Where a crawl's CPU goes: CPU seconds per stage, recorded in the crawl's stats when asked.

Off by default, and then nothing is timed: the extension raises NotConfigured, so no wrapper is
installed and a normal crawl pays nothing. With HELPPUFF_PROFILE_STAGES on, at spider_opened it
wraps the crawl's own components, and at spider_closed it records what they cost:

    extract  BoilerplatePipeline and ExtractMarkdownPipeline (Markdown, title, facts)
    chunk    HashPipeline and ChunkPipeline
    embed    the model: the Workers AI calls (the client's encoding and decoding of them on the
             reactor's thread, the local cloud's run of the model on its worker thread) and the
             CPU of the process's native threads that are not Python's (the model's own
             intra-op threads, e.g. torch's OpenMP pool, the tokenizer's)
    write    StorePipeline (its pages, its writes, the work after the last page) and every D1 and
             Vectorize call, on either thread
    fetch    the rest of the reactor's thread: Scrapy's engine, downloader and middlewares, the
             spider's parsing of responses
    other    the rest of the process (EmbedPipeline's reuse check and batching, other threads)

How: time.thread_time (the CPU clock of the thread that runs the code) around each step of each
wrapped coroutine or call, exclusive of the wrapped calls nested inside it (a pipeline step that
calls D1 counts the call under "write", the rest under its pipeline); the local cloud's calls
run on worker threads and are timed there; native threads are read from /proc/self/task (Linux;
elsewhere they fall into "other"). The window is spider_opened to spider_closed, so the pipelines'
open_spider work (once per crawl) is outside it; the crawl's start (extensions/run.py, once per crawl,
on spider_opened after the run row is written) falls in it, its D1 and Vectorize calls under "write".

Enable: EXTENSIONS {"helppuff_crawl.extensions.profile.StageProfile": 10}, HELPPUFF_PROFILE_STAGES.
Stats (milliseconds of CPU, seconds of wall): helppuff/profile/cpu_ms/{fetch,extract,chunk,embed,
write,other,total}, helppuff/profile/pipeline_ms/<pipeline class>, helppuff/profile/wall_s,
helppuff/profile/embed/busy_s (wall time with a model call running in the local cloud).
"""

from __future__ import annotations

import inspect
import logging
import os
import threading
import time
import types
from collections import defaultdict
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

STAGES = ("fetch", "extract", "chunk", "embed", "write", "other")
_PIPELINE_STAGES = {
    "BoilerplatePipeline": "extract", "ExtractMarkdownPipeline": "extract",
    "HashPipeline": "chunk", "ChunkPipeline": "chunk",
    "EmbedPipeline": "other",  # its own part: the model's calls are timed as "embed" inside it
    "StorePipeline": "write",
}
_CLIENT_PREFIXES = {"ai_": "embed", "d1_": "write", "vectorize_": "write"}


class _Clock:
    """Exclusive thread-CPU seconds per key on the reactor's thread: nested timed regions pause
    the one around them, so each second is counted once."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[str] = []
        self._mark = 0.0

    def enter(self, key: str) -> None:
        now = time.thread_time()
        if self._stack:
            self.seconds[self._stack[-1]] += now - self._mark
        self._stack.append(key)
        self._mark = now

    def leave(self) -> None:
        now = time.thread_time()
        self.seconds[self._stack.pop()] += now - self._mark
        self._mark = now

    def call(self, key: str, function: Callable[..., Any]) -> Callable[..., Any]:
        """`function` timed under `key` (each step of it, when it is a coroutine function)."""
        if inspect.iscoroutinefunction(function):
            async def timed_coroutine(*args: Any, **kwargs: Any) -> Any:
                return await self._steps(key, function(*args, **kwargs))
            return timed_coroutine

        def timed(*args: Any, **kwargs: Any) -> Any:
            self.enter(key)
            try:
                result = function(*args, **kwargs)
            finally:
                self.leave()
            if inspect.isawaitable(result):  # a plain function handing back a coroutine
                return self._steps(key, result)
            return result
        return timed

    @types.coroutine
    def _steps(self, key: str, coro: Coroutine[Any, Any, Any]) -> Any:
        """Drive `coro`, timing each of its steps (never the waits between them)."""
        value: Any = None
        error: BaseException | None = None
        while True:
            self.enter(key)
            try:
                sent = coro.throw(error) if error is not None else coro.send(value)
            except StopIteration as stop:
                return stop.value
            finally:
                self.leave()
            try:
                value, error = (yield sent), None
            except BaseException as exc:  # handed on to the coroutine, as a plain await would
                value, error = None, exc


class _TimedCloud:
    """The local cloud, its calls timed on the worker thread that runs each (thread CPU by stage),
    and the wall time with a model call running."""

    def __init__(self, cloud: Any) -> None:
        self._cloud = cloud
        self._lock = threading.Lock()
        self.seconds: dict[str, float] = defaultdict(float)
        self.busy = 0.0
        self._running = 0
        self._since = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cloud, name)

    def serve(self, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        """LocalCloud.serve, the entry LocalTransport calls, timed."""
        stage = "embed" if "/ai/run/" in path else "write"
        if stage == "embed":
            self._model_call(+1)
        started = time.thread_time()
        try:
            return self._cloud.serve(method, path, *args, **kwargs)
        finally:
            spent = time.thread_time() - started
            with self._lock:
                self.seconds[stage] += spent
            if stage == "embed":
                self._model_call(-1)

    def _model_call(self, step: int) -> None:
        with self._lock:
            now = time.perf_counter()
            if self._running:
                self.busy += now - self._since
            self._since = now
            self._running += step


def _native_thread_seconds() -> dict[int, float]:
    """CPU seconds of each of the process's threads, by native id ({} where /proc is not there)."""
    tick = os.sysconf("SC_CLK_TCK")
    found: dict[int, float] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return found
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except OSError:  # the thread ended meanwhile
            continue
        found[int(tid)] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return found


def _model_thread_seconds(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds, between two readings, of the native threads that are not Python threads."""
    python = {thread.native_id for thread in threading.enumerate()}
    return sum(seconds - before.get(tid, 0.0) for tid, seconds in after.items() if tid not in python)


class StageProfile:
    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HELPPUFF_PROFILE_STAGES"):
            raise NotConfigured("HELPPUFF_PROFILE_STAGES is off")
        self.crawler = crawler
        self.stats = crawler.stats
        self.clock = _Clock()
        self.cloud: _TimedCloud | None = None
        self._start: tuple[float, float, float, dict[int, float]] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        profile = cls(crawler)
        crawler.signals.connect(profile.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(profile.spider_closed, signal=signals.spider_closed)
        return profile

    def spider_opened(self) -> None:
        self._wrap_pipelines()
        self._wrap_client()
        self._start = (time.perf_counter(), time.process_time(), time.thread_time(), _native_thread_seconds())

    def _wrap_pipelines(self) -> None:
        assert self.crawler.engine is not None
        itemproc = self.crawler.engine.scraper.itemproc
        for name in ("process_item", "close_spider"):
            methods = itemproc.methods[name]
            for index, method in enumerate(methods):
                owner = type(getattr(method, "__self__", None)).__name__
                if owner in _PIPELINE_STAGES:
                    methods[index] = self.clock.call(f"pipeline/{owner}", method)

    def _wrap_client(self) -> None:
        from helppuff_crawl.extensions.run import CrawlRun

        run = self.crawler.get_extension(CrawlRun)
        if run is None:
            return
        client = run.kb.client
        for name in dir(type(client)):
            stage = next((s for prefix, s in _CLIENT_PREFIXES.items() if name.startswith(prefix)), None)
            if stage is not None and inspect.iscoroutinefunction(getattr(type(client), name)):
                setattr(client, name, self.clock.call(stage, getattr(client, name)))
        # The crawl's one writer (the store's): its page writes run as tasks of their own, outside process_item.
        run.writer.write_pages = self.clock.call("write", run.writer.write_pages)
        transport = client.transport
        if hasattr(transport, "cloud"):  # the local cloud, in this process (on worker threads)
            self.cloud = transport.cloud = _TimedCloud(transport.cloud)

    def spider_closed(self) -> None:
        if self._start is None:
            return
        wall0, process0, main0, threads0 = self._start
        wall, process, main = time.perf_counter() - wall0, time.process_time() - process0, time.thread_time() - main0
        model_threads = _model_thread_seconds(threads0, _native_thread_seconds())
        stages = dict.fromkeys(STAGES, 0.0)
        timed_on_main = 0.0
        for key, seconds in self.clock.seconds.items():
            timed_on_main += seconds
            if key.startswith("pipeline/"):
                stages[_PIPELINE_STAGES[key.removeprefix("pipeline/")]] += seconds
                self.stats.set_value(f"helppuff/profile/pipeline_ms/{key.removeprefix('pipeline/')}",
                                     round(seconds * 1000, 1))
            else:
                stages[key] += seconds
        stages["fetch"] = max(0.0, main - timed_on_main)
        stages["embed"] += model_threads
        if self.cloud is not None:
            for stage, seconds in self.cloud.seconds.items():
                stages[stage] += seconds
            self.stats.set_value("helppuff/profile/embed/busy_s", round(self.cloud.busy, 3))
        stages["other"] += max(0.0, process - sum(stages.values()))
        for stage, seconds in stages.items():
            self.stats.set_value(f"helppuff/profile/cpu_ms/{stage}", round(seconds * 1000, 1))
        self.stats.set_value("helppuff/profile/cpu_ms/total", round(process * 1000, 1))
        self.stats.set_value("helppuff/profile/wall_s", round(wall, 3))
