"""`helppuff secret set NAME`: a Worker secret, such as a custom retriever's token, read from stdin.

    printf %s "$SEARCH_TOKEN" | helppuff secret set SEARCH_TOKEN

On Cloudflare (CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID set) the value goes to the deployed Worker
with `wrangler secret put NAME` (helppuff_crawl/deploy/worker.py), using the config `helppuff deploy`
recorded in the state file; run `helppuff deploy` first. On the local cloud it is kept for `helppuff
serve` in `<data dir>/worker-secrets.env` (readable by this user only), which serve writes into the
Worker's dev env file when it starts (helppuff_crawl/devloop/server.py; a variable of the same name
in serve's environment wins), so while a serve runs the line says to restart it. The value is never
printed, and never stored in the site's settings.

The value is stdin's text without its final line break; it must be one non-empty line. Exit status: 0
stored, 1 when wrangler failed, 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys

from helppuff_crawl.cli import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("secret", help="set a Worker secret (read from stdin)")
    sub = parser.add_subparsers(dest="secret_command", required=True)
    setter = sub.add_parser("set", help="store the secret NAME, its value read from stdin")
    setter.add_argument("name", help="the secret's name, e.g. SEARCH_TOKEN")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from helppuff_crawl.cli.crawl import project_settings
    from helppuff_crawl.deploy.worker import WorkerDeployError, put_secret
    from helppuff_crawl.kb.database import BackendConfig
    from helppuff_crawl.deploy.toolchain import DevServerError
    from helppuff_crawl.devloop.worker_secrets import check_secret, store_local_secret
    from helppuff_crawl.devloop.serve_secrets import running_serve

    value = sys.stdin.read().removesuffix("\n").removesuffix("\r")
    try:
        check_secret(args.name, value)
    except ValueError as exc:
        raise UsageError(f"{exc} (give the value on stdin)") from None
    backend = BackendConfig.from_settings(project_settings())
    if not backend.remote:
        path = store_local_secret(backend.data_dir, args.name, value)
        serve = running_serve(backend.data_dir)
        if serve is None:
            print(f"{args.name}: stored in {path} for `helppuff serve`, which passes it when it starts")
            return 0
        what = "the new value" if serve.secrets and args.name in serve.secrets else args.name
        print(f"{args.name}: stored in {path} for `helppuff serve`; it is running ({serve.url}) and passes only "
              f"the secrets it found when it started: restart it to pass {what}")
        return 0
    config = (backend.state.account(backend.account).get("worker") or {}).get("config")
    if not config:
        raise UsageError(f"no Worker deployed for account {backend.account_id} yet: run `helppuff deploy` first")
    try:
        put_secret(config, backend.api_token, backend.account_id, args.name, value)
    except (WorkerDeployError, DevServerError) as exc:
        print(f"helppuff secret: {exc}", file=sys.stderr)
        return 1
    print(f"{args.name}: put on the deployed Worker (wrangler secret put)")
    return 0
