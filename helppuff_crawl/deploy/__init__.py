"""Going live: `helppuff deploy` creates or finds a site's Cloudflare resources and the Worker.

`state.py` is the state file that keeps what was created (the D1 database's UUID above all), read by
every command; `resources.py` is the data side (D1, migrations, Vectorize); `worker.py` the Worker.
"""
