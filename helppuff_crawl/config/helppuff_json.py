"""helppuff.json: one site's configuration, checked against helppuff_crawl/schema/helppuff.schema.json.

To add a field: add it to the schema (this side checks every field against it, with no code of its
own), and read it where it is used: `website_arguments` below for knowledge.website, the Worker's
worker/src/settings.ts for backend; helppuff_crawl/schema/cases.json tests both readers on it.

The file has the shape seed 000 shows: `backend` for the answering side (the Worker reads it from
D1 site_settings, where `helppuff settings set` stores it) and `knowledge` for the crawl
(`knowledge.website`: include, exclude, maxPages, renderJs, schedule; read by `helppuff crawl
--config`). Checking uses the JSON Schema (jsonschema, a well-kept validator, rather than rules
of our own), with one format of ours: that the time zone exists. Every problem names its
field: "backend.retrieval.finalK: 50 is greater than the maximum of 20".

The Worker reads the same fields leniently (a bad one keeps its default and is logged);
`helppuff_crawl/schema/cases.json` lists documents both sides are tested on, so the two stay in step.
"""

from __future__ import annotations

import json
import logging
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from helppuff_crawl.config.contract import SCHEMA_DIR

logger = logging.getLogger(__name__)

SCHEMA_PATH = SCHEMA_DIR / "helppuff.schema.json"


class ConfigError(ValueError):
    """A helppuff.json that cannot be used: every problem, one line each, naming the field."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: " + "; ".join(problems))


@cache
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _field(path: Any) -> str:
    return ".".join(str(part) for part in path) or "(the file)"


# What the schema's "format" names that JSON Schema cannot say itself: a time zone that exists.
_FORMATS = jsonschema.FormatChecker(formats=())


@_FORMATS.checks("time-zone")
def _known_zone(zone: object) -> bool:
    """Whether the IANA database knows `zone` (True when this machine has no database to ask)."""
    zones = _zones()
    return not isinstance(zone, str) or not zones or zone in zones


@cache
def _zones() -> frozenset[str]:
    from zoneinfo import available_timezones

    return frozenset(available_timezones())


def config_problems(root: Any) -> list[str]:
    """Everything wrong with a parsed helppuff.json, one line each, in file order; [] when it is fine."""
    validator = jsonschema.Draft202012Validator(schema(), format_checker=_FORMATS)
    problems = []
    for error in sorted(validator.iter_errors(root), key=lambda e: [str(p) for p in e.absolute_path]):
        message = error.message
        if error.validator in ("pattern", "format"):  # the schema says what form it wants ("x-form")
            message = f"{error.instance!r} is not {error.schema.get('x-form', 'of the right form')}"
        if error.validator == "additionalProperties" and not error.absolute_path:
            message += ' (the answering settings go inside "backend": {...})'
        problems.append(f"{_field(error.absolute_path)}: {message}")
    return problems


def parse_config(text: str, source: str = "helppuff.json") -> dict[str, Any]:
    """The checked configuration from JSON text; ConfigError naming every problem."""
    try:
        root = json.loads(text)
    except ValueError as exc:
        raise ConfigError(source, [f"not JSON: {exc}"]) from exc
    problems = config_problems(root)
    if problems:
        raise ConfigError(source, problems)
    return root


def read_config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(str(path), ["no such file"])
    return parse_config(path.read_text(encoding="utf-8"), str(path))


def website_arguments(config: dict[str, Any]) -> dict[str, Any]:
    """The spider arguments `knowledge.website` sets (only those it names)."""
    website = config.get("knowledge", {}).get("website", {})
    names = {"include": "include", "exclude": "exclude", "maxPages": "max_pages", "renderJs": "render_js"}
    return {argument: website[key] for key, argument in names.items() if key in website}
