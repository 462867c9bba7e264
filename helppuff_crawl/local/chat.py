"""Chat models for the local cloud: Workers AI `run` answered by an OpenAI-compatible server.

When `HELPPUFF_LOCAL_CHAT_URL` names one (llama.cpp's `llama-server`, Ollama, vLLM...; the base
URL up to `/v1`, e.g. http://127.0.0.1:11434/v1), a chat request the local cloud gets, a Workers
AI `run` with a `messages` list for a model it has no embedder for, goes there:

    POST {url}/chat/completions  {"model", "messages", "tools"?, "max_tokens"?, "temperature"?,
                                  "top_p"?, "chat_template_kwargs"?, "stream": false}

and its answer comes back in OpenAI's non-streamed shape, which the Worker reads
(worker/src/chat/model.ts): `{"choices": [{"index": 0, "message": {"role": "assistant",
"content", "tool_calls"?}, "finish_reason"}], "usage"?}`. The Worker asks for `stream: true`;
the local cloud answers every request whole (one JSON envelope), so the server is always asked
for `stream: false`.

The bound on what the model generates goes as `max_tokens`, the name every OpenAI-compatible
server takes, also when the Worker sends it as `max_completion_tokens` (the field
@cf/zai-org/glm-4.7-flash documents, `max_tokens` being deprecated there). `chat_template_kwargs`
(`{"enable_thinking": false}` for the query rewrite) goes as it is: llama-server and vLLM hand it
to the model's chat template, and a server that does not know it ignores it. `stream_options`
does not go: the server is asked for one answer whole, which carries its `usage` anyway.

The model name: `HELPPUFF_LOCAL_CHAT_MODEL` when set (Ollama needs one it has pulled, e.g.
`qwen3:4b`); otherwise the Workers AI id the Worker asked for (e.g. @cf/zai-org/glm-4.7-flash)
is passed through unchanged, which llama-server accepts whatever its one loaded model is.

Only the configured URL is called: no proxy from the environment, no redirects followed. A
server that cannot be reached, answers HTTP >= 400, or answers something that is not a chat
completion is an AIError with HTTP 502 and code CHAT_SERVER_ERROR, naming the server, so the
Worker reports a failed model (not a missing one, which would mean an extractive answer).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from helppuff_crawl.local.errors import AIError

logger = logging.getLogger(__name__)

CHAT_SERVER_ERROR = 3050  # the local cloud's code for "the chat server failed"
DEFAULT_TIMEOUT = 120.0  # seconds; a CPU-bound local model may take a while for one answer
# Workers AI chat inputs passed on as they are (besides messages and tools).
_PASSED_OPTIONS = ("max_tokens", "temperature", "top_p", "chat_template_kwargs")
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class ChatServerConfig:
    url: str  # base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1
    model: str = ""  # model name sent to the server; "" passes the requested Workers AI id through
    timeout: float = DEFAULT_TIMEOUT  # seconds per request

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError(
                f"HELPPUFF_LOCAL_CHAT_URL must be an http(s) base URL like http://127.0.0.1:11434/v1, got {self.url!r}"
            )
        if self.timeout <= 0:
            raise ValueError(f"the chat server timeout must be > 0 seconds, got {self.timeout}")
        object.__setattr__(self, "url", self.url.rstrip("/"))

    @property
    def is_loopback(self) -> bool:
        return urlsplit(self.url).hostname in _LOOPBACK_HOSTS


def is_chat_request(payload: Any) -> bool:
    """True for a Workers AI chat input: an object with a `messages` list."""
    return isinstance(payload, dict) and isinstance(payload.get("messages"), list)


class OpenAIChat:
    """Workers AI chat `run` on an OpenAI-compatible server's /chat/completions."""

    def __init__(self, config: ChatServerConfig) -> None:
        self.config = config
        if not config.is_loopback:
            logger.info("Chat requests go to %s, a server off this machine", config.url)

    @property
    def endpoint(self) -> str:
        return f"{self.config.url}/chat/completions"

    def request_body(self, model: str, payload: dict[str, Any]) -> dict[str, Any]:
        """What goes to the server for a Workers AI chat input."""
        body: dict[str, Any] = {"model": self.config.model or model, "messages": payload["messages"]}
        if payload.get("tools"):
            body["tools"] = payload["tools"]
        for key in _PASSED_OPTIONS:
            if payload.get(key) is not None:
                body[key] = payload[key]
        if body.get("max_tokens") is None and payload.get("max_completion_tokens") is not None:
            body["max_tokens"] = payload["max_completion_tokens"]
        body["stream"] = False
        return body

    def run(self, model: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The chat completion for `payload` (Workers AI chat input), or AIError (502)."""
        body = self.request_body(model, payload)
        try:
            with httpx.Client(timeout=self.config.timeout, trust_env=False, follow_redirects=False) as client:
                reply = client.post(self.endpoint, json=body)
        except httpx.HTTPError as exc:
            raise self._error(f"could not be reached: {type(exc).__name__}: {exc}") from exc
        if reply.status_code >= 400:
            hint = ""
            if reply.status_code == 404 and not self.config.model:
                hint = " (set HELPPUFF_LOCAL_CHAT_MODEL to a model the server has)"
            raise self._error(f"answered HTTP {reply.status_code}: {_server_message(reply)}{hint}")
        try:
            answer = reply.json()
        except ValueError as exc:
            raise self._error(f"answered something that is not JSON: {reply.text[:200]!r}") from exc
        return _completion(answer, self._error)

    def _error(self, what: str) -> AIError:
        message = f"Local chat server {self.endpoint} {what}"
        logger.warning("%s", message)
        return AIError(502, CHAT_SERVER_ERROR, message)


def _server_message(reply: httpx.Response) -> str:
    """The server's own error message (OpenAI's {"error": {"message"}} or {"error": "..."}), or its text."""
    try:
        data = reply.json()
    except ValueError:
        return reply.text.strip()[:200] or "no detail"
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:200]
    if isinstance(error, str) and error:
        return error[:200]
    return json.dumps(data)[:200]


def _completion(answer: Any, error: Any) -> dict[str, Any]:
    """The server's answer as OpenAI's non-streamed chat completion, first choice only."""
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict) \
            or not isinstance(choices[0].get("message"), dict):
        raise error(f"answered without choices[0].message: {json.dumps(answer)[:200]}")
    choice = choices[0]
    message = choice["message"]
    content = message.get("content")
    out_message: dict[str, Any] = {"role": "assistant", "content": content if isinstance(content, str) else ""}
    if isinstance(message.get("tool_calls"), list) and message["tool_calls"]:
        out_message["tool_calls"] = message["tool_calls"]
    result: dict[str, Any] = {
        "choices": [{"index": 0, "message": out_message, "finish_reason": choice.get("finish_reason")}],
    }
    if isinstance(answer.get("usage"), dict):
        result["usage"] = answer["usage"]
    return result
