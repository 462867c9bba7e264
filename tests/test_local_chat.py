"""The local cloud's chat models: Workers AI `run` forwarded to an OpenAI-compatible server.

FakeChatServer is a fake OpenAI-compatible server (stdlib http.server on loopback): it records each
request and answers with scripted replies, in turn (the last one repeats).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.local.ai import LocalAI
from helppuff_crawl.local.chat import CHAT_SERVER_ERROR, ChatServerConfig, OpenAIChat
from helppuff_crawl.local.cloud import LocalCloud
from tests.fakes import HashModel

CHAT_PATH = "/client/v4/accounts/local/ai/run/@cf/zai-org/glm-4.7-flash"

# What the Worker sends for an answer of its default model (worker/src/chat/answer.ts callModel):
# messages, stream: true, stream_options, max_completion_tokens, tools.
TOOLS = [{"type": "function", "function": {"name": "show_contact_form", "description": "Ask for contact details",
                                           "parameters": {"type": "object", "properties": {}}}}]
MESSAGES = [{"role": "system", "content": "Answer from the passages [1]."},
            {"role": "user", "content": "How much is a call-out?"}]
WORKER_INPUT = {"messages": MESSAGES, "stream": True, "stream_options": {"include_usage": True},
                "max_completion_tokens": 1024, "tools": TOOLS}
# ... and for a query rewrite (worker/src/retrieve.ts): reasoning off, one line of query.
REWRITE_INPUT = {"messages": MESSAGES, "temperature": 0, "max_completion_tokens": 128,
                 "chat_template_kwargs": {"enable_thinking": False}}

PLAIN_ANSWER = {
    "id": "chatcmpl-1", "object": "chat.completion", "model": "qwen3:4b",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "A call-out is $90 [1].",
                                         "reasoning_content": "The passage says 90."},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 42, "completion_tokens": 9, "total_tokens": 51},
}
TOOL_CALL = {"id": "call_abc", "type": "function", "function": {"name": "show_contact_form", "arguments": "{}"}}
TOOL_ANSWER = {
    "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
                 "finish_reason": "tool_calls"}],
    "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62},
}


class FakeChatServer:
    """A fake OpenAI-compatible chat server on 127.0.0.1; `replies` are (status, JSON body) in turn."""

    def __init__(self, replies: list[tuple[int, Any]]) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[str, str, Any]] = []  # (method, path, parsed JSON body)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake.requests.append(("POST", self.path, json.loads(body)))
                status, answer = fake.replies[0] if len(fake.replies) == 1 else fake.replies.pop(0)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def chat_server(request: pytest.FixtureRequest) -> Iterator[FakeChatServer]:
    server = FakeChatServer(request.param)
    yield server
    server.close()


def _cloud(tmp_path: Path, chat: ChatServerConfig | None) -> LocalCloud:
    ai = LocalAI({"@fake/hash-8": HashModel(8)}, chat=OpenAIChat(chat) if chat is not None else None)
    return LocalCloud(tmp_path, ai=ai)


def _post(cloud: LocalCloud, payload: Any, path: str = CHAT_PATH) -> tuple[int, dict[str, Any]]:
    response = cloud.handle("POST", path, json.dumps(payload).encode(), {"content-type": "application/json"})
    return response.status, response.body


@pytest.mark.parametrize("chat_server", [[(200, PLAIN_ANSWER)]], indirect=True)
def test_plain_answer_is_forwarded_and_returned(tmp_path: Path, chat_server: FakeChatServer) -> None:
    status, body = _post(_cloud(tmp_path, ChatServerConfig(chat_server.url)), WORKER_INPUT)
    assert chat_server.requests == [("POST", "/v1/chat/completions", {
        "model": "@cf/zai-org/glm-4.7-flash", "messages": MESSAGES, "tools": TOOLS, "max_tokens": 1024,
        "stream": False,
    })]
    assert (status, body) == (200, {"success": True, "errors": [], "messages": [], "result": {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "A call-out is $90 [1]."},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 9, "total_tokens": 51},
    }})


@pytest.mark.parametrize("chat_server", [[(200, PLAIN_ANSWER)]], indirect=True)
def test_a_rewrite_goes_with_reasoning_off_and_its_bound_as_max_tokens(tmp_path: Path,
                                                                        chat_server: FakeChatServer) -> None:
    status, _ = _post(_cloud(tmp_path, ChatServerConfig(chat_server.url)), REWRITE_INPUT)
    assert status == 200
    assert chat_server.requests == [("POST", "/v1/chat/completions", {
        "model": "@cf/zai-org/glm-4.7-flash", "messages": MESSAGES, "max_tokens": 128, "temperature": 0,
        "chat_template_kwargs": {"enable_thinking": False}, "stream": False,
    })]


@pytest.mark.parametrize("chat_server", [[(200, TOOL_ANSWER)]], indirect=True)
def test_tool_call_with_a_configured_model_name(tmp_path: Path, chat_server: FakeChatServer) -> None:
    cloud = _cloud(tmp_path, ChatServerConfig(chat_server.url + "/", model="qwen3:4b"))
    status, body = _post(cloud, {"messages": MESSAGES, "tools": [], "temperature": 0.2})
    assert chat_server.requests == [("POST", "/v1/chat/completions", {
        "model": "qwen3:4b", "messages": MESSAGES, "temperature": 0.2, "stream": False,
    })]
    assert status == 200
    assert body["result"] == {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]},
                     "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62},
    }


@pytest.mark.parametrize(
    ("chat_server", "model", "detail"),
    [
        ([(500, {"error": {"message": "model crashed", "type": "server_error"}})], "",
         "answered HTTP 500: model crashed"),
        ([(404, {"error": "model '@cf/zai-org/glm-4.7-flash' not found"})], "",
         ("answered HTTP 404: model '@cf/zai-org/glm-4.7-flash' not found"
          " (set HELPPUFF_LOCAL_CHAT_MODEL to a model the server has)")),
        ([(404, {"error": "model 'qwen3:4b' not found"})], "qwen3:4b",
         "answered HTTP 404: model 'qwen3:4b' not found"),
        ([(200, {"object": "chat.completion", "choices": []})], "",
         'answered without choices[0].message: {"object": "chat.completion", "choices": []}'),
    ],
    indirect=["chat_server"],
)
def test_server_errors_are_502_naming_the_server(
    tmp_path: Path, chat_server: FakeChatServer, model: str, detail: str
) -> None:
    status, body = _post(_cloud(tmp_path, ChatServerConfig(chat_server.url, model)), WORKER_INPUT)
    assert status == 502
    assert body["success"] is False
    assert body["errors"] == [{"code": CHAT_SERVER_ERROR,
                               "message": f"Local chat server {chat_server.url}/chat/completions {detail}"}]
    assert len(chat_server.requests) == 1


def test_unreachable_server_is_502(tmp_path: Path) -> None:
    server = FakeChatServer([(200, PLAIN_ANSWER)])
    url = server.url
    server.close()  # nothing listens on its port now
    status, body = _post(_cloud(tmp_path, ChatServerConfig(url)), WORKER_INPUT)
    assert status == 502
    [error] = body["errors"]
    assert error["code"] == CHAT_SERVER_ERROR
    assert error["message"].startswith(f"Local chat server {url}/chat/completions could not be reached: ConnectError")
    assert "5007" not in error["message"] and "no such model" not in error["message"].lower()


def test_without_a_chat_server_chat_models_are_5007(tmp_path: Path) -> None:
    status, body = _post(_cloud(tmp_path, None), WORKER_INPUT)
    assert (status, body["errors"]) == (400, [{"code": 5007, "message": "No such model @cf/zai-org/glm-4.7-flash or task"}])


@pytest.mark.parametrize("chat_server", [[(200, PLAIN_ANSWER)]], indirect=True)
@pytest.mark.parametrize(
    ("path", "payload"),
    [
        ("/client/v4/accounts/local/ai/run/@cf/baai/bge-m3", {"text": ["hello"]}),
        ("/client/v4/accounts/local/ai/run/@cf/baai/bge-reranker-base", {"query": "q", "contexts": [{"text": "a"}]}),
    ],
)
def test_with_a_chat_server_other_unknown_models_stay_5007(
    tmp_path: Path, chat_server: FakeChatServer, path: str, payload: dict[str, Any]
) -> None:
    status, body = _post(_cloud(tmp_path, ChatServerConfig(chat_server.url)), payload, path)
    assert (status, body["errors"][0]["code"]) == (400, 5007)
    assert chat_server.requests == []


@pytest.mark.parametrize("chat_server", [[(200, PLAIN_ANSWER)]], indirect=True)
def test_with_a_chat_server_registered_models_still_embed(tmp_path: Path, chat_server: FakeChatServer) -> None:
    status, body = _post(_cloud(tmp_path, ChatServerConfig(chat_server.url)), {"text": ["hello"]},
                         "/client/v4/accounts/local/ai/run/@fake/hash-8")
    assert (status, body["result"]["shape"]) == (200, [1, 8])
    assert chat_server.requests == []


@pytest.mark.parametrize(
    "url", ["", "127.0.0.1:11434/v1", "ftp://127.0.0.1/v1", "http:///v1", "http://127.0.0.1:8080/v1?x=1"]
)
def test_config_refuses_urls_that_are_not_http_base_urls(url: str) -> None:
    with pytest.raises(ValueError, match="HELPPUFF_LOCAL_CHAT_URL"):
        ChatServerConfig(url)


@pytest.mark.parametrize(
    ("url", "base", "loopback"),
    [
        ("http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434/v1", True),
        ("http://localhost:8080/v1", "http://localhost:8080/v1", True),
        ("https://gpu-box.lan/v1", "https://gpu-box.lan/v1", False),
    ],
)
def test_config_base_url(url: str, base: str, loopback: bool) -> None:
    config = ChatServerConfig(url)
    assert (config.url, config.is_loopback, OpenAIChat(config).endpoint) == (base, loopback, base + "/chat/completions")
