"""Tests for `helppuff chunk` (helppuff_crawl.cli.chunk): listing, JSON lines, stdin, bad input."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from helppuff_crawl.cli import main
from helppuff_crawl.text.chunking import chunk_id

PAGE = """\
# Hot Water Repairs

We repair every brand.

## Questions

**Do you work weekends?**

Yes, on Saturdays.
"""
TITLE = "Hot Water Repairs | Acme Plumbing"
URL = "https://acme.com.au/services/hot-water"


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "page.md"
    path.write_text(PAGE, encoding="utf-8")
    return path


def args(file: str, *extra: str) -> list[str]:
    return ["chunk", file, "--url", URL, "--title", TITLE, "--category", "service", *extra]


def test_json_lines(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args(str(page), "--site", "acme", "--json")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in lines] == [
        {
            "id": "cb09593a3a832109e54cbbaf62f408cd7db569cc",
            "ordinal": 0,
            "heading_path": [TITLE],
            "anchor": "",
            "tokens": 11,
            "is_faq": False,
            "oversized": False,
            "prefix": f"Page: {TITLE}\nSection: {TITLE}\nCategory: service\nURL: {URL}\n---\n",
            "text": "# Hot Water Repairs\n\nWe repair every brand.",
        },
        {
            "id": "4394565b41e78cb37046790bc8f7ca0602e32124",
            "ordinal": 0,
            "heading_path": [TITLE, "Questions"],
            "anchor": "questions",
            "tokens": 15,
            "is_faq": True,
            "oversized": False,
            "prefix": f"Page: {TITLE}\nSection: {TITLE} › Questions\nCategory: service\nURL: {URL}\n---\n",
            "text": "## Questions\n\n**Do you work weekends?**\n\nYes, on Saturdays.",
        },
    ]
    assert "›" in lines[1]  # not escaped: the JSON is UTF-8


def test_readable_listing(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args(str(page), "--site", "acme")) == 0
    assert capsys.readouterr().out == (
        f"=== chunk 1/2 · {TITLE} [0]\n"
        "id cb09593a3a832109e54cbbaf62f408cd7db569cc · 11 tokens\n"
        "\n"
        "# Hot Water Repairs\n\nWe repair every brand.\n"
        "\n"
        f"=== chunk 2/2 · {TITLE} › Questions [0]\n"
        "id 4394565b41e78cb37046790bc8f7ca0602e32124 · 15 tokens, #questions, faq\n"
        "\n"
        "## Questions\n\n**Do you work weekends?**\n\nYes, on Saturdays.\n"
        "\n"
        "2 chunks, 26 tokens\n"
    )


def test_stdin_and_crlf(
    monkeypatch: pytest.MonkeyPatch, page: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args(str(page), "--site", "acme", "--json")) == 0
    from_file = capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO(PAGE.replace("\n", "\r\n")))
    assert main(args("-", "--site", "acme", "--json")) == 0
    assert capsys.readouterr().out == from_file


@pytest.mark.parametrize(
    ("url", "site"),
    [
        ("https://www.Acme-Plumbing.com.au/x", "acme-plumbing-com-au"),
        ("http://127.0.0.1:8080/x", "127-0-0-1"),
    ],
)
def test_site_defaults_to_the_host(
    page: Path, capsys: pytest.CaptureFixture[str], url: str, site: str
) -> None:
    argv = ["chunk", str(page), "--url", url, "--title", TITLE, "--category", "service", "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out.splitlines()[0])
    assert first["id"] == chunk_id(site, url, (TITLE,), 0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (args("/nonexistent/page.md"), "helppuff chunk: no such file: /nonexistent/page.md\n"),
        (
            ["chunk", "PAGE", "--url", URL, "--title", TITLE, "--category", "services"],
            "helppuff chunk: --category must be one of: home service product location about contact "
            "faq pricing blog team testimonials booking policy legal other (got 'services')\n",
        ),
        (
            ["chunk", "PAGE", "--url", "not a url", "--title", TITLE, "--category", "faq"],
            "helppuff chunk: cannot name the site from --url 'not a url': give --site\n",
        ),
        (args("BINARY"), "helppuff chunk: BINARY is not UTF-8 text (invalid start byte at byte 0)\n"),
    ],
)
def test_usage_errors(
    tmp_path: Path,
    page: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "BINARY").write_bytes(b"\xff\xfe\x00junk")
    argv = [page.name if a == "PAGE" else a for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == message
    assert captured.out == ""
