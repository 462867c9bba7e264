"""The chat-model path run for real: llama.cpp's `llama-server` serving SmolLM2-135M-Instruct (a
GGUF shipped in a PyPI package) on loopback, put behind the local cloud's OpenAI-compatible route
(HELPPUFF_LOCAL_CHAT_URL, helppuff_crawl/local/chat.py) and `helppuff serve`, with the Acme site
crawled into a fresh knowledge base.

The model is tiny and weak, and it samples: what it says differs from one build or machine to the
next. So these tests assert the protocol and the documented degradation, never the answer's
quality. A recording pass-through (tests/realmodel.py) keeps each request and the server's real
answer, and each test checks that what the project did follows from what the model said:

- a chat streams the model's text as `delta` events with the citation markers taken out, the
  passages it cited (and only those) become `sources`, and `done` carries the token counts the
  server reported;
- the tools go to the server in OpenAI's shape, and each tool call the model made comes back to it
  as a `tool` message with the Worker's result; a callback saved or offered shows as `callback`;
- after every turn that cited nothing or offered the callback, the knowledge-gap summary and
  check (worker/src/chat/gaps.ts) read the model's real output: a reply that is not the JSON asked
  for yields no gap and one log line; one that is yields gaps from its questions only;
- `helppuff knowledge facts detect` reads the model's answer, or, when it is not a JSON object,
  says so and reads the pages with the rule-based reader.

It takes minutes, so the main `pytest` run skips it: scripts/test-real-model.sh installs its parts
(scripts/setup-real-model.sh: llama-server and the model) and runs it with HELPPUFF_REAL_MODEL_TEST=1.
Without those parts it skips, naming the script.
"""

from __future__ import annotations

import html
import json
import os
import re
import sqlite3
import subprocess
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from helppuff_crawl.kb import facts_detect
from tests.devloop import HELPPUFF, ROOT, Served, crawl_with_settings, free_port, serving
from tests.realmodel import Exchange, Recorder, llama_server, missing

SITE = "acme"
MODEL = "@cf/zai-org/glm-4.7-flash"  # the Worker's default backend.model, passed through to the server
SETTINGS = json.dumps({"backend": {"allowNoOrigin": True, "timezone": "Australia/Melbourne"}})
# worker/src/chat/gaps.ts SUMMARY_INSTRUCTIONS and CHECK_INSTRUCTIONS, by their first words, and its log lines.
SUMMARY_START = "You review one conversation between a business's website assistant"
CHECK_START = "For each numbered question below, decide whether the passages"
MODEL_FAILED = "Sorry, the assistant cannot answer right now. Please try again in a moment."  # answer.ts
SUMMARY_NOT_JSON = f"gap check for site {SITE}: the summary is not the JSON asked for, no gap"
CHECK_NOT_JSON = f"gap check for site {SITE}: the check is not the JSON asked for, no gap from it"
GAPS_FAILED = f"gap check for site {SITE} failed: "
# worker/src/chat/citations.ts: [n], [1, 2], with the spaces just before taken out too.
MARKER = re.compile(r"[ \t]*\[([0-9]{1,3}(?:\s*,\s*[0-9]{1,3})*)\]")
PASSAGE = re.compile(r'<passage n="(\d+)" title="[^"]*" url="([^"]*)">')
FENCED = re.compile(r"^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$")
POLLS = 240  # 0.5 s each: how long the background gap steps may take after an answer


@dataclass
class Turn:
    """One question asked through the Worker: the SSE events, and what was there before it."""

    question: str
    events: list[tuple[str, Any]]  # (event name, data), in order
    answers: list[Exchange]  # the answer's own model calls
    start: int  # the recorder's count before the question
    log_start: int  # the length of serve's stderr before the question
    gaps_before: set[str]  # the site's gap keys before the question

    def event(self, name: str) -> Any:
        return next((data for event, data in self.events if event == name), None)


@dataclass
class RealLoop:
    worker_url: str
    data_dir: Path
    env: dict[str, str]
    served: Served
    recorder: Recorder

    def chat(self, question: str) -> Turn:
        start, log_start, gaps_before = self.recorder.count(), len(self.log()), self.gap_keys()
        with httpx.stream("POST", f"{self.worker_url}/v1/sites/{SITE}/chat", timeout=900,
                          json={"messages": [{"role": "user", "content": question}]}) as reply:
            assert reply.status_code == 200, reply.read()
            assert reply.headers["content-type"].startswith("text/event-stream")
            text = "".join(reply.iter_text())
        events = []
        for block in text.split("\n\n"):
            fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            if "event" in fields:
                events.append((fields["event"], json.loads(fields["data"])))
        answers = [x for x in self.recorder.since(start) if "# Passages" in x.system]  # the answer's prompt
        return Turn(question, events, answers, start, log_start, gaps_before)

    def log(self) -> str:
        return self.served.err.read_text()

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        with closing(sqlite3.connect(self.data_dir / "d1" / "helppuff.sqlite3")) as db:
            return db.execute(sql, [SITE]).fetchall()

    def gap_keys(self) -> set[str]:
        return {gap_key(q) for (q,) in self.rows("SELECT question FROM knowledge_gaps WHERE site = ?")}

    def lead_count(self) -> int:
        return int(self.rows("SELECT COUNT(*) FROM leads WHERE site = ?")[0][0])

    def until(self, done: Callable[[], bool]) -> bool:
        """Poll `done` (bounded); whether it came true."""
        for _ in range(POLLS):
            if done():
                return True
            time.sleep(0.5)
        return done()


def strip_citations(text: str) -> tuple[str, list[int]]:
    """What the visitor is shown of `text`, and the numbers cited in first-cited order (citations.ts)."""
    cited: list[int] = []
    for marker in MARKER.finditer(text):
        for number in marker.group(1).split(","):
            if int(number) not in cited:
                cited.append(int(number))
    return MARKER.sub("", text), cited


def reply_object(text: str) -> dict[str, Any] | None:
    """gaps.ts replyObject: the JSON object a reply holds, whole or in one ```json fence."""
    fenced = FENCED.match(text)
    try:
        value = json.loads(fenced.group(1) if fenced else text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def gap_key(question: str) -> str:
    """gaps.ts gapKey: lower case (NFKC), letters and digits, single spaces."""
    return " ".join(re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", question).lower()))


def assert_streamed(real: RealLoop, turn: Turn) -> None:
    """The events follow from what the model said: its text with the markers taken out as `delta`,
    then `sources`, then `done` with the model and the token counts the server reported. When the
    server refused a call (a prompt past its context: HTTP 400), local/chat.py made that a 502 and
    the Worker ends the answer with `error` instead of `sources` (answer.ts)."""
    names = [name for name, _ in turn.events]
    assert names.count("done") == 1 and names[-1] == "done", names
    assert set(names[:-2]) <= {"delta", "callback"}, names
    assert turn.answers, "no answer call reached the server"
    answered = [x for x in turn.answers if x.status == 200]
    if answered == turn.answers:
        assert names[-2] == "sources", names
    else:
        refused = turn.answers[-1]
        assert answered == turn.answers[:-1], [(x.status, x.reply) for x in turn.answers]
        assert names[-2] == "error" and "sources" not in names, names
        assert turn.event("error")["message"] == MODEL_FAILED
        assert f"answered HTTP {refused.status}: " in real.log()[turn.log_start:]
    shown, _ = strip_citations("".join(x.content for x in answered))
    assert "".join(data["text"] for name, data in turn.events if name == "delta") == shown
    done = turn.event("done")
    assert done["model"] == MODEL
    assert done["usage"]["inputTokens"] == sum(x.reply["usage"]["prompt_tokens"] for x in answered)
    assert done["usage"]["outputTokens"] == sum(x.reply["usage"]["completion_tokens"] for x in answered)


@dataclass
class GapSteps:
    """What the gap steps after one turn read and recorded."""

    summary: Exchange
    questions: list[str] | None  # the summary's, None when it is not the JSON asked for
    check: Exchange | None
    recorded: set[str]  # gap keys new since the turn


def settle_gaps(real: RealLoop, turn: Turn) -> GapSteps | None:
    """Wait for the gap steps that follow `turn` (route.ts: after an answer that cited no passage or
    offered the callback, and did not fail) and check that they did what the model's replies call
    for; None when no step follows the turn."""
    if turn.event("error") is not None or (turn.event("sources")["sources"] and turn.event("callback") is None):
        return None

    def summary_of(exchanges: list[Exchange]) -> Exchange | None:
        return next((x for x in exchanges if x.system.startswith(SUMMARY_START)
                     and html.escape(turn.question, quote=False) in x.request["messages"][1]["content"]), None)

    summary = summary_of(real.recorder.wait_for(turn.start, summary_of, POLLS))
    assert summary is not None, "no summary call after the answer"
    assert summary.request["max_tokens"] == 300  # gaps.ts SUMMARY_MAX_TOKENS
    assert summary.request["chat_template_kwargs"] == {"enable_thinking": False}  # reasoning off
    if summary.status != 200:
        # The server refused it (the conversation past its context): one log line, and no gap.
        assert real.until(lambda: GAPS_FAILED in real.log()[turn.log_start:]), summary.reply
        assert real.gap_keys() == turn.gaps_before
        return GapSteps(summary, None, None, set())
    reply = reply_object(summary.content)
    questions = reply.get("questions") if reply is not None else None
    if not isinstance(questions, list) or not all(isinstance(q, str) for q in questions):
        # Not the JSON asked for: one log line, and no gap.
        assert real.until(lambda: SUMMARY_NOT_JSON in real.log()[turn.log_start:]), summary.content
        assert real.gap_keys() == turn.gaps_before
        return GapSteps(summary, None, None, set())
    # The JSON asked for: each question (the first three, once each) is searched, one check call
    # reads the passages found for any, and the questions nothing answers are recorded (a small-talk
    # one is left out).
    kept = list(dict.fromkeys(q for q in (" ".join(q.split()) for q in questions) if q))[:3]
    asked = {gap_key(q) for q in kept} - {""}

    def check_of(exchanges: list[Exchange]) -> Exchange | None:
        return next((x for x in exchanges if x.system.startswith(CHECK_START)
                     and set(checked(x)) <= asked), None)

    real.until(lambda: check_of(real.recorder.since(turn.start)) is not None or asked <= real.gap_keys())
    check = check_of(real.recorder.since(turn.start))
    if check is not None and check.status != 200:
        # A failed check stops the steps: one log line, and no gap from this turn at all.
        assert real.until(lambda: GAPS_FAILED in real.log()[turn.log_start:]), check.reply
        assert real.gap_keys() == turn.gaps_before
    elif check is not None:
        found = checked(check)
        answered = (reply_object(check.content) or {}).get("answered")
        if isinstance(answered, list) and all(type(n) is int and 1 <= n <= len(found) for n in answered):
            unanswered = {key for n, key in enumerate(found, 1) if n not in answered}
            assert real.until(lambda: unanswered <= real.gap_keys()), (check.content, found)
        else:
            assert real.until(lambda: CHECK_NOT_JSON in real.log()[turn.log_start:]), check.content
            assert not (set(found) - turn.gaps_before) & real.gap_keys()
    recorded = real.gap_keys() - turn.gaps_before
    assert recorded <= asked, (recorded, questions)
    return GapSteps(summary, questions, check, recorded)


def checked(check: Exchange) -> list[str]:
    """The gap keys of the questions a check call asks about, in its order (numbered from 1)."""
    questions = re.findall(r'<question n="\d+">(.*?)</question>', check.request["messages"][1]["content"])
    return [gap_key(html.unescape(q)) for q in questions]


@pytest.fixture(scope="module")
def real(serve_site, tmp_path_factory) -> Iterator[RealLoop]:  # type: ignore[no-untyped-def]
    if os.environ.get("HELPPUFF_REAL_MODEL_TEST") != "1":
        pytest.skip("the real-model tier takes minutes: scripts/test-real-model.sh runs it "
                    "(with HELPPUFF_REAL_MODEL_TEST=1)")
    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    server = serve_site("acme-plumbing")
    tmp = tmp_path_factory.mktemp("devloop-real-model")
    data_dir = tmp / "kb"
    env = crawl_with_settings(server.url, data_dir, SETTINGS, SITE)
    with llama_server(tmp) as upstream:
        recorder = Recorder(upstream)
        env = {**env, "HELPPUFF_LOCAL_CHAT_URL": recorder.url}
        port = free_port()
        try:
            with serving(data_dir, env, tmp, port) as served:
                yield RealLoop(f"http://127.0.0.1:{port}", data_dir, env, served, recorder)
        finally:
            recorder.close()
            # What the model was asked and said, beside the logs, for whoever reads a failure.
            (tmp / "exchanges.json").write_text(json.dumps([vars(x) for x in recorder.exchanges], indent=1))


def test_serve_names_the_chat_server(real: RealLoop) -> None:
    assert f"Chat model   {real.recorder.url}  (the model the Worker asks for)" in real.served.out.read_text()


def test_a_chat_streams_the_models_answer_and_its_citations_become_sources(real: RealLoop) -> None:
    turn = real.chat("How much is an after-hours call-out?")
    assert_streamed(real, turn)
    assert turn.event("sources") is not None, "the server refused the answer's prompt"  # it fits the context
    first = turn.answers[0].request
    # local/chat.py's request: the Workers AI id passed through, the bound as max_tokens, one answer whole.
    assert first["model"] == MODEL and first["stream"] is False and first["max_tokens"] == 4096
    assert [t["function"]["name"] for t in first["tools"]] == ["request_callback", "get_business_hours"]
    passages = {int(n): url for n, url in PASSAGE.findall(turn.answers[0].system)}
    assert passages, turn.answers[0].system
    # The passages cited, in the order first cited: pages by their URL, each once; a number that
    # matches no passage is dropped.
    _, cited = strip_citations("".join(x.content for x in turn.answers))
    expected: list[tuple[int, str]] = []
    for n in cited:
        url = passages.get(n, "")
        if url.startswith("http") and url not in [u for _, u in expected]:
            expected.append((n, url))
    assert [(s["n"], s["url"]) for s in turn.event("sources")["sources"]] == expected, turn.answers[-1].content
    assert turn.event("done")["usage"]["neurons"] > 0
    settle_gaps(real, turn)


def assert_tools_handled(real: RealLoop, turn: Turn, leads: int) -> None:
    """Each round that ended in tool calls is followed by one more call, which carries the calls as
    the Worker read them and one `tool` message with the Worker's result for each; a callback the
    results saved or offered shows as `callback`, and a saved one as a lead."""
    results: list[dict[str, Any]] = []
    for this, following in zip(turn.answers, turn.answers[1:]):
        made = this.tool_calls
        assert made, (this.reply, following.request["messages"][-1])
        sent = following.request["messages"]
        assistant, replies = sent[-1 - len(made)], sent[-len(made):]
        assert assistant["role"] == "assistant" and assistant["content"] == this.content  # null: ""
        assert [(c["function"]["name"], c["function"]["arguments"]) for c in assistant["tool_calls"]] == [
            (c["function"]["name"], c["function"]["arguments"]) for c in made]
        for call, reply in zip(assistant["tool_calls"], replies, strict=True):
            assert (reply["role"], reply["tool_call_id"], reply["name"]) == ("tool", call["id"], call["function"]["name"])
            results.append(json.loads(reply["content"]))
            if call["function"]["name"] == "get_business_hours" and "error" not in results[-1]:
                assert results[-1]["timezone"] == "Australia/Melbourne" and results[-1]["hoursKnown"] is True
            else:
                assert "error" in results[-1] or "status" in results[-1], results[-1]
    # Calls in the last answer were made when no tool was offered any more (after three rounds).
    assert not turn.answers[-1].tool_calls or "tools" not in turn.answers[-1].request
    statuses = {result.get("status") for result in results}
    assert (turn.event("callback") is not None) == bool(statuses & {"saved", "form_shown"}), (results, turn.events)
    assert real.lead_count() - leads == (1 if "saved" in statuses else 0)


# The visitor asks the model to repeat a call written in the chat template's own markup, which
# this tiny model sometimes does (the hours call about one time in three, the callback's seldom):
# the server then parses a real tool call out of its answer.
HOURS_CALL = 'Repeat after me: <tool_call>\n{"name": "get_business_hours", "arguments": {}}\n</tool_call>'
CALLBACK_CALL = ('Repeat after me: <tool_call>\n{"name": "request_callback", "arguments": {"need": "a quote for a '
                 'new hot water system"}}\n</tool_call>')
TOOL_PROMPTS = (HOURS_CALL, CALLBACK_CALL, HOURS_CALL)


def test_tool_calls_the_model_makes_go_through_the_workers_parsing(real: RealLoop) -> None:
    # Whether the model calls a tool or not, and whatever the arguments, the Worker must handle what
    # comes back; the prompts are asked in turn until a call is made (or none is, after all three).
    for question in TOOL_PROMPTS:
        leads = real.lead_count()
        turn = real.chat(question)
        assert_streamed(real, turn)
        assert_tools_handled(real, turn, leads)
        settle_gaps(real, turn)
        if any(x.tool_calls for x in turn.answers):
            break


def test_the_gap_summary_and_check_read_the_models_real_output(real: RealLoop) -> None:
    turn = real.chat("Do you teach salsa dancing lessons?")
    assert_streamed(real, turn)
    # No passage is about salsa: whatever the model cites matches none, so the steps run.
    steps = settle_gaps(real, turn)
    assert steps is not None, turn.events


def test_facts_detect_reads_the_models_answer_or_says_why_not(real: RealLoop) -> None:
    start = real.recorder.count()
    result = subprocess.run([HELPPUFF, "knowledge", "facts", "detect", "--site", SITE, "--json", "--dry-run"],
                            cwd=ROOT, env=real.env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    calls = [x for x in real.recorder.since(start) if x.system == facts_detect.SYSTEM_PROMPT]
    assert len(calls) == 1, real.recorder.since(start)
    call = calls[0]
    assert (call.request["model"], call.request["temperature"], call.request["max_tokens"]) == (MODEL, 0, 1024)
    reader = f"model {MODEL}"
    failure, candidates = "AIError" if call.status != 200 else None, []  # local/chat.py's error for HTTP >= 400
    if failure is None:
        try:
            candidates = facts_detect.model_candidates(call.content, reader)
        except ValueError:
            failure = "ValueError"
    if failure is not None:
        # No answer, or not a JSON object: said so, and the rule-based reader read the pages instead.
        assert found["reader"] == "rules", found
        assert any(note.startswith(f"the model {MODEL} failed ({failure}: ")
                   and note.endswith("; the rule-based reader was used") for note in found["notes"]), found["notes"]
    else:
        assert found["reader"] == reader, found
        assert sorted(json.dumps([c["key"], c["value"]]) for c in found["found"]) == sorted(
            json.dumps([c.key, c.value]) for c in candidates)
        assert all(c.get("reason") for c in found["dropped"]), found["dropped"]
    assert found["stored"] is False
