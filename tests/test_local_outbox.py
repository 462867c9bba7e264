"""The local stand-in of the Worker's send_email binding (helppuff_crawl/local/cloud.py `_outbox`, called by
worker/src/notify-email.ts under `helppuff serve`): an email is written to <data dir>/outbox as a text file
and sent nowhere; one without from, to, subject or text is refused as the binding refuses it."""

from __future__ import annotations

import json
from pathlib import Path

from helppuff_crawl.local.cloud import LocalCloud

ROUTE = "/client/v4/accounts/local/helppuff/outbox"


def test_an_email_is_written_to_the_outbox_and_sent_nowhere(tmp_path: Path) -> None:
    cloud = LocalCloud(tmp_path)
    message = {"from": "helppuff@localhost", "to": "owner@acme.com.au",
               "subject": "New callback request on acme: Sam\nBcc: everyone@example.com", "text": "Sam <b>asked</b>."}
    answer = cloud.handle("POST", ROUTE, json.dumps(message).encode(), {"Content-Type": "application/json"})
    assert answer.status == 200 and answer.body["success"] is True
    (written,) = (tmp_path / "outbox").glob("*.eml")
    assert Path(answer.body["result"]["path"]) == written
    lines = written.read_text(encoding="utf-8").splitlines()
    assert lines[:3] == ["From: helppuff@localhost", "To: owner@acme.com.au",
                         "Subject: New callback request on acme: Sam Bcc: everyone@example.com"]  # one line: no header injected
    assert lines[3].startswith("X-HelpPuff: written by the local stand-in") and lines[5] == "Sam <b>asked</b>."
    refused = cloud.handle("POST", ROUTE, json.dumps({"to": "owner@acme.com.au"}).encode(), {})
    assert refused.status == 400 and refused.body["errors"][0]["message"] == "an email needs from, to, subject and text"
    cloud.close()
