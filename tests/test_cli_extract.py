"""`helppuff extract`: files and URLs (served from tests/sites/extract_cases on 127.0.0.1)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from helppuff_crawl import __version__
from helppuff_crawl.cli import main
from helppuff_crawl.cli import extract as extract_cli

SITE = Path(__file__).parent / "sites" / "extract_cases"
INDEX_MARKDOWN = (
    "# Plumbers in Richmond\n\nBlocked drains, leaking taps and hot water systems, fixed on the first visit.\n\n"
    "## Our services\n\n- Blocked drains\n- Hot water systems\n- Leaking taps"
)


def _json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def test_one_file_prints_its_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extract", str(SITE / "index.html")]) == 0
    assert capsys.readouterr().out == INDEX_MARKDOWN + "\n"


def test_several_files_and_a_missing_one(capsys: pytest.CaptureFixture[str]) -> None:
    missing = SITE / "missing.html"
    code = main(["extract", str(SITE / "index.html"), str(missing), str(SITE / "faq.html")])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err == f"helppuff extract: {missing}: no such file\n"
    assert captured.out == (
        f"<!-- helppuff extract: {SITE / 'index.html'} -->\n{INDEX_MARKDOWN}\n\n"
        f"<!-- helppuff extract: {SITE / 'faq.html'} -->\n# Questions\n\n**Do you charge a call-out fee?**\n"
        "Yes, $99, waived if you go ahead with the repair.\n\n"
    )


def test_a_folder_is_not_a_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extract", str(SITE)]) == 2
    assert capsys.readouterr().err == f"helppuff extract: {SITE}: is a directory (pass the files in it)\n"


def test_json_for_a_file_with_its_url(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["extract", "--json", "--url", "https://acme.example/", str(SITE / "index.html")])
    [record] = _json_lines(capsys.readouterr().out)
    assert code == 0
    assert record["input"] == str(SITE / "index.html")
    assert (record["url"], record["title"], record["category"], record["method"]) == (
        "https://acme.example/", "Acme Plumbing | Richmond plumbers", "home", "main")
    assert record["markdown"] == INDEX_MARKDOWN
    assert record["facts"]["name"] == "Acme Plumbing"
    assert record["facts"]["hours"]["Saturday"] == [["09:00", "12:00"]]
    assert record["facts"]["phones"] == ["+61399999999"]
    assert record["faq"] == []


def test_json_category_of_a_file_without_url_comes_from_its_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extract", "--json", str(SITE / "contact.html"), str(SITE / "faq.html")]) == 0
    contact, faq = _json_lines(capsys.readouterr().out)
    assert (contact["url"], contact["category"]) == ("", "contact")
    assert contact["facts"]["emails"] == ["hello@acme.example"]
    assert (faq["category"], faq["faq"]) == (
        "faq", [["Do you charge a call-out fee?", "Yes, $99, waived if you go ahead with the repair."]])


def test_url_inputs(serve_site, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    site = serve_site("extract_cases")
    code = main(["extract", "--json", f"{site.url}/", f"{site.url}/old-contact", f"{site.url}/gone",
                 f"{site.url}/logo.png"])
    captured = capsys.readouterr()
    home, contact = _json_lines(captured.out)
    assert code == 2
    assert (home["url"], home["category"], home["markdown"]) == (f"{site.url}/", "home", INDEX_MARKDOWN)
    # the redirect was followed: the page's URL and category are those of /contact
    assert (contact["input"], contact["url"], contact["category"]) == (
        f"{site.url}/old-contact", f"{site.url}/contact", "contact")
    assert contact["markdown"].startswith("# Contact us\n\nEmail hello@acme.example or call 03 9999 9999.")
    assert captured.err.splitlines() == [
        f"helppuff extract: {site.url}/gone: HTTP 404",
        f"helppuff extract: {site.url}/logo.png: not an HTML page (image/png)",
    ]


def test_url_reads_at_most_max_bytes(serve_site, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    site = serve_site("extract_cases")
    cut = (SITE / "index.html").read_bytes().index(b"<h2>Our services")
    monkeypatch.setattr(extract_cli, "MAX_BYTES", cut)
    assert main(["extract", f"{site.url}/index.html"]) == 0
    assert capsys.readouterr().out == (
        "# Plumbers in Richmond\n\nBlocked drains, leaking taps and hot water systems, fixed on the first visit.\n"
    )


def test_user_agent() -> None:
    assert extract_cli.USER_AGENT == f"helppuff-crawler/{__version__} (+https://helppuff.com/crawler)"


def test_bad_url_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extract", "--url", "acme.example", str(SITE / "index.html")]) == 2
    assert capsys.readouterr().err == "helppuff extract: --url must be an http(s) URL, got 'acme.example'\n"


def test_unreachable_url(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:  # a port nothing listens on: bound, then closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["extract", f"http://127.0.0.1:{port}/"]) == 2
    assert capsys.readouterr().err.startswith(f"helppuff extract: http://127.0.0.1:{port}/: ConnectError: ")
