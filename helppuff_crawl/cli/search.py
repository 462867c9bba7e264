"""`helppuff search "query" --site S`: ask the Worker's search route, as the chat widget does.

POSTs `{query, limit?, mode?}` to {url}/v1/sites/{site}/search (default http://127.0.0.1:8787, where
`helppuff serve` runs the Worker) and prints the passages best first, each with its score and its
band (worker/src/bands.ts: "confident", it answers; "closest", only the nearest thing the site has,
as the widget and the Retell function show it):

    1. 0.8811  confident  Pricing | Acme Plumbing › Call-out fees
       https://acme.com.au/pricing#call-out-fees
       | Standard call-out | $99 | Weekdays 7am to 5pm |

then the reasons the answer is degraded, if any. `--json` prints the Worker's answer as it came.
Exit status: 0 for an answer (also one with no passages), 1 when no Worker answers at the URL or
it refuses the request (its error is printed), 2 for bad input.

The search route has the chat's guard rails (worker/src/guard.ts): a request without an Origin
header, as this command sends, is answered only for a site whose settings say
`"allowNoOrigin": true`; the refusal says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any
from urllib.parse import quote

from helppuff_crawl.cli import UsageError

DEFAULT_URL = "http://127.0.0.1:8787"
MODES = ("hybrid", "keywords", "vectors")
TEXT_LINES = 3  # lines of each passage's text shown
LINE_CHARS = 100
NO_ORIGIN = "(no Origin header)"  # in the Worker's refusal of a request without Origin (worker/src/origin.ts)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("search", help="search a site through the Worker (see `helppuff serve`)")
    parser.add_argument("query", help="the visitor's question")
    parser.add_argument("--site", required=True, help="the site name given to `helppuff crawl --site`")
    parser.add_argument("--url", default=DEFAULT_URL, help=f"the Worker (default {DEFAULT_URL})")
    parser.add_argument("--limit", type=int, help="passages to return (1-20; default: the site's finalK)")
    parser.add_argument("--mode", choices=MODES, help="retrievers to use (default hybrid)")
    parser.add_argument("--json", action="store_true", help="print the Worker's JSON answer")
    parser.set_defaults(func=run)


def format_answer(answer: dict[str, Any]) -> list[str]:
    """The printed lines for a search answer: each passage, then the degraded reasons."""
    passages = answer.get("passages") or []
    lines: list[str] = []
    if not passages:
        lines.append(f"no passages for {answer.get('query', '')!r}")
    for passage in passages:
        path = " › ".join(passage.get("headingPath") or []) or passage.get("title") or "(untitled)"
        band = str(passage.get("band") or "")
        lines.append(f"{passage.get('n')}. {float(passage.get('score') or 0):.4f}  {band + '  ' if band else ''}{path}")
        lines.append(f"   {passage.get('url', '')}")
        text = [line.strip() for line in str(passage.get("text") or "").splitlines() if line.strip()]
        for line in text[:TEXT_LINES]:
            lines.append(f"   {line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 1] + '…'}")
    if answer.get("scores"):
        lines.append(f"(scores: {answer['scores']})")
    for reason in answer.get("degraded") or []:
        lines.append(f"degraded: {reason}")
    return lines


def unreachable(command: str, base: str, exc: Exception) -> str:
    """The line for a Worker that did not answer `helppuff <command>` (httpx's TransportError)."""
    import httpx

    if isinstance(exc, httpx.ConnectError):
        return f"no Worker at {base}: start it with `helppuff serve`"
    return f"helppuff {command}: the Worker at {base} did not answer: {type(exc).__name__}: {exc}"


def run(args: argparse.Namespace) -> int:
    import httpx

    if not args.query.strip():
        raise UsageError("the query must not be empty")
    if args.limit is not None and not 1 <= args.limit <= 20:
        raise UsageError(f"--limit must be from 1 to 20, got {args.limit}")
    base = args.url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise UsageError(f"--url must start with http:// or https://, got {args.url!r}")
    body: dict[str, Any] = {"query": args.query}
    if args.limit is not None:
        body["limit"] = args.limit
    if args.mode:
        body["mode"] = args.mode
    endpoint = f"{base}/v1/sites/{quote(args.site, safe='')}/search"
    try:
        reply = httpx.post(endpoint, json=body, timeout=30.0)
    except httpx.TransportError as exc:
        print(unreachable("search", base, exc), file=sys.stderr)
        return 1
    try:
        answer = reply.json()
    except ValueError:
        answer = None
    if args.json and answer is not None:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    if reply.status_code != 200 or not isinstance(answer, dict):
        error = answer.get("error") if isinstance(answer, dict) else reply.text.strip()[:200]
        hint = ""
        if reply.status_code == 403 and NO_ORIGIN in str(error):
            hint = (f" (the command line sends no Origin: give the site \"allowNoOrigin\": true with "
                    f"`helppuff settings set helppuff.json --site {args.site}`)")
        print(f"helppuff search: the Worker answered HTTP {reply.status_code}: {error}{hint}", file=sys.stderr)
        return 1
    if not args.json:
        print("\n".join(format_answer(answer)))
    return 0
