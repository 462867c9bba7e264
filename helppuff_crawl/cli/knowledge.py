"""`helppuff knowledge ...`: what the knowledge base holds, and the owner's facts.

    helppuff knowledge status [--site S] [--json]     pages by status, chunks, vectors, model, last
                                                      run, today's usage, a consistency check, and the
                                                      last crawl's self-check (its FAQ questions found)
    helppuff knowledge facts list --site S [--json]   the site's facts and who set each
    helppuff knowledge facts set KEY VALUE --site S   set a fact as the owner's (a crawl never
                                                      overwrites it); the facts passage is rebuilt;
                                                      hours as "Monday: 07:00-17:00; Saturday: 08:00-12:00",
                                                      areas as "Brunswick; Coburg"
    helppuff knowledge facts detect --site S [--json] [--dry-run]
                                                      read the stored contact, home and location
                                                      pages for the phone, email, hours and address
                                                      no fact covers
                                                      (a chat model, else rules); print what was
                                                      found, kept and dropped with why
    helppuff knowledge add --site S --title T (--text X | --file F)
                                                      an own answer, searchable at once
    helppuff knowledge answers --site S [--json]      the own answers
    helppuff knowledge remove ID --site S             take an own answer out
    helppuff knowledge gaps --site S [--all] [--json] questions the assistant could not answer,
                                                      most asked first
    helppuff knowledge answer ID --site S (--text X | --file F)
                                                      answer a gap: an own answer titled with it
    helppuff knowledge dismiss ID --site S            take a gap off the list for good
    helppuff knowledge upload FILE... --site S        documents (PDF, .docx, Markdown, text, up to
                                                      10 MB each), searchable at once
    helppuff knowledge files --site S [--json]        the uploaded files, with why one failed
    helppuff knowledge remove-file ID|NAME --site S   take a file out
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from helppuff_crawl.cli import UsageError
from helppuff_crawl.cli.crawl import parse_set_options, project_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("knowledge", help="the knowledge base: status and facts")
    sub = parser.add_subparsers(dest="knowledge_command", required=True)
    status = sub.add_parser("status", help="pages, chunks, vectors, model, usage and a consistency check")
    status.add_argument("--site")
    status.add_argument("--json", action="store_true")
    status.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    facts = sub.add_parser("facts", help="the site's business facts")
    facts_sub = facts.add_subparsers(dest="facts_command", required=True)
    listing = facts_sub.add_parser("list")
    listing.add_argument("--site", required=True)
    listing.add_argument("--json", action="store_true")
    listing.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    setter = facts_sub.add_parser("set", help="set a fact as the owner's (JSON values for lists and hours)")
    setter.add_argument("key")
    setter.add_argument("value")
    setter.add_argument("--site", required=True)
    setter.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    detect = facts_sub.add_parser("detect", help="fill the facts no fact covers from the contact, home and location pages")
    detect.add_argument("--site", required=True)
    detect.add_argument("--json", action="store_true")
    detect.add_argument("--dry-run", action="store_true", help="print what would be kept; keep nothing")
    detect.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    add = sub.add_parser("add", help="add an own answer (searchable at once)")
    add.add_argument("--site", required=True)
    add.add_argument("--title", required=True, help="the question or topic, e.g. \"Is there parking?\"")
    _text_arguments(add)
    answers = sub.add_parser("answers", help="the own answers")
    answers.add_argument("--site", required=True)
    answers.add_argument("--json", action="store_true")
    answers.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    remove = sub.add_parser("remove", help="take an own answer out")
    remove.add_argument("id")
    remove.add_argument("--site", required=True)
    remove.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    gaps = sub.add_parser("gaps", help="questions the assistant could not answer, most asked first")
    gaps.add_argument("--site", required=True)
    gaps.add_argument("--all", action="store_true", help="answered and dismissed ones too")
    gaps.add_argument("--json", action="store_true")
    gaps.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    answer = sub.add_parser("answer", help="answer a gap with an own answer titled with the question")
    answer.add_argument("id")
    answer.add_argument("--site", required=True)
    _text_arguments(answer)
    dismiss = sub.add_parser("dismiss", help="take a gap off the list (it stays off if asked again)")
    dismiss.add_argument("id")
    dismiss.add_argument("--site", required=True)
    dismiss.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    upload = sub.add_parser("upload", help="documents: PDF, .docx, Markdown, text (up to 10 MB each)")
    upload.add_argument("files", nargs="+", metavar="FILE")
    upload.add_argument("--site", required=True)
    upload.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    files = sub.add_parser("files", help="the uploaded files")
    files.add_argument("--site", required=True)
    files.add_argument("--json", action="store_true")
    files.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    unfile = sub.add_parser("remove-file", help="take an uploaded file out (by id or name)")
    unfile.add_argument("file", metavar="ID|NAME")
    unfile.add_argument("--site", required=True)
    unfile.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.set_defaults(func=run)


async def file_command(settings: Any, args: argparse.Namespace) -> Any:
    """Run upload, files or remove-file on the knowledge base."""
    kb, writer, embedder = open_knowledge(settings)
    try:
        result = await _file_command(kb, writer, embedder, args)
        await writer.wait_for_writes()  # searchable by meaning too once the command returns
        return result
    finally:
        await kb.close()


async def _file_command(kb: Any, writer: Any, embedder: Any, args: argparse.Namespace) -> Any:
    from helppuff_crawl.kb import files

    if args.knowledge_command == "files":
        return await files.list_files(kb, args.site)
    if args.knowledge_command == "remove-file":
        return await files.remove_file(kb, writer, args.site, args.file)
    done = []
    for path in args.files:
        done.append(await files.upload_file(kb, writer, embedder.embed, args.site, Path(path).name,
                                            Path(path).read_bytes()))
    return done


def _run_files(settings: Any, args: argparse.Namespace) -> int:
    command = args.knowledge_command
    if command == "upload":
        missing = [path for path in args.files if not Path(path).is_file()]
        if missing:
            raise UsageError(f"{missing[0]}: no such file")
    try:
        result = asyncio.run(file_command(settings, args))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if command == "remove-file":
        print(f"{args.site}: file {result} removed")
        return 0
    if command == "files":
        if args.json:
            print(json.dumps(result, indent=2, ensure_ascii=False))
            return 0
        print(f"{args.site}: {len(result)} file{'s' if len(result) != 1 else ''}")
        for row in result:
            state = f"{row['chars']:,} characters" + (", cut at the limit" if row["truncated"] else "") \
                if row["status"] == "ok" else f"failed: {row['reason']}"
            print(f"{row['id']}  {row['name']}  ({row['kind']}, {row['bytes']:,} bytes)  {state}")
        return 0
    for upload in result:
        if upload.status == "ok":
            cut = ", cut at 300,000 characters" if upload.truncated else ""
            print(f"{upload.name}: learned as \"{upload.title}\", {upload.chunks} passage"
                  f"{'s' if upload.chunks != 1 else ''} ({upload.chars:,} characters{cut}), id {upload.id}")
        elif upload.status == "unchanged":
            print(f"{upload.name}: unchanged (the same file is already learned), id {upload.id}")
        else:
            print(f"{upload.name}: not learned: {upload.reason}")
    return 1 if any(upload.status == "failed" for upload in result) else 0


def _text_arguments(parser: argparse.ArgumentParser) -> None:
    text = parser.add_mutually_exclusive_group(required=True)
    text.add_argument("--text", help="the answer (Markdown)")
    text.add_argument("--file", help="a Markdown file with the answer")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")


def _answer_text(args: argparse.Namespace) -> str:
    if args.text is not None:
        return str(args.text)
    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"{args.file}: no such file")
    return path.read_text(encoding="utf-8")


async def own_answers(settings: Any, command: str, args: argparse.Namespace) -> Any:
    """Run one of add, answers, remove, gaps, answer, dismiss on the knowledge base."""
    kb, writer, embedder = open_knowledge(settings)
    try:
        result = await _own_answer_command(kb, writer, embedder, command, args)
        await writer.wait_for_writes()  # "from the next question": by meaning too
        return result
    finally:
        await kb.close()


async def _own_answer_command(kb: Any, writer: Any, embedder: Any, command: str, args: argparse.Namespace) -> Any:
    from helppuff_crawl.kb import answers, gaps

    if command == "add":
        return await answers.add_answer(kb, writer, embedder.embed, args.site, args.title, _answer_text(args))
    if command == "answers":
        return await answers.list_answers(kb, args.site)
    if command == "remove":
        return await answers.remove_answer(kb, writer, args.site, args.id)
    if command == "gaps":
        return await gaps.list_gaps(kb, args.site, include_closed=args.all)
    if command == "answer":
        return await gaps.answer_gap(kb, writer, embedder.embed, args.site, args.id, _answer_text(args))
    return await gaps.dismiss_gap(kb, args.site, args.id)


def _run_own_answers(settings: Any, args: argparse.Namespace) -> int:
    command = args.knowledge_command
    try:
        result = asyncio.run(own_answers(settings, command, args))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    site = args.site
    if command in ("add", "answer"):
        print(f"{site}: own answer {result} added; the assistant can use it from the next question")
    elif command == "remove":
        print(f"{site}: own answer {args.id} removed")
    elif command == "dismiss":
        print(f"{site}: question {args.id} dismissed; it stays off the list if asked again")
    elif args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    elif command == "answers":
        print(f"{site}: {len(result)} own answer{'s' if len(result) != 1 else ''}")
        for row in result:
            text = " ".join(row["text"].split())
            print(f"{row['id']}  {row['title']}\n  {text[:200]}{'…' if len(text) > 200 else ''}")
    else:
        which = "" if args.all else "open "
        print(f"{site}: {len(result)} {which}question{'s' if len(result) != 1 else ''} the assistant could not answer")
        for row in result:
            state = "" if row["state"] == "open" else f"  [{row['state']}]"
            print(f"{row['id']}  asked {row['asked']}x, last {row['last_asked_at'][:10]}  {row['question']}{state}")
    return 0


def open_knowledge(settings: Any) -> tuple[Any, Any, Any]:
    """The knowledge base the settings name, its writer, and the embedder of the site's index."""
    from helppuff_crawl.embed.models import WorkersAIEmbedder
    from helppuff_crawl.kb.database import BackendConfig, KnowledgeBase
    from helppuff_crawl.kb.vector_mutations import vectorize_wait
    from helppuff_crawl.kb.writer import IndexConfig, KnowledgeWriter

    backend = BackendConfig.from_settings(settings)
    try:
        index = IndexConfig.from_settings(settings, backend.remote)
        wait = vectorize_wait(settings)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    kb = KnowledgeBase.open(backend)
    return kb, KnowledgeWriter(kb, index, wait=wait), WorkersAIEmbedder(kb.client, index.model, index.dimensions)


async def status_report(settings: Any, site: str | None) -> dict[str, Any]:
    from helppuff_crawl.kb.status import knowledge_report

    kb, writer, _ = open_knowledge(settings)
    try:
        return await knowledge_report(kb, writer, site)
    finally:
        await kb.close()


def _owner_line(counts: dict[str, int]) -> str:
    """ "2 own answers, 1 file (1 failed), 3 open questions, 1 open lead, a recrawl requested" ("" for none)."""
    def count(n: int, one: str, many: str) -> str:
        return f"{n} {one if n == 1 else many}"

    parts = []
    if counts["own_answers"]:
        parts.append(count(counts["own_answers"], "own answer", "own answers"))
    if counts["files"] or counts["files_failed"]:
        failed = f" ({counts['files_failed']} failed)" if counts["files_failed"] else ""
        parts.append(count(counts["files"], "file", "files") + failed)
    if counts["open_gaps"]:
        parts.append(count(counts["open_gaps"], "open question", "open questions") + " (knowledge gaps)")
    if counts["open_leads"]:
        parts.append(count(counts["open_leads"], "open lead", "open leads"))
    if counts["recrawl_requested"]:
        parts.append("a recrawl requested")
    return ", ".join(parts)


async def set_fact(settings: Any, site: str, key: str, value: str) -> int:
    from helppuff_crawl.kb import facts_table
    from helppuff_crawl.kb.site_index import take_site

    kb, writer, embedder = open_knowledge(settings)
    try:
        await facts_table.set_owner_fact(kb, site, key, facts_table.parse_owner_value(value))
        await take_site(writer, site)
        chunks = await facts_table.write_facts_passage(kb, writer, embedder.embed, site)
        await writer.wait_for_writes()
        return chunks
    finally:
        await kb.close()


async def detect_facts(settings: Any, site: str, dry_run: bool) -> tuple[Any, int]:
    """Read the site's stored contact, home and location pages for its missing facts; (the detection, passage chunks)."""
    from helppuff_crawl.kb import facts_detect, facts_table
    from helppuff_crawl.kb.site_index import take_site

    kb, writer, embedder = open_knowledge(settings)
    try:
        found = await facts_detect.detect(kb, site, facts_detect.PageFactsConfig.from_settings(settings), dry_run=dry_run)
        chunks = 0
        if found.stored:
            await take_site(writer, site)
            chunks = await facts_table.write_facts_passage(kb, writer, embedder.embed, site)
            await writer.wait_for_writes()
        return found, chunks
    finally:
        await kb.close()


def _print_detection(found: Any, chunks: int, dry_run: bool) -> None:
    if found.reader != "rules":
        reader = "a chat model, " + found.reader.removeprefix("model ")
    elif found.model:
        reader = f"the rule-based reader (the chat model {found.model} failed: see the note)"
    else:
        reader = "the rule-based reader (no chat model: HELPPUFF_LOCAL_CHAT_URL names one)"
    print(f"{found.site}: read {len(found.pages)} page{'s' if len(found.pages) != 1 else ''} with {reader}")
    for url in found.pages:
        print(f"  {url}")
    print(f"missing: {', '.join(found.gaps) or 'nothing'}")
    for note in found.notes:
        print(f"note: {note}")
    rows = [("kept" if not dry_run else "would keep", c) for c in found.kept]
    rows += [(c.reason, c) for c in found.known] + [(f"dropped: {c.reason}", c) for c in found.dropped]
    if not rows:
        print("found nothing")
    for verdict, candidate in rows:
        value = candidate.value if isinstance(candidate.value, str) else json.dumps(candidate.value, ensure_ascii=False)
        where = f" ({candidate.source_url})" if candidate.source_url else ""
        print(f"{candidate.key:<10} {value}{where}\n           {verdict}")
    if found.stored:
        print(f"facts passage rebuilt ({chunks} chunk{'s' if chunks != 1 else ''})")
    elif dry_run:
        print("dry run: nothing kept")


async def list_facts(settings: Any, site: str) -> list[dict[str, Any]]:
    from helppuff_crawl.kb import facts_table

    kb, _, _ = open_knowledge(settings)
    try:
        return [{**row, "value": json.loads(row["value"])} for row in await facts_table.list_facts(kb, site)]
    finally:
        await kb.close()


def run(args: argparse.Namespace) -> int:
    settings = project_settings(parse_set_options(args.set))
    if args.knowledge_command in ("add", "answers", "remove", "gaps", "answer", "dismiss"):
        return _run_own_answers(settings, args)
    if args.knowledge_command in ("upload", "files", "remove-file"):
        return _run_files(settings, args)
    if args.knowledge_command == "status":
        from helppuff_crawl.kb.selfcheck import status_line

        report = asyncio.run(status_report(settings, args.site))
        if args.json:
            print(json.dumps(report, indent=2, sort_keys=True))
        else:
            for entry in report["sites"]:
                model = entry["model"] or {}
                print(f"{entry['site']}: {sum(entry['pages'].values())} pages, {entry['chunks']} chunks, "
                      f"{entry['vectors']} vectors ({model.get('model', 'no model yet')}), "
                      f"{'consistent' if entry['consistency']['consistent'] else 'NOT consistent'}; "
                      f"today {entry['usage_today']['neurons']} neurons")
                if owner_line := _owner_line(entry["owner"]):
                    print(f"  {owner_line}")
                print(f"  {status_line(entry['self_check'])}")
        return 0 if all(e["consistency"]["consistent"] for e in report["sites"]) else 1
    if args.facts_command == "set":
        from helppuff_crawl.kb.facts_table import OWNER_TYPED, check_owner_fact

        try:
            value = check_owner_fact(args.key.strip(), args.value)
            if args.key.strip() in OWNER_TYPED:  # hours "Monday: 07:00-17:00; ...", areas "Brunswick; Coburg"
                value = json.dumps(OWNER_TYPED[args.key.strip()](value))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        chunks = asyncio.run(set_fact(settings, args.site, args.key.strip(), value))
        print(f"{args.site}: {args.key} set by the owner; facts passage rebuilt ({chunks} chunk)")
        return 0
    if args.facts_command == "detect":
        found, chunks = asyncio.run(detect_facts(settings, args.site, args.dry_run))
        if args.json:
            print(json.dumps({**found.as_dict(), "dry_run": args.dry_run, "passage_chunks": chunks},
                             indent=2, ensure_ascii=False))
        else:
            _print_detection(found, chunks, args.dry_run)
        return 0
    rows = asyncio.run(list_facts(settings, args.site))
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True, ensure_ascii=False))
    else:
        for row in rows:
            print(f"{row['key']:<14} {row['source']:<6} {json.dumps(row['value'], ensure_ascii=False)}")
    return 0
