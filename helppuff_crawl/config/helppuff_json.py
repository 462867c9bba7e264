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

`knowledge.files` names documents relative to the folder the helppuff.json is in, and each must
stay inside that folder (`listed_files`): an absolute path, a path that climbs out with "..", and
a symbolic link (the file or a folder on its way) that leads outside are problems of the file,
named by entry, like any other; so a helppuff.json cannot have another folder's files (say
~/.ssh/id_rsa) uploaded into the site's knowledge base, where visitors can read them.

`knowledge.retrieval.module` (a module retriever, "custom") names a .ts or .js file relative to the
folder of the helppuff.json; `read_config` says when it is not there, and `stored_settings` gives the
settings as the Worker reads them, its path made absolute (the key the Worker's bundle finds it by).

The Worker reads the same fields leniently (a bad one keeps its default and is logged);
`helppuff_crawl/schema/cases.json` lists documents both sides are tested on, so the two stay in step.
"""

from __future__ import annotations

import json
import logging
import os
from functools import cache
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import jsonschema

from helppuff_crawl.schema.contract import SCHEMA_DIR

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


def _rule(error: jsonschema.ValidationError, root: Any) -> tuple[list[Any], str] | None:
    """The field and message of a rule between fields ("x-message" in the schema, which may name the
    other fields of its object, as "{type}"), or None when `error` breaks no such rule.

    A `required` error is named by the missing field, with that field's rule when it has one:
    "backend.retrieval: missing; must be "helppuff" when backend.type is retell"."""
    path = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = next((name for name in error.validator_value if name not in error.instance), None)
        rule = error.schema.get("properties", {}).get(missing, {}).get("x-message")
        if rule is None:
            return None
        return [*path, missing], "missing; " + rule.format_map(_Fields(error.instance))
    rule = error.schema.get("x-message") if isinstance(error.schema, dict) else None
    if rule is None:
        return None
    holder = root
    for part in path[:-1]:
        holder = holder[part]
    return path, rule.format_map(_Fields(holder if isinstance(holder, dict) else {}))


class _Fields(dict[str, Any]):
    """An object's fields for str.format_map; an absent one reads as its own name."""

    def __missing__(self, key: str) -> str:
        return key


def config_problems(root: Any) -> list[str]:
    """Everything wrong with a parsed helppuff.json, one line each, in file order; [] when it is fine.

    A field that breaks a rule between fields (backend.retrieval with backend.type) is named once,
    with that rule, rather than with each way its value fails."""
    validator = jsonschema.Draft202012Validator(schema(), format_checker=_FORMATS)
    found: list[tuple[list[Any], str, bool]] = []
    for error in validator.iter_errors(root):
        rule = _rule(error, root)
        if rule is not None:
            found.append((rule[0], rule[1], True))
            continue
        message = error.message
        if error.validator in ("pattern", "format"):  # the schema says what form it wants ("x-form")
            message = f"{error.instance!r} is not {error.schema.get('x-form', 'of the right form')}"
        if error.validator == "additionalProperties" and not error.absolute_path:
            message += ' (the answering settings go inside "backend": {...})'
        found.append((list(error.absolute_path), message, False))
    ruled = {_field(path) for path, _, is_rule in found if is_rule}
    kept = [(path, f"{_field(path)}: {message}") for path, message, is_rule in found
            if is_rule or _field(path) not in ruled]
    return [line for _, line in sorted(kept, key=lambda item: [str(part) for part in item[0]])]


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
    """The checked configuration in the file `path` (knowledge.files too); ConfigError naming every problem."""
    if not path.is_file():
        raise ConfigError(str(path), ["no such file"])
    config = parse_config(path.read_text(encoding="utf-8"), str(path))
    listed_files(path, config)
    retriever_module(path, config)
    return config


def retriever_module(path: Path, config: dict[str, Any]) -> Path | None:
    """The file knowledge.retrieval.module names (type "custom"), relative to the folder of `path` (the
    helppuff.json) unless absolute; None for another retriever. ConfigError when it is not a file."""
    retrieval = config.get("knowledge", {}).get("retrieval") or {}
    if retrieval.get("type") != "custom":
        return None
    entry = retrieval["module"]
    module = Path(entry) if Path(entry).is_absolute() else path.absolute().parent / entry
    if not module.is_file():
        raise ConfigError(str(path), [f"knowledge.retrieval.module: {entry!r} is not there (no file {module}; "
                                      f"it is named relative to the folder of {path.name})"])
    return Path(os.path.normpath(module))


def stored_settings(path: Path, config: dict[str, Any]) -> dict[str, Any]:
    """`config` as the Worker's settings store it: a module retriever's path made absolute (resolved
    against the folder of `path`), the key the Worker's bundle registers the module by
    (helppuff_crawl/deploy/entry.py); ConfigError when the module is not there."""
    module = retriever_module(path, config)
    if module is None:
        return config
    knowledge = {**config["knowledge"], "retrieval": {**config["knowledge"]["retrieval"], "module": str(module)}}
    return {**config, "knowledge": knowledge}


def listed_files(path: Path, config: dict[str, Any]) -> list[Path]:
    """The files `config`'s knowledge.files lists, each inside the folder of `path` (the helppuff.json).

    ConfigError naming every entry that is an absolute path or resolves outside the folder ("..",
    or a symbolic link on its way that leads out). A listed file that does not exist is no problem
    here: the upload says so. The paths returned are the folder joined with each entry, so a file
    keeps the name its entry gives it."""
    folder = path.absolute().parent
    real_folder = folder.resolve()
    problems = []
    files = []
    for i, entry in enumerate(config.get("knowledge", {}).get("files", [])):
        field = f"knowledge.files.{i}"
        if PurePosixPath(entry).is_absolute() or PureWindowsPath(entry).anchor:
            problems.append(f"{field}: {entry!r} is an absolute path; name the file relative to the folder of "
                            f"{path.name} ({folder})")
            continue
        listed = folder / entry
        try:
            real = listed.resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # a loop of symbolic links, a NUL in the name
            problems.append(f"{field}: {entry!r} cannot be resolved: {exc}")
            continue
        if not real.is_relative_to(real_folder):
            if Path(os.path.normpath(listed)).is_relative_to(folder):
                how = f"through a symbolic link, to {real}"
            else:
                how = "with '..'"
            problems.append(f"{field}: {entry!r} leads outside the folder of {path.name} ({folder}) {how}; "
                            "only files inside it can be listed")
            continue
        files.append(listed)
    if problems:
        raise ConfigError(str(path), problems)
    return files


def website_arguments(config: dict[str, Any]) -> dict[str, Any]:
    """The spider arguments `knowledge.website` sets (only those it names)."""
    website = config.get("knowledge", {}).get("website", {})
    names = {"include": "include", "exclude": "exclude", "maxPages": "max_pages", "renderJs": "render_js"}
    return {argument: website[key] for key, argument in names.items() if key in website}


def retrieval_of(text: str | None) -> dict[str, Any]:
    """knowledge.retrieval of a site's stored settings (JSON text); {} when absent or unreadable."""
    try:
        root = json.loads(text or "{}")
    except ValueError:
        return {}
    knowledge = root.get("knowledge") if isinstance(root, dict) else None
    retrieval = knowledge.get("retrieval") if isinstance(knowledge, dict) else None
    return retrieval if isinstance(retrieval, dict) else {}
