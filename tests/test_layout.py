"""The project's layout rules, read off the source: no import cycle on either side (imports inside
functions and under TYPE_CHECKING count), each folder of the crawler on its floor (importing only the floors below), no SQL outside the knowledge base and the local cloud, and
every HELPPUFF_* setting declared once, in settings.py, with its default, and in the README."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "helppuff_crawl"
WORKER_SRC = ROOT / "worker" / "src"


# --- import cycles --------------------------------------------------------------------------


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _python_modules() -> dict[str, Path]:
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _python_imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `path` imports, wherever the import statement is."""
    found: set[str] = set()
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    found.discard(_module_name(path))
    return found


_TS_IMPORT = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["'](\.{1,2}/[^"']+)["']""", re.MULTILINE)


def _ts_imports(path: Path) -> set[str]:
    """The worker/src modules `path` imports (type-only imports and re-exports too)."""
    found: set[str] = set()
    for target in _TS_IMPORT.findall(path.read_text(encoding="utf-8")):
        resolved = (path.parent / target).resolve()
        for candidate in (resolved.with_suffix(".ts"), resolved / "index.ts", resolved):
            if candidate.suffix == ".ts" and candidate.is_file() and WORKER_SRC in candidate.parents:
                found.add(str(candidate.relative_to(WORKER_SRC)))
                break
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = iter(range(10**9))

    def visit(node: str) -> None:
        index[node] = low[node] = next(counter)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_the_crawler() -> None:
    modules = _python_modules()
    graph = {name: _python_imports(path, modules) for name, path in modules.items()}
    assert sum(len(targets) for targets in graph.values()) > 100  # the scan reads the imports at all
    assert _cycles(graph) == []


def test_no_import_cycle_in_the_worker() -> None:
    if not WORKER_SRC.is_dir():
        pytest.skip("worker/src is absent")
    graph = {str(path.relative_to(WORKER_SRC)): _ts_imports(path) for path in WORKER_SRC.rglob("*.ts")}
    assert "ports.ts" in graph.get("bindings.ts", set())  # the scan reads the imports at all
    assert _cycles(graph) == []


# --- floors: a folder imports only folders on floors below its own ---------------------------

# The package's folders (and its top-level modules) from the ground up. A folder may import what is
# on a lower floor, never its own floor or above, so no loop between folders can form; a new folder
# is placed here on purpose.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("__init__", "settings", "clock", "items", "batching", "schema"),  # plain values and the schema files
    ("text", "cloudflare"),        # text and markup; Cloudflare's REST API and the deploy state
    ("web", "local", "embed"),     # URLs and pages; the local stand-in for Cloudflare; embedding models
    ("kb", "middlewares"),         # the knowledge base; Scrapy's downloader middlewares
    ("extensions", "handlers", "config"),
    ("pipelines", "spiders", "deploy"),
    ("commands", "devloop"),       # Scrapy commands; the Worker's dev loop (`helppuff serve`)
    ("cli",),
)


def _folder(module: str) -> str:
    """`helppuff_crawl.kb.writer` -> `kb`; a top-level module is its own folder."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _floor_breaches(graph: dict[str, set[str]], floors: tuple[tuple[str, ...], ...]) -> list[str]:
    floor_of = {folder: number for number, floor in enumerate(floors) for folder in floor}
    breaches = []
    for module, targets in sorted(graph.items()):
        here = _folder(module)
        if here not in floor_of:
            breaches.append(f"{here}: on no floor")
            continue
        for target in sorted(targets):
            there = _folder(target)
            if there != here and floor_of.get(there, len(floors)) >= floor_of[here]:
                breaches.append(f"{module} imports {target}")
    return sorted(set(breaches))


def test_the_floor_rule_catches_an_import_upwards_and_sideways() -> None:
    floors = (("a",), ("b", "c"))
    assert _floor_breaches({"p.b.x": {"p.a.y", "p.b.z"}}, floors) == []
    assert _floor_breaches({"p.a.y": {"p.b.x"}}, floors) == ["p.a.y imports p.b.x"]
    assert _floor_breaches({"p.b.x": {"p.c.w"}}, floors) == ["p.b.x imports p.c.w"]
    assert _floor_breaches({"p.d.v": set()}, floors) == ["d: on no floor"]


def test_every_folder_imports_only_the_floors_below_it() -> None:
    modules = _python_modules()
    graph = {name: {target for target in _python_imports(path, modules) if target != "helppuff_crawl"}
             for name, path in modules.items() if name != "helppuff_crawl"}
    assert {_folder(name) for name in graph} >= {"kb", "local", "cli", "devloop"}
    assert _floor_breaches(graph, FLOORS) == []


# --- SQL stays in the knowledge base and the local cloud -------------------------------------

# Statements as the project writes them (keywords in capitals): a SELECT names what it reads FROM.
_SQL = re.compile(r"^\s*(?:SELECT\s.*\bFROM\s|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|CREATE\s+TABLE\s)",
                  re.DOTALL)
_SQL_HOMES = (PACKAGE / "kb", PACKAGE / "local")


def _strings(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value
        elif isinstance(node, ast.JoinedStr):
            yield "".join(part.value for part in node.values if isinstance(part, ast.Constant))


def _sql_outside_homes(paths: Iterable[Path]) -> list[str]:
    found = []
    for path in paths:
        if any(home in path.parents for home in _SQL_HOMES):
            continue
        for text in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            if _SQL.match(text):
                found.append(f"{path.relative_to(ROOT)}: {text[:60]!r}")
    return found


def test_no_sql_outside_the_knowledge_base_and_the_local_cloud() -> None:
    assert _sql_outside_homes([PACKAGE / "kb" / "runs.py"]) == []  # a home is allowed its SQL
    assert _sql_outside_homes(PACKAGE.rglob("*.py")) == []


# --- settings -----------------------------------------------------------------------------

_SETTING = re.compile(r"\bHELPPUFF_[A-Z0-9_]+\b")


def _declared() -> dict[str, object]:
    from helppuff_crawl import settings

    return {name: value for name, value in vars(settings).items() if name.startswith("HELPPUFF_")}


def _settings_reads() -> list[tuple[str, str, int]]:
    """(setting, file, number of positional arguments) of every `.get*("HELPPUFF_...", ...)` call."""
    reads = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "settings.py":  # the declarations, from the environment
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("get", "getint", "getfloat", "getbool", "getlist", "getdict")
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str) and node.args[0].value.startswith("HELPPUFF_")):
                reads.append((node.args[0].value, str(path.relative_to(ROOT)), len(node.args)))
    return reads


def test_every_setting_read_is_declared_in_settings_py() -> None:
    reads = _settings_reads()
    assert len({name for name, _, _ in reads}) > 30
    undeclared = sorted({f"{name} ({path})" for name, path, _ in reads if name not in _declared()})
    assert undeclared == []


def test_no_setting_is_read_with_a_default_of_its_own() -> None:
    assert sorted(f"{name} ({path})" for name, path, args in _settings_reads() if args > 1) == []


def test_every_declared_setting_is_read_somewhere_and_has_a_readme_row() -> None:
    uses = _SETTING.findall("\n".join(path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = set(_SETTING.findall("\n".join(line for line in readme.splitlines() if line.startswith("| `HELPPUFF_"))))
    unused = sorted(name for name in _declared() if uses.count(name) < 2)  # its declaration is one
    assert unused == []
    assert sorted(set(_declared()) - rows) == []
