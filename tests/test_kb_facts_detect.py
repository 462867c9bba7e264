"""helppuff_crawl.kb.facts_detect: the gaps structured data leaves, filled from the stored contact, home and location pages.

The chat model is FakeChatServer (tests/test_local_chat.py), a fake OpenAI-compatible chat server on
loopback that answers with scripted chat completions, reached as HELPPUFF_LOCAL_CHAT_URL is; Workers
AI is FakeCloudflare's scripted `ai/run`. Both answers invent things the pages do not write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest_twisted

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.cloudflare.client import CloudflareClient, HttpTransport
from helppuff_crawl.kb.facts_table import save_crawl_facts, set_owner_fact
from helppuff_crawl.kb.facts_detect import (
    SYSTEM_PROMPT,
    PageFactsConfig,
    WorkersAIChat,
    detect,
    site_model_and_regions,
)
from helppuff_crawl.text.hours import DAYS
from tests.conftest import local_kb, run_async
from tests.fake_cloudflare import Canned, FakeCloudflare
from tests.test_local_chat import FakeChatServer

HOME = "https://bayside.example"
CONTACT = "https://bayside.example/contact"
CONTACT_MD = ("# Contact us\n\nCall the workshop on 03 9555 0142 or write to workshop@baysidebikes.example.\n\n"
              "The workshop is at 41 Beach Road,\nSandringham VIC 3191.")
HOME_MD = "# Bike repairs in Sandringham\n\nOpen Mon–Fri 8am–5:30pm, Sat 9-12."
OWNER_HOURS = {day: [["07:00", "15:00"]] if day != "Sunday" else [] for day in DAYS}
WEEKDAYS = {day: [["08:00", "17:30"]] for day in DAYS[:5]}


async def _seed(kb: Any, owner_hours: bool = True) -> None:
    for url, category, title, markdown in [(HOME, "home", "Bayside Bike Repairs", HOME_MD),
                                           (CONTACT, "contact", "Contact | Bayside", CONTACT_MD),
                                           ("https://bayside.example/services", "service", "Services", "Call 1300 1")]:
        await kb.query("INSERT INTO pages (site, url, category, status, title, markdown, updated_at) "
                       "VALUES ('bayside', ?, ?, 'ok', ?, ?, ?)", [url, category, title, markdown, iso(utc_now())])
    await save_crawl_facts(kb, "bayside", {"name": "Bayside Bike Repairs", "phones": ["+61395550142"]}, HOME)
    if owner_hours:
        await set_owner_fact(kb, "bayside", "hours", OWNER_HOURS)


async def _facts(kb: Any) -> dict[str, dict[str, Any]]:
    rows = await kb.query("SELECT key, value, source, source_url FROM facts WHERE site = 'bayside'")
    return {row["key"]: {**row, "value": json.loads(row["value"])} for row in rows}


async def _rules(tmp_path: Path) -> None:
    kb = local_kb(tmp_path)
    await _seed(kb)
    dry = await detect(kb, "bayside", PageFactsConfig(), dry_run=True)
    assert (dry.reader, dry.pages, dry.gaps) == ("rules", [CONTACT, HOME], ["email", "address"])
    assert [(c.key, c.value) for c in dry.kept] == [("email", "workshop@baysidebikes.example"),
                                                    ("address", "41 Beach Road, Sandringham VIC 3191")]
    assert [(c.key, c.reason) for c in dry.known] == [("telephone", "known already"), ("hours", "known: the owner's")]
    assert not dry.stored and "email" not in await _facts(kb)  # a dry run keeps nothing
    done = await detect(kb, "bayside", PageFactsConfig())
    assert done.stored
    facts = await _facts(kb)
    assert facts["email"] == {"key": "email", "value": "workshop@baysidebikes.example", "source": "crawl",
                              "source_url": CONTACT}
    assert facts["hours"]["value"] == OWNER_HOURS and facts["hours"]["source"] == "owner"  # the owner's stays
    assert "telephone" not in facts  # the tel: link's number covers it
    assert facts["address"]["value"] == "41 Beach Road, Sandringham VIC 3191"  # two lines of the page, as one
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_rules_fill_only_the_gaps_and_never_the_owners(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_rules(tmp_path))


# A bakery whose contact page is a form: its phone and hours are on its location page
# (../shared/data/sites/mr-tu-bakery's location.html writes them so).
BAKERY = "https://mrtubakery.example"
BAKERY_PAGES = [
    (f"{BAKERY}/contact", "contact", "Contact Us", "# Contact Us\n\nSend us a message with the form below."),
    (BAKERY, "home", "Mr Tu Bakery", "# Fresh every morning\n\nBuns, cakes and pastries."),
    (f"{BAKERY}/location", "location", "Location",
     "Flushing\n\n136-29 Roosevelt Ave, Flushing, NY, 11354\n\nTel: (718) 353-0832\n\nMonday to Sunday: 6 AM - 6 PM"),
    (f"{BAKERY}/menu", "other", "Menu", "Tel: (718) 000-0000\n\nEgg tart $2.99"),
]


async def _location(tmp_path: Path) -> None:
    kb = local_kb(tmp_path)
    for url, category, title, markdown in BAKERY_PAGES:
        await kb.query("INSERT INTO pages (site, url, category, status, title, markdown, updated_at) "
                       "VALUES ('bakery', ?, ?, 'ok', ?, ?, ?)", [url, category, title, markdown, iso(utc_now())])
    found = await detect(kb, "bakery", PageFactsConfig())
    assert found.pages == [f"{BAKERY}/contact", BAKERY, f"{BAKERY}/location"]  # contact, home, then location
    assert {c.key: (c.value, c.source_url) for c in found.kept} == {
        "telephone": ("(718) 353-0832", f"{BAKERY}/location"),
        "hours": ({day: [["06:00", "18:00"]] for day in DAYS}, f"{BAKERY}/location"),
        "address": ("136-29 Roosevelt Ave, Flushing, NY, 11354", f"{BAKERY}/location"),
    }
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_a_location_page_fills_what_the_contact_and_home_pages_do_not_write(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_location(tmp_path))


async def _regions(tmp_path: Path) -> None:
    kb = local_kb(tmp_path)
    assert (await site_model_and_regions(kb, "bakery", ["https://mrtubakery.com/location"]))[1] == ["AU", "US", "GB"]
    assert (await site_model_and_regions(kb, "werland", ["https://www.werland.de/kontakt"]))[1] == ["DE", "AU", "US", "GB"]
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_phone_numbers_are_read_by_the_sites_country_then_the_usual_ones(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_regions(tmp_path))


async def _many_locations(tmp_path: Path) -> None:
    kb = local_kb(tmp_path)
    await _seed(kb)
    for n in range(8):  # a service-area business's suburb pages
        await kb.query("INSERT INTO pages (site, url, category, status, title, markdown, updated_at) "
                       "VALUES ('bayside', ?, 'location', 'ok', ?, 'We ride to you.', ?)",
                       [f"{HOME}/areas/suburb-{n}", f"Suburb {n}", iso(utc_now())])
    found = await detect(kb, "bayside", PageFactsConfig(), dry_run=True)
    assert found.pages[:2] == [CONTACT, HOME] and len(found.pages) == 6  # MAX_PAGES; home is never crowded out
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_location_pages_come_after_the_contact_and_home_pages(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_many_locations(tmp_path))


def _completion(content: str) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "qwen3:4b",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 80, "total_tokens": 980}}


# What a model might answer: two facts as written, and two it made up (a number and Saturday's hours).
INVENTING = json.dumps({
    "telephone": "1300 555 000",
    "email": "workshop@baysidebikes.example",
    "address": "41 Beach Road, Sandringham VIC 3191",
    "hours": {**WEEKDAYS, "Saturday": [["09:00", "13:00"]]},
})


async def _model(tmp_path: Path, server: FakeChatServer) -> None:
    kb = local_kb(tmp_path)
    await _seed(kb, owner_hours=False)
    await kb.query("DELETE FROM facts WHERE key = 'phones'")
    found = await detect(kb, "bayside", PageFactsConfig(server.url, "qwen3:4b"))
    (method, path, body), = server.requests
    assert (method, path) == ("POST", "/v1/chat/completions")
    assert body["model"] == "qwen3:4b" and body["stream"] is False
    assert (body["temperature"], body["max_tokens"]) == (0, 1024)
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    user = body["messages"][1]["content"]
    assert f"## Page {CONTACT}\n\n" in user and f"## Page {HOME}\n\n" in user and "Services" not in user
    assert user.index(CONTACT) < user.index(f"## Page {HOME}\n")
    assert found.reader == "model qwen3:4b" and found.gaps == ["telephone", "email", "hours", "address"]
    assert {c.key: c.value for c in found.kept} == {"email": "workshop@baysidebikes.example",
                                                   "address": "41 Beach Road, Sandringham VIC 3191"}
    assert {c.key: c.reason for c in found.dropped} == {
        "telephone": "telephone: '1300 555 000' is not written in the page",
        "hours": "hours: 13:00 not written in the page"}
    facts = await _facts(kb)
    assert facts["address"]["source_url"] == CONTACT and facts["address"]["source"] == "crawl"
    assert "telephone" not in facts and "hours" not in facts
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_the_model_path_drops_what_the_page_does_not_write(tmp_path: Path):  # type: ignore[no-untyped-def]
    server = FakeChatServer([(200, _completion("<think>The contact page.</think>\n```json\n" + INVENTING + "\n```"))])
    try:
        yield run_async(_model(tmp_path, server))
    finally:
        server.close()


async def _left_to_the_rules(tmp_path: Path, server: FakeChatServer, why: str) -> None:
    """The model's answer is noted (`why`, in the note) and the rule-based reader reads the pages instead."""
    kb = local_kb(tmp_path)
    await _seed(kb, owner_hours=False)
    found = await detect(kb, "bayside", PageFactsConfig(server.url), dry_run=True)
    assert found.reader == "rules" and len(server.requests) == 1
    assert found.notes and why in found.notes[0] and "rule-based reader" in found.notes[0]
    assert {c.key for c in found.kept} == {"email", "hours", "address"}  # the rules read the same pages
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_a_model_answer_that_is_not_json_leaves_it_to_the_rules(tmp_path: Path):  # type: ignore[no-untyped-def]
    server = FakeChatServer([(200, _completion("The phone number is 03 9555 0142."))])
    try:
        yield run_async(_left_to_the_rules(tmp_path, server, "is not a JSON object"))
    finally:
        server.close()


@pytest_twisted.inlineCallbacks
def test_a_json_answer_with_none_of_the_fields_asked_for_leaves_it_to_the_rules(tmp_path: Path):  # type: ignore[no-untyped-def]
    # What SmolLM2-135M answered through llama-server (tests/test_dev_loop_real_model.py): JSON, but
    # not the object asked for. Taken as "the pages write nothing", it kept the rules from reading them.
    answer = '```json\n{"type": "json", "data": {"name": "Bayside Bike Repairs", "tags": ["bikes"]}}\n```'
    server = FakeChatServer([(200, _completion(answer))])
    try:
        yield run_async(_left_to_the_rules(tmp_path, server, "none of the fields asked for"))
    finally:
        server.close()


async def _workers_ai(fake: FakeCloudflare) -> str:
    client = CloudflareClient(HttpTransport("token", fake.url), "acc")
    try:
        return await WorkersAIChat(client, "@cf/zai-org/glm-4.7-flash").complete([{"role": "user", "content": "x"}])
    finally:
        await client.aclose()


@pytest_twisted.inlineCallbacks
def test_workers_ai_gets_the_sites_model_with_reasoning_off(tmp_path: Path):  # type: ignore[no-untyped-def]
    with FakeCloudflare() as fake:
        fake.on("POST", "/accounts/acc/ai/run/@cf/zai-org/glm-4.7-flash", Canned(200, result=_completion("{}")))
        answer = yield run_async(_workers_ai(fake))
        (request,) = fake.requests
    assert answer == "{}"
    assert request.path == "/client/v4/accounts/acc/ai/run/@cf/zai-org/glm-4.7-flash"
    assert request.json() == {"messages": [{"role": "user", "content": "x"}], "temperature": 0,
                              "max_completion_tokens": 1024, "chat_template_kwargs": {"enable_thinking": False}}
