"""Module retrievers from the command line (seed 001, "In TypeScript"): `helppuff scaffold rag` writes a
file the project's type checker accepts (tsc --noEmit with worker/tsconfig.json) and `--use` points
helppuff.json and the site's stored settings at it; `config check` names a module that is not there;
`helppuff deploy --dry-run` bundles it into the Worker through the generated entry file; and `helppuff
secret set` on the Cloudflare path runs `wrangler secret put NAME`, the value on stdin, with FakeWrangler
(a fake of wrangler, in place of worker/.node's node at the deploy runner's seam, find_toolchain)
recording its command line, stdin and environment. Real SQLite, real commands otherwise."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.deploy.entry import custom_modules, entry_source, write_entry
from helppuff_crawl.deploy.toolchain import WORKER_DIR, Toolchain
from tests.conftest import run_helppuff

TSC = WORKER_DIR / "node_modules" / ".bin" / "tsc"
NODE = WORKER_DIR / ".node" / "bin" / "node"


def _stored(tmp_path: Path, site: str = "shop") -> dict[str, Any]:
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as conn:
        (text,) = conn.execute("SELECT settings FROM site_settings WHERE site = ?", [site]).fetchone()
    return json.loads(text)


def _typecheck(tmp_path: Path, module: Path) -> subprocess.CompletedProcess[str]:
    """tsc --noEmit on `module` alone, with the Worker's compiler options and its Workers types."""
    if not (TSC.exists() and NODE.exists()):
        pytest.skip("the Worker's toolchain is not installed: run `bash scripts/setup-worker.sh`")
    config = tmp_path / "tsconfig.json"
    config.write_text(json.dumps({
        "extends": str(WORKER_DIR / "tsconfig.json"), "include": [str(module)],
        "compilerOptions": {"typeRoots": [str(WORKER_DIR / "node_modules")], "types": ["@cloudflare/workers-types"]},
    }), encoding="utf-8")
    env = {**os.environ, "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([str(TSC), "--noEmit", "-p", str(config)], cwd=WORKER_DIR, env=env, capture_output=True,
                          text=True, check=False, timeout=300)


def test_scaffold_writes_a_module_that_type_checks_and_never_overwrites(tmp_path: Path) -> None:
    site = tmp_path / "site"
    module = site / "rag.ts"
    done = run_helppuff(tmp_path, "scaffold", "rag", "--out", str(module))
    assert done.returncode == 0, done.stderr
    text = module.read_text(encoding="utf-8")
    assert "export default {" in text and "} satisfies Retriever;" in text
    assert 'ctx.fetch("https://search.example.com/query"' in text and 'ctx.env["MY_SEARCH_KEY"]' in text
    checked = _typecheck(tmp_path, module)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    # The check can fail: a field the search result does not have is a type error.
    module.write_text(text.replace("content: r.text", "content: r.body"), encoding="utf-8")
    broken = _typecheck(tmp_path, module)
    assert broken.returncode != 0 and "body" in broken.stdout

    again = run_helppuff(tmp_path, "scaffold", "rag", "--out", str(module))
    assert again.returncode == 2 and "not overwritten" in again.stderr and "Traceback" not in again.stderr
    assert "r.body" in module.read_text(encoding="utf-8")
    forced = run_helppuff(tmp_path, "scaffold", "rag", "--out", str(module), "--force", "--secret", "ACME_KEY",
                          "--search-url", "http://127.0.0.1:9/query")
    assert forced.returncode == 0, forced.stderr
    assert 'ctx.env["ACME_KEY"]' in module.read_text(encoding="utf-8")
    assert _typecheck(tmp_path, module).returncode == 0

    for bad in (["--out", str(site / "rag.py")], ["--out", str(site / "x.ts"), "--secret", "OPENAI_key"],
                ["--out", str(site / "y.ts"), "--site", "shop"]):
        refused = run_helppuff(tmp_path, "scaffold", "rag", *bad)
        assert refused.returncode == 2, bad
    assert sorted(p.name for p in site.iterdir()) == ["rag.ts"]


def test_use_points_helppuff_json_and_the_stored_settings_at_the_module(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    config = site / "helppuff.json"
    config.write_text(json.dumps({"backend": {"allowNoOrigin": True}, "knowledge": {"files": []}}), encoding="utf-8")
    kept = {"backend": {"prompt": "You are Acme's assistant.", "allowNoOrigin": True}}
    assert run_helppuff(tmp_path, "settings", "set", "-", "--site", "shop", stdin=json.dumps(kept)).returncode == 0

    done = run_helppuff(tmp_path, "scaffold", "rag", "--use", "--site", "shop", "--out", str(site / "search" / "rag.ts"),
                        "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert "helppuff secret set MY_SEARCH_KEY" in done.stdout
    retrieval = {"type": "custom", "module": "./search/rag.ts", "secrets": ["MY_SEARCH_KEY"]}
    assert json.loads(config.read_text(encoding="utf-8")) == {
        "backend": {"allowNoOrigin": True}, "knowledge": {"files": [], "retrieval": retrieval}}
    # The stored settings keep the rest and hold the module's absolute path: the bundle's key.
    assert _stored(tmp_path) == {**kept, "knowledge": {"retrieval": {**retrieval,
                                                                     "module": str(site / "search" / "rag.ts")}}}
    checked = run_helppuff(tmp_path, "config", "check", str(config))
    assert checked.returncode == 0 and "fine" in checked.stdout, checked.stdout

    # Refused before anything is written: a secret that is the Worker's own, a helppuff.json with a mistake.
    refused = run_helppuff(tmp_path, "scaffold", "rag", "--use", "--out", str(site / "two.ts"), "--config", str(config),
                           "--secret", "RETELL_API_KEY")
    assert refused.returncode == 2 and "knowledge.retrieval.secrets.0:" in refused.stderr, refused.stderr
    broken = tmp_path / "broken" / "helppuff.json"
    broken.parent.mkdir()
    broken.write_text('{"backend": {"retrieval": {"finalK": 50}}}', encoding="utf-8")
    refused = run_helppuff(tmp_path, "scaffold", "rag", "--use", "--out", str(broken.parent / "rag.ts"),
                           "--config", str(broken))
    assert refused.returncode == 2 and "backend.retrieval.finalK" in refused.stderr, refused.stderr
    assert not (site / "two.ts").exists() and not (broken.parent / "rag.ts").exists()
    assert json.loads(config.read_text(encoding="utf-8"))["knowledge"]["retrieval"] == retrieval

    # config apply stores it the same way, resolved against the file's folder.
    assert run_helppuff(tmp_path, "config", "apply", str(config), "--site", "other").returncode == 0
    assert _stored(tmp_path, "other")["knowledge"]["retrieval"]["module"] == str(site / "search" / "rag.ts")


def test_rag_set_custom_stores_an_existing_module_by_its_absolute_path(tmp_path: Path) -> None:
    module = tmp_path / "site" / "search.js"
    module.parent.mkdir()
    module.write_text("export default { id: 'js', search: () => [] };\n", encoding="utf-8")
    assert run_helppuff(tmp_path, "settings", "set", "-", "--site", "shop", stdin='{"backend": {"allowNoOrigin": true}}'
                        ).returncode == 0
    done = run_helppuff(tmp_path, "rag", "set", "custom", "--site", "shop", "--module", str(module), "--secret", "A_KEY",
                        "--secret", "B_KEY", "--secret", "A_KEY", "--timeout-ms", "2000")
    assert done.returncode == 0, done.stderr
    assert "helppuff secret set A_KEY" in done.stdout and "helppuff secret set B_KEY" in done.stdout
    assert _stored(tmp_path) == {"backend": {"allowNoOrigin": True}, "knowledge": {"retrieval": {
        "type": "custom", "module": str(module), "secrets": ["A_KEY", "B_KEY"], "timeoutMs": 2000}}}
    for bad, said in ((["--module", str(tmp_path / "none.ts")], "no such file"),
                      (["--module", str(module), "--secret", "OPENAI_API_KEY"], "knowledge.retrieval.secrets.0:")):
        refused = run_helppuff(tmp_path, "rag", "set", "custom", "--site", "shop", *bad)
        assert refused.returncode == 2 and said in refused.stderr, refused.stderr
    assert _stored(tmp_path)["knowledge"]["retrieval"]["secrets"] == ["A_KEY", "B_KEY"]


def test_config_check_names_what_is_wrong_with_a_module_retriever(tmp_path: Path) -> None:
    (tmp_path / "rag.ts").write_text("export default {};\n", encoding="utf-8")
    cases = [
        ({"type": "custom", "module": "./missing.ts"}, "knowledge.retrieval.module: './missing.ts' is not there"),
        ({"type": "custom", "module": "./rag.py"}, "knowledge.retrieval.module: './rag.py' is not a TypeScript or "
                                                  "JavaScript file"),
        ({"type": "custom", "module": "./rag.ts", "secrets": ["RETELL_API_KEY"]},
         "knowledge.retrieval.secrets.0: must be a secret's name in capitals"),
        ({"type": "custom", "module": "./rag.ts", "secrets": ["HELPPUFF_LOCAL_CLOUD_TOKEN"]},
         "knowledge.retrieval.secrets.0: must be a secret's name in capitals"),
    ]
    for retrieval, problem in cases:
        path = tmp_path / "helppuff.json"
        path.write_text(json.dumps({"knowledge": {"retrieval": retrieval}}), encoding="utf-8")
        done = run_helppuff(tmp_path, "config", "check", str(path))
        assert done.returncode == 1, (retrieval, done.stdout)
        assert problem in done.stdout, done.stdout
    path.write_text(json.dumps({"knowledge": {"retrieval": {"type": "custom", "module": "rag.ts"}}}), encoding="utf-8")
    assert run_helppuff(tmp_path, "config", "check", str(path)).returncode == 0


def test_the_entry_registers_each_named_module_by_its_stored_path(tmp_path: Path) -> None:
    module = tmp_path / "acme" / "rag.ts"
    module.parent.mkdir()
    module.write_text("export default { id: 'x', search: () => [] };\n", encoding="utf-8")
    rows = [
        ("acme", json.dumps({"knowledge": {"retrieval": {"type": "custom", "module": str(module)}}})),
        ("acme-2", json.dumps({"knowledge": {"retrieval": {"type": "custom", "module": str(module)}}})),
        ("gone", json.dumps({"knowledge": {"retrieval": {"type": "custom", "module": str(tmp_path / "gone.ts")}}})),
        ("http", json.dumps({"knowledge": {"retrieval": {"type": "http", "url": "https://x.y/q", "tokenEnv": "T"}}})),
        ("plain", None), ("broken", "{not json"),
    ]
    assert custom_modules(rows) == {str(module): ["acme", "acme-2"], str(tmp_path / "gone.ts"): ["gone"]}
    entry = write_entry(tmp_path / "kb", rows, WORKER_DIR)
    assert entry.path == tmp_path / "kb" / "worker-entry.ts"
    assert entry.modules == {str(module): ["acme", "acme-2"]} and entry.missing == {str(tmp_path / "gone.ts"): ["gone"]}
    text = entry.path.read_text(encoding="utf-8")
    assert text == entry_source([str(module)], WORKER_DIR)
    assert f'import worker from "{WORKER_DIR / "src" / "index.ts"}";' in text
    assert f'import retriever0 from "{module}";\nregisterRetriever("{module}", retriever0);\nexport default worker;' in text
    # None named: no entry (index.ts is the entry), and an earlier one is removed.
    assert write_entry(tmp_path / "kb", rows[3:], WORKER_DIR).path is None
    assert not (tmp_path / "kb" / "worker-entry.ts").exists()


def test_a_dry_run_deploy_bundles_the_sites_module_into_the_worker(tmp_path: Path) -> None:
    if not (WORKER_DIR / "node_modules" / "wrangler").exists():
        pytest.skip("the Worker's toolchain is not installed: run `bash scripts/setup-worker.sh`")
    module = tmp_path / "site" / "rag.ts"
    assert run_helppuff(tmp_path, "settings", "set", "-", "--site", "shop", stdin="{}").returncode == 0
    assert run_helppuff(tmp_path, "scaffold", "rag", "--use", "--site", "shop", "--out", str(module),
                        "--config", str(tmp_path / "site" / "helppuff.json"),
                        "--search-url", "https://marker-5d1c.example.com/query").returncode == 0
    out = tmp_path / "out"
    dry = run_helppuff(tmp_path, "deploy", "--site", "shop", "--dry-run", "--outdir", str(out), "--json")
    assert dry.returncode == 0, dry.stderr
    report = json.loads(dry.stdout)
    assert report["modules"] == [str(module)]
    config = json.loads((out / "config" / "wrangler.deploy.json").read_text(encoding="utf-8"))
    assert config["main"] == str(out / "config" / "worker-entry.ts")
    bundle = "".join(Path(p).read_text(encoding="utf-8") for p in report["bundle"] if p.endswith(".js"))
    assert "marker-5d1c.example.com" in bundle and "/v1/sites/" in bundle


class FakeWrangler:
    """wrangler, faked: a `node` script that records its arguments, stdin and Cloudflare variables to a
    JSON file, and fails (exit 1, wrangler's ERROR line) when told to."""

    def __init__(self, folder: Path, fail: bool = False) -> None:
        self.log = folder / "wrangler-calls.json"
        self.node = folder / "fake-node"
        script = (
            "import json, os, sys\n"
            f"log = {str(self.log)!r}\n"
            "calls = json.load(open(log)) if os.path.exists(log) else []\n"
            "calls.append({'argv': sys.argv[1:], 'stdin': sys.stdin.read(),\n"
            "              'token': os.environ.get('CLOUDFLARE_API_TOKEN'), 'account': os.environ.get('CLOUDFLARE_ACCOUNT_ID')})\n"
            "json.dump(calls, open(log, 'w'))\n"
            + ("print('X [ERROR] Authentication error [code: 10000]'); sys.exit(1)\n" if fail else
               "print('Success! Uploaded secret')\n")
        )
        self.node.write_text(f"#!{sys.executable}\n{script}", encoding="utf-8")
        self.node.chmod(0o755)

    @property
    def calls(self) -> list[dict[str, Any]]:
        return json.loads(self.log.read_text(encoding="utf-8")) if self.log.exists() else []


@pytest.mark.parametrize("fail", [False, True])
def test_secret_set_on_cloudflare_puts_it_with_wrangler_the_value_on_stdin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fail: bool) -> None:
    from helppuff_crawl.cli import main
    from helppuff_crawl.cli.crawl import project_settings
    from helppuff_crawl.cloudflare.state import DeployState

    fake = FakeWrangler(tmp_path, fail=fail)
    wrangler = tmp_path / "wrangler.js"
    monkeypatch.setattr("helppuff_crawl.deploy.worker.find_toolchain", lambda worker_dir: Toolchain(fake.node, wrangler))
    settings = {**project_settings().copy_to_dict(), "HELPPUFF_DATA_DIR": str(tmp_path / "kb"),
                "HELPPUFF_CLOUDFLARE_API_TOKEN": "cf-token", "HELPPUFF_CLOUDFLARE_ACCOUNT_ID": "acc-1",
                "HELPPUFF_CLOUDFLARE_API_BASE": "https://api.cloudflare.invalid/client/v4"}
    monkeypatch.setattr("helppuff_crawl.cli.crawl.project_settings", lambda overrides=None: settings)
    config = tmp_path / "kb" / "wrangler.deploy.json"
    DeployState(tmp_path / "kb").record_worker("acc-1", {"url": "https://helppuff.acme.workers.dev",
                                                         "config": str(config)})
    value = "s3cret-value-91"
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{value}\n"))
    status = main(["secret", "set", "MY_SEARCH_KEY"])
    out, err = capsys.readouterr()
    assert fake.calls == [{"argv": [str(wrangler), "secret", "put", "MY_SEARCH_KEY", "--config", str(config)],
                           "stdin": value, "token": "cf-token", "account": "acc-1"}]
    assert value not in out + err
    if not fail:
        assert status == 0 and "put on the deployed Worker" in out
        return
    assert status == 1 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("helppuff secret: wrangler secret failed (exit 1): ") and "Authentication error" in err


def test_serve_runs_the_entry_and_passes_the_named_secrets_from_its_environment() -> None:
    from helppuff_crawl.devloop.server import DevOptions, wrangler_command
    from helppuff_crawl.devloop.worker_secrets import named_secrets

    tool = Toolchain(Path("/n/node"), Path("/n/wrangler.js"))
    options = DevOptions(data_dir=Path("/tmp/x/kb"), port=8799)
    plain = wrangler_command(tool, options, Path("/tmp/x/e.env"), Path("/tmp/x/state"))
    bundled = wrangler_command(tool, options, Path("/tmp/x/e.env"), Path("/tmp/x/state"), Path("/tmp/x/kb/worker-entry.ts"))
    assert bundled == [*plain[:3], "/tmp/x/kb/worker-entry.ts", *plain[3:]]
    assert plain[3:5] == ["--config", str(WORKER_DIR / "wrangler.jsonc")]
    rows = [
        ("a", json.dumps({"knowledge": {"retrieval": {"type": "custom", "module": "/m.ts", "secrets": ["MY_KEY", "UNSET"]}}})),
        ("b", json.dumps({"knowledge": {"retrieval": {"type": "http", "url": "https://x.y/q", "tokenEnv": "TOKEN"}}})),
        ("c", json.dumps({"knowledge": {"retrieval": {"type": "custom", "module": "/m.ts", "secrets": ["HELPPUFF_X"]}}})),
        ("d", "{not json"),
    ]
    environ = {"MY_KEY": "k", "TOKEN": "t", "HELPPUFF_X": "no", "OTHER": "o"}
    assert named_secrets(rows, environ) == {"MY_KEY": "k", "TOKEN": "t"}
