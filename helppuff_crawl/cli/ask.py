"""`helppuff ask "question" --site S --origin URL`: ask the Worker's chat as a visitor on the site does.

POSTs `{messages: [{role: "user", content}]}` to {url}/v1/sites/{site}/chat (default
http://127.0.0.1:8787, where `helppuff serve` runs the Worker) with the Origin header `--origin` (the
page the widget would be on: one of the site's `backend.allowedOrigins`; without it, no Origin, which
only a site with `"allowNoOrigin": true` answers), reads the answer's server-sent events
(worker/src/chat/events.ts) and prints the answer, then its sources:

    The standard call-out fee is $99 on weekdays.
    Sources:
      [1] Pricing | Acme Plumbing  https://acme.com.au/pricing#call-out-fees

A callback offered is a line of its own; an answer that broke off prints its message on stderr.
Exit status: 0 for an answer (a "not sure" too), 1 when no Worker answers, it refuses the request,
or the answer broke off; 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any
from urllib.parse import quote

from helppuff_crawl.cli import UsageError
from helppuff_crawl.cli.search import DEFAULT_URL, unreachable


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("ask", help="ask a site's chat through the Worker, as a visitor (see `helppuff serve`)")
    parser.add_argument("question", help="the visitor's question")
    parser.add_argument("--site", required=True, help="the site name given to `helppuff crawl --site`")
    parser.add_argument("--origin", help="the Origin header: a page of the site (one of its allowedOrigins)")
    parser.add_argument("--url", default=DEFAULT_URL, help=f"the Worker (default {DEFAULT_URL})")
    parser.set_defaults(func=run)


def read_events(lines: Any) -> list[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of a server-sent event stream, given its lines."""
    events: list[tuple[str, dict[str, Any]]] = []
    name, data = "message", ""
    for raw in lines:
        line = raw.rstrip("\r")
        if line == "":
            if data:
                try:
                    parsed = json.loads(data)
                except ValueError:
                    parsed = {"text": data}
                events.append((name, parsed if isinstance(parsed, dict) else {"value": parsed}))
            name, data = "message", ""
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].lstrip()
    return events


def format_reply(events: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], str]:
    """The printed lines of an answer, and the message of an answer that broke off ("" if none)."""
    text = "".join(str(data.get("text", "")) for name, data in events if name == "delta").strip()
    lines = [text or "(no answer text)"]
    broke = next((str(data.get("message", "")) for name, data in events if name == "error"), "")
    for name, data in events:
        if name == "callback":
            lines.append("Callback: " + ("saved" if data.get("saved") else "the widget would show its callback form"))
        if name == "sources" and data.get("sources"):
            lines.append("Sources:")
            lines += [f"  [{source.get('n')}] {source.get('title', '')}  {source.get('url', '')}" for source in data["sources"]]
    return lines, broke


def run(args: argparse.Namespace) -> int:
    import httpx

    if not args.question.strip():
        raise UsageError("the question must not be empty")
    base = args.url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise UsageError(f"--url must start with http:// or https://, got {args.url!r}")
    headers = {"accept": "text/event-stream"}
    if args.origin:
        headers["origin"] = args.origin
    endpoint = f"{base}/v1/sites/{quote(args.site, safe='')}/chat"
    body = {"messages": [{"role": "user", "content": args.question}]}
    try:
        with httpx.stream("POST", endpoint, json=body, headers=headers, timeout=120.0) as reply:
            if reply.status_code != 200:
                reply.read()
                try:
                    error = reply.json().get("error")
                except ValueError:
                    error = reply.text.strip()[:200]
                print(f"helppuff ask: the Worker answered HTTP {reply.status_code}: {error}", file=sys.stderr)
                return 1
            events = read_events(reply.iter_lines())
    except httpx.TransportError as exc:
        print(unreachable("ask", base, exc), file=sys.stderr)
        return 1
    lines, broke = format_reply(events)
    print("\n".join(lines))
    if broke:
        print(f"helppuff ask: the answer broke off: {broke}", file=sys.stderr)
        return 1
    return 0
