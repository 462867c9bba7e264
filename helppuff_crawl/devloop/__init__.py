"""The Worker's dev loop on this machine: `helppuff serve` (server.py), the toolchain it shares with
`helppuff deploy` (deploy/toolchain.py), the Worker's local secrets (worker_secrets.py, serve_secrets.py)."""
