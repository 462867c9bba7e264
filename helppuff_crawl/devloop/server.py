"""The local dev loop: the local cloud on loopback, and `wrangler dev` answering from it.

    with DevServer(DevOptions(data_dir=Path(".helppuff"), port=8787)) as dev:
        dev.wait_ready()
        httpx.post(f"{dev.worker_url}/v1/sites/acme/search", json={"query": "hot water?"})

`start()` serves the local cloud (helppuff_crawl.local.server) on 127.0.0.1 with a random bearer
token, loads the bundled embedding model in the background (so the first search is not slowed
by it; the local relevance model, helppuff_crawl/local/relevance.py, needs nothing more: it reads
the vectors the crawl stored), and starts the Worker's own wrangler (worker/node_modules, under worker/.node's Node 22)
in a process group of its own:

    wrangler dev --local --env local --env-file <tmp>/local-cloud.env --ip 127.0.0.1 --port PORT

When a site's stored settings name a module retriever (knowledge.retrieval "custom"), the script
wrangler runs is `<data dir>/worker-entry.ts`, which bundles the modules into the Worker
(helppuff_crawl/deploy/entry.py); restart serve after naming a new one.

Env "local" in worker/wrangler.jsonc declares no D1, Vectorize or AI binding, so nothing is
remote and Miniflare's own D1 is not used: the Worker's dev shims (worker/src/dev.ts) call the
local cloud at HELPPUFF_LOCAL_CLOUD_URL with HELPPUFF_LOCAL_CLOUD_TOKEN, given in an env file
only this user can read (not on a command line), and so read the very SQLite file the crawl
wrote. The same file carries the Worker's secret RETELL_API_KEY when it is set in serve's environment
(it verifies the Retell custom function's calls), and the chat providers' keys and base URLs
(OPENAI_API_KEY, OPENAI_BASE_URL, GEMINI_..., ANTHROPIC_..., each only when set; backend.type openai,
gemini and anthropic generate with them), and the secrets `helppuff secret set` stored for this data
folder (`<data dir>/worker-secrets.env`, e.g. a custom retriever's token; a variable of the same name
in serve's environment wins, and a secret a site's retriever names is passed from serve's environment
when set there), and the Worker's URL is recorded in the state file
(the local account's "worker" entry), where `helppuff status` finds it, with serve's pid and the names
of the secrets passed (helppuff_crawl/devloop/serve_secrets.py: `helppuff rag set` and `helppuff secret
set` read them to say when serve must be restarted). The Worker reads its secrets from that file only:
`notices` has a line for each site whose retriever names a secret it does not get, which serve prints. With `DevOptions.chat` (HELPPUFF_LOCAL_CHAT_URL) the local cloud answers chat models from
that OpenAI-compatible server (helppuff_crawl.local.chat); without it the Worker's answers are
extractive. Nothing else leaves the machine: wrangler runs with CLOUDFLARE_CF_FETCH_ENABLED=false,
WRANGLER_SEND_METRICS=false, WRANGLER_SEND_ERROR_REPORTS=false, WRANGLER_HIDE_BANNER=true (the
banner asks npm for a newer wrangler) and no Cloudflare credentials.

wrangler's output goes to `output` (a callable taking one line), without the warning that env
"local" lacks the top-level bindings, which is the point of it. `wait_ready()` polls until the
Worker answers and the model is loaded; `stop()` ends wrangler's process group (SIGTERM, then
SIGKILL) and the local cloud, and removes the temporary folder.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import httpx

from helppuff_crawl import settings as declared_settings
from helppuff_crawl.cloudflare.state import LOCAL_ACCOUNT, DeployState
from helppuff_crawl.deploy.entry import write_entry
from helppuff_crawl.deploy.toolchain import (
    WORKER_DIR,
    DevServerError,
    Toolchain,
    drop_inheritance_warnings,
    find_toolchain,
    wrangler_environment,
)
from helppuff_crawl.devloop.serve_secrets import serve_record, unset_secret_notices, worker_answers
from helppuff_crawl.devloop.worker_secrets import (
    PROVIDER_VARIABLES,
    declared_provider_vars,
    local_secrets,
    named_secrets,
    secret_lines,
)
from helppuff_crawl.kb.crawl_queue import consumer_settings
from helppuff_crawl.kb.site_settings import ALL_SITE_SETTINGS

if TYPE_CHECKING:
    from helppuff_crawl.local.chat import ChatServerConfig
    from helppuff_crawl.local.cloud import LocalCloud
    from helppuff_crawl.local.server import LocalCloudServer

logger = logging.getLogger(__name__)

WRANGLER_ENV = "local"
DEFAULT_PORT = 8787
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class DevOptions:
    data_dir: Path  # the local knowledge base (HELPPUFF_DATA_DIR)
    port: int = DEFAULT_PORT  # the Worker's port on 127.0.0.1
    cloud_port: int = 0  # the local cloud's port; 0 picks a free one
    database: str = "helppuff"  # D1 database name (HELPPUFF_D1_DATABASE)
    index: str = "helppuff"  # Vectorize index name (HELPPUFF_VECTORIZE_INDEX)
    worker_dir: Path = WORKER_DIR
    chat: ChatServerConfig | None = None  # an OpenAI-compatible chat server (HELPPUFF_LOCAL_CHAT_URL), or none
    vectorize_delay: float | None = None  # seconds before a Vectorize write applies (HELPPUFF_LOCAL_VECTORIZE_DELAY)
    # The Worker secret RETELL_API_KEY (HELPPUFF_RETELL_API_KEY, from env RETELL_API_KEY); "": not passed.
    retell_api_key: str = field(default=declared_settings.HELPPUFF_RETELL_API_KEY, repr=False)
    # The chat providers' secrets and vars (PROVIDER_VARIABLES), from serve's environment; "": not passed.
    provider_vars: dict[str, str] = field(default_factory=declared_provider_vars, repr=False, hash=False)

    def __post_init__(self) -> None:
        for name in ("port", "cloud_port"):
            value = getattr(self, name)
            if not 0 <= value <= 65535:
                raise ValueError(f"{name.replace('_', '-')} must be a port number (0-65535), got {value}")
        if self.port == 0:
            raise ValueError("port must not be 0: the Worker needs a known port")
        if any(c in self.retell_api_key for c in "\r\n\0"):
            raise ValueError("RETELL_API_KEY must be one line")
        for name, value in self.provider_vars.items():
            if name not in PROVIDER_VARIABLES:
                raise ValueError(f"{name} is not a provider variable ({', '.join(PROVIDER_VARIABLES)})")
            if any(c in value for c in "\r\n\0"):
                raise ValueError(f"{name} must be one line")


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def wrangler_command(tool: Toolchain, options: DevOptions, env_file: Path, state_dir: Path,
                     entry: Path | None = None) -> list[str]:
    """The `wrangler dev` command line (the token is in env_file, not here); `entry`, when given, is the
    script run instead of the config's main (the entry bundling the module retrievers: deploy/entry.py)."""
    return [
        str(tool.node), str(tool.wrangler), "dev", *([str(entry)] if entry is not None else []),
        "--config", str(options.worker_dir / "wrangler.jsonc"),
        "--local", "--env", WRANGLER_ENV, "--env-file", str(env_file),
        "--ip", LOOPBACK, "--port", str(options.port),
        "--persist-to", str(state_dir),
        "--show-interactive-dev-session=false",
        "--log-level", "info",
    ]


class DevServer:
    """The local cloud (in this process) and `wrangler dev` (a child process group)."""

    def __init__(self, options: DevOptions, output: Callable[[str], Any] | None = None) -> None:
        self.options = options
        self.output = output or (lambda line: logger.info("wrangler: %s", line))
        self.tail: deque[str] = deque(maxlen=40)  # wrangler's last lines, for error messages
        self.cloud: LocalCloud | None = None  # set by start()
        self.cloud_url = ""  # the local cloud's API base, http://127.0.0.1:PORT/client/v4
        self.token = ""
        self.passed: list[str] = []  # the names of the Worker secrets passed (set by start())
        self.process: subprocess.Popen[str] | None = None
        # Set by start(): one line per site whose retriever names a secret the Worker is not given.
        self.notices: list[str] = []
        self._server: LocalCloudServer | None = None
        self._tmp: Path | None = None
        self._reader: threading.Thread | None = None
        self._warmup: threading.Thread | None = None
        self._warmup_error: Exception | None = None
        self._stopped = threading.Event()

    @property
    def worker_url(self) -> str:
        return f"http://{LOOPBACK}:{self.options.port}"

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        from helppuff_crawl.local.ai import LocalAI
        from helppuff_crawl.local.chat import OpenAIChat
        from helppuff_crawl.local.cloud import LocalCloud
        from helppuff_crawl.local.server import serve_local_cloud

        tool = find_toolchain(self.options.worker_dir)
        if not port_is_free(self.options.port):
            raise DevServerError(f"port {self.options.port} on {LOOPBACK} is in use: pass another --port")
        if self.options.cloud_port and not port_is_free(self.options.cloud_port):
            raise DevServerError(f"port {self.options.cloud_port} on {LOOPBACK} is in use: pass another --cloud-port")
        ai = LocalAI(chat=OpenAIChat(self.options.chat)) if self.options.chat is not None else None
        self.cloud = cloud = LocalCloud(self.options.data_dir, ai=ai, vectorize_delay=self.options.vectorize_delay)
        # D1 addresses a database by UUID: the one the crawl recorded, found by name or created.
        self.database_id = cloud.database_named(self.options.database)
        DeployState(self.options.data_dir).record_database(LOCAL_ACCOUNT, self.options.database, self.database_id)
        # The crawl queue, for the recrawl webhook's jobs: found by name or made, and recorded.
        self.queue_id = cloud.queues.ensure_pull_queue(
            declared_settings.HELPPUFF_QUEUE, declared_settings.HELPPUFF_QUEUE_DEAD_LETTER,
            consumer_settings(declared_settings.HELPPUFF_QUEUE_VISIBILITY))
        DeployState(self.options.data_dir).record_queue(LOCAL_ACCOUNT, declared_settings.HELPPUFF_QUEUE, self.queue_id)
        self.token = secrets.token_urlsafe(24)
        self._server, self.cloud_url = serve_local_cloud(cloud, LOOPBACK, self.options.cloud_port, token=self.token)
        self._warmup = threading.Thread(target=self._load_models, args=(cloud,), name="helppuff-warmup", daemon=True)
        self._warmup.start()

        # The sites' module retrievers, bundled into the Worker through an entry file (deploy/entry.py).
        rows = self._settings_rows(cloud)
        entry = write_entry(self.options.data_dir, rows, self.options.worker_dir)
        for key, sites in entry.modules.items():
            self.output(f"Module retriever bundled: {key} (site {', '.join(sites)})")
        for key, sites in entry.missing.items():
            self.output(f"Module retriever left out, no such file: {key} (site {', '.join(sites)})")

        self._tmp = Path(tempfile.mkdtemp(prefix="helppuff-serve-"))
        env_file = self._tmp / "local-cloud.env"
        env_file.touch(mode=0o600)
        secret_text = secret_lines(self.options.retell_api_key, self.options.provider_vars,
                                   {**named_secrets(rows), **local_secrets(self.options.data_dir)})
        env_file.write_text(
            f"HELPPUFF_LOCAL_CLOUD_URL={self.cloud_url.removesuffix('/client/v4')}\n"
            f"HELPPUFF_LOCAL_CLOUD_TOKEN={self.token}\n"
            f"HELPPUFF_D1_DATABASE_ID={self.database_id}\n"
            f"HELPPUFF_QUEUE_ID={self.queue_id}\n"
            f"HELPPUFF_VECTORIZE_INDEX={self.options.index}\n"
            + secret_text,
            encoding="utf-8",
        )
        # The Worker reads its secrets once, from that file: a retriever naming one not in it cannot search.
        passed = [line.split("=", 1)[0] for line in secret_text.splitlines()]
        self.passed = passed
        self.notices = unset_secret_notices(rows, passed)
        # Where the Worker answers, for `helppuff status` (the Retell function's URL) while none is deployed,
        # and which secrets it has, for `helppuff rag set` and `helppuff secret set` (serve_secrets.py).
        DeployState(self.options.data_dir).record_worker(LOCAL_ACCOUNT, serve_record(self.worker_url, passed))
        command = wrangler_command(tool, self.options, env_file, self._tmp / "state", entry.path)
        logger.info("Starting %s", " ".join(command))
        self.process = subprocess.Popen(
            command, cwd=self.options.worker_dir, env=wrangler_environment(tool),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, encoding="utf-8", errors="replace", bufsize=1, start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read_output, name="helppuff-wrangler-output", daemon=True)
        self._reader.start()

    def _settings_rows(self, cloud: LocalCloud) -> list[tuple[str, str | None]]:
        """Every site's stored settings (site, JSON text); none when the table is not there yet."""
        try:
            result = cloud.database(self.database_id).query([(ALL_SITE_SETTINGS, [])])
        except Exception:  # a knowledge base not migrated yet: no site has settings
            logger.debug("Could not read site_settings", exc_info=True)
            return []
        return [(row["site"], row["settings"]) for row in result[0]["results"]]

    def _load_models(self, cloud: LocalCloud) -> None:
        from helppuff_crawl.local.ai import LOCAL_MODEL

        try:
            if LOCAL_MODEL in cloud.ai.models:
                cloud.ai.run(LOCAL_MODEL, {"text": ["warm up"]})
        except Exception as exc:  # raised again by wait_ready, as a DevServerError
            logger.exception("Could not load the local embedding model")
            self._warmup_error = exc

    def _read_output(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        lines = (line.rstrip("\n") for line in self.process.stdout)
        for line in drop_inheritance_warnings(lines):
            self.tail.append(line)
            try:
                self.output(line)
            except Exception:
                logger.debug("Could not pass on a wrangler line", exc_info=True)

    def exited(self) -> int | None:
        """wrangler's exit status, or None while it runs."""
        return None if self.process is None else self.process.poll()

    def wait_ready(self, timeout: float = 120.0, interval: float = 0.25) -> None:
        """Return once the Worker answers and the embedding model is loaded; DevServerError otherwise."""
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=5.0, trust_env=False) as client:
            while True:
                status = self.exited()
                if status is not None:
                    self._join_reader()
                    raise DevServerError(f"wrangler dev exited with status {status}:\n" + "\n".join(self.tail))
                if self._answers(client):
                    break
                if time.monotonic() > deadline:
                    raise DevServerError(f"the Worker did not answer on {self.worker_url} within {timeout:.0f} s:\n"
                                         + "\n".join(self.tail))
                time.sleep(interval)
        if self._warmup is not None:
            self._warmup.join(max(0.0, deadline - time.monotonic()))
        if self._warmup_error is not None:
            raise DevServerError(f"the local embedding model did not load: {self._warmup_error}")

    def _answers(self, client: httpx.Client) -> bool:
        """True when our Worker answers (its JSON 404 for an unknown path)."""
        return worker_answers(client, self.worker_url)

    def _join_reader(self) -> None:
        if self._reader is not None:
            self._reader.join(timeout=5)

    def stop(self, grace: float = 10.0) -> None:
        """Stop wrangler's process group and the local cloud; safe to call twice."""
        self._stopped.set()
        process, self.process = self.process, None
        if process is not None:
            _stop_group(process, grace)
            self._join_reader()
            if process.stdout is not None:
                process.stdout.close()
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._warmup is not None:
            self._warmup.join(timeout=grace)
        if self.cloud is not None:
            self.cloud.close()
            self.cloud = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _stop_group(process: subprocess.Popen[str], grace: float) -> None:
    """SIGTERM to the child's process group (wrangler and workerd), SIGKILL after `grace` seconds.

    The child leads its own group (start_new_session), so the group id is its pid.
    """
    group = process.pid
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            logger.warning("wrangler dev did not stop within %.0f s: killing it", grace)
    # workerd may outlive wrangler for a moment: leave nothing of the group behind.
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass
