"""Scrapy settings for HelpPuff Crawl, and every HELPPUFF_* setting with its default (one comment each).

Each setting is declared here once; components read it without a default of their own (a test builds
its crawler from these, tests/crawlers.py). Only this module reads os.environ. Runs override with
`-s NAME=VALUE`; tests with `get_crawler(settings_dict=...)`. Spider arguments say *what* to crawl;
these say *how*; the spider turns its arguments into the settings of the "what" below.
"""

from __future__ import annotations

import os

from helppuff_crawl import __version__

BOT_NAME = "helppuff_crawl"
SPIDER_MODULES = ["helppuff_crawl.spiders"]
NEWSPIDER_MODULE = "helppuff_crawl.spiders"

# --- Identity and politeness ---------------------------------------------------------------
# Our product token is "helppuff-crawler"; robots.txt groups for it (or *) apply.
USER_AGENT = f"helppuff-crawler/{__version__} (+https://helppuff.com/crawler)"
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 8
CONCURRENT_REQUESTS_PER_DOMAIN = 4  # a small business site is one host: stay gentle
DOWNLOAD_DELAY = 0
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.5
AUTOTHROTTLE_MAX_DELAY = 10.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 2.0
DOWNLOAD_TIMEOUT = 15  # seconds per request
DOWNLOAD_MAXSIZE = 3 * 1024 * 1024  # at most 3 MB read per response
DOWNLOAD_WARNSIZE = 0
REDIRECT_MAX_TIMES = 10
RETRY_ENABLED = True
RETRY_TIMES = 2  # unreachable, timeouts and 5xx are retried twice within the crawl
RETRY_HTTP_CODES = [500, 502, 503, 504, 520, 521, 522, 523, 524, 408]
COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
REQUEST_FINGERPRINTER_IMPLEMENTATION = "2.7"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"
# What one response yields (a page, a document, its links) goes through the pipelines this many at
# a time. Scrapy's default, 100, starts 100 tasks for every response, however little it yields:
# 1.1-1.5 ms of CPU a response, against 0.1-0.3 ms for 8 (a page yields one item).
CONCURRENT_ITEMS = 8

DOWNLOADER_MIDDLEWARES = {
    # Before everything else: a redirect to another site or a non-public address is never fetched.
    "helppuff_crawl.middlewares.guard.SiteGuardMiddleware": 40,
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "helppuff_crawl.middlewares.robotstxt.HelppuffRobotsTxtMiddleware": 100,
    "helppuff_crawl.middlewares.render.RenderBudgetMiddleware": 550,
}

# JS rendering: scrapy-playwright handles only requests with meta playwright=True; every other
# request keeps Scrapy's own HTTP handler. Chromium comes from Debian (/usr/bin/chromium), and its
# connections go through the guard of handlers/browser.py (the site, public addresses only).
DOWNLOAD_HANDLERS = {
    "http": "helppuff_crawl.handlers.browser.GuardedPlaywrightHandler",
    "https": "helppuff_crawl.handlers.browser.GuardedPlaywrightHandler",
}
# The Chromium that renders pages (env HELPPUFF_CHROMIUM): Debian's.
HELPPUFF_CHROMIUM = os.environ.get("HELPPUFF_CHROMIUM", "/usr/bin/chromium")
PLAYWRIGHT_BROWSER_TYPE = "chromium"
PLAYWRIGHT_LAUNCH_OPTIONS = {
    "executable_path": HELPPUFF_CHROMIUM,
    "headless": True,
    "args": [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        # WebRTC would send UDP around the proxy that checks every connection's address.
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    ],
}
PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT = 15_000  # ms, the same 15 s as plain fetches
PLAYWRIGHT_MAX_PAGES_PER_CONTEXT = 2

ITEM_PIPELINES = {
    "helppuff_crawl.pipelines.boilerplate.BoilerplatePipeline": 150,
    "helppuff_crawl.pipelines.extract.ExtractMarkdownPipeline": 200,
    "helppuff_crawl.pipelines.hash.HashPipeline": 500,
    "helppuff_crawl.pipelines.chunk.ChunkPipeline": 600,
    "helppuff_crawl.pipelines.embed.EmbedPipeline": 700,
    "helppuff_crawl.pipelines.store.StorePipeline": 900,
}
# The run row in D1, and the knowledge base the pipelines record into.
EXTENSIONS = {
    # The objects the crawl starts with are left out of the garbage collector's passes (extensions/heap.py).
    "helppuff_crawl.extensions.heap.FrozenStartupHeap": -10,
    "helppuff_crawl.extensions.run.CrawlRun": 0,
    # CPU per stage in the stats, only when HELPPUFF_PROFILE_STAGES is on (bench/pipeline.py).
    "helppuff_crawl.extensions.profile.StageProfile": 10,
}

# --- HelpPuff: what to crawl (the spider sets these from its arguments) ----------------------
# The site's name in the knowledge base (argument `site`, else from the start URL's host).
HELPPUFF_SITE = ""
# The site's home page (argument `url`).
HELPPUFF_START_URL = ""
# The pages a targeted crawl fetches, normalised and on the site (argument `only`); []: a full crawl.
HELPPUFF_ONLY: list[str] = []
# Globs that force a tick (argument `include`).
HELPPUFF_INCLUDE: list[str] = []
# Globs that untick (argument `exclude`); None: the default ones (web/categories.DEFAULT_EXCLUDE).
HELPPUFF_EXCLUDE: list[str] | None = None

# --- HelpPuff: where the knowledge base is --------------------------------------------------
# Where the embedded local default keeps its files (D1 as SQLite, vectors).
HELPPUFF_DATA_DIR = os.environ.get("HELPPUFF_DATA_DIR", ".helppuff")
# Cloudflare account: when both are set, the crawl writes to Cloudflare instead of the local cloud.
HELPPUFF_CLOUDFLARE_API_TOKEN = os.environ.get("CLOUDFLARE_API_TOKEN", "")
HELPPUFF_CLOUDFLARE_ACCOUNT_ID = os.environ.get("CLOUDFLARE_ACCOUNT_ID", "")
# Base URL of the Cloudflare API (a local cloud served by `helppuff serve` works too).
HELPPUFF_CLOUDFLARE_API_BASE = os.environ.get("HELPPUFF_CLOUDFLARE_API_BASE", "https://api.cloudflare.com/client/v4")
# The client's pace, REQUESTS/SECONDS: Cloudflare's global API limit is 1,200 requests per 5 minutes
# per user (a 429 past it blocks every call for the window). Paced the same on the local cloud; "" = unpaced.
HELPPUFF_CLOUDFLARE_RATE_LIMIT = os.environ.get("HELPPUFF_CLOUDFLARE_RATE_LIMIT", "1200/300")
# The local cloud's API rate limit, REQUESTS/SECONDS (e.g. "60/20"), answered with 429 as Cloudflare
# answers its own; "" = none.
HELPPUFF_LOCAL_RATE_LIMIT = os.environ.get("HELPPUFF_LOCAL_RATE_LIMIT", "")
# D1 database id (on Cloudflare: the database UUID; locally: the SQLite file's name).
HELPPUFF_D1_DATABASE = os.environ.get("HELPPUFF_D1_DATABASE", "helppuff")
# `helppuff serve`: base URL of an OpenAI-compatible chat server (e.g. http://127.0.0.1:11434/v1) for
# the Worker's chat; "" = extractive answers. Its model name: "" passes the Worker's model id through.
HELPPUFF_LOCAL_CHAT_URL = os.environ.get("HELPPUFF_LOCAL_CHAT_URL", "")
HELPPUFF_LOCAL_CHAT_MODEL = os.environ.get("HELPPUFF_LOCAL_CHAT_MODEL", "")
# `helppuff deploy`: the address the owner's emails (a new lead, a new question: backend.leads.email) come
# from, on a domain onboarded to Cloudflare Email Service; set, the Worker gets the send_email binding EMAIL
# and the variable EMAIL_FROM. "" = no binding (no email is sent; the webhook still is).
HELPPUFF_EMAIL_FROM = os.environ.get("HELPPUFF_EMAIL_FROM", "")
# `helppuff serve`: the Retell account's API key (env RETELL_API_KEY), passed to the Worker as its secret
# RETELL_API_KEY, which verifies the Retell custom function's calls; "" = not passed.
HELPPUFF_RETELL_API_KEY = os.environ.get("RETELL_API_KEY", "")
# `helppuff serve`: the chat providers' keys (env OPENAI_API_KEY, GEMINI_API_KEY, ANTHROPIC_API_KEY), passed to
# the Worker as its secrets of the same names, which backend.type openai, gemini and anthropic generate with;
# and their base URLs (env OPENAI_BASE_URL, GEMINI_BASE_URL, ANTHROPIC_BASE_URL; the Worker's default is the
# real API), e.g. a fake on loopback for tests. "" = not passed.
HELPPUFF_OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
HELPPUFF_OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
HELPPUFF_GEMINI_API_KEY = os.environ.get("GEMINI_API_KEY", "")
HELPPUFF_GEMINI_BASE_URL = os.environ.get("GEMINI_BASE_URL", "")
HELPPUFF_ANTHROPIC_API_KEY = os.environ.get("ANTHROPIC_API_KEY", "")
HELPPUFF_ANTHROPIC_BASE_URL = os.environ.get("ANTHROPIC_BASE_URL", "")

# Vectorize index for the chunks' vectors (one embedding model per index; a namespace per site).
HELPPUFF_VECTORIZE_INDEX = os.environ.get("HELPPUFF_VECTORIZE_INDEX", "helppuff")
# Vectorize applies writes asynchronously: seconds a crawl (and a knowledge command) waits at its end for
# its writes to be visible (the index's processedUpToMutation reaching its last mutation); past it
# they are reported pending.
HELPPUFF_VECTORIZE_WAIT = 60.0
# The local cloud's Vectorize applies each write this many seconds after accepting it, in order, as
# Cloudflare's does within seconds (0: at once; only for tests that need instant visibility).
HELPPUFF_LOCAL_VECTORIZE_DELAY = 1.0
# Embedding model: "" = @cf/baai/bge-m3 on Cloudflare, @local/multilingual-e5-small in the local cloud.
HELPPUFF_EMBED_MODEL = os.environ.get("HELPPUFF_EMBED_MODEL", "")
# Texts per embedding call (batches are filled across pages): 0 = the model's maxBatch in models.json
# (bge-m3 takes 100, the local model 32), else at most that.
HELPPUFF_EMBED_BATCH_SIZE = 0
# Embedding calls in flight at once.
HELPPUFF_EMBED_CONCURRENCY = 2
# Seconds without a new text after which a partial batch is sent (pages wait for their vectors).
HELPPUFF_EMBED_LINGER = 1.0
# Chunk sizes in tokens (characters / 4): at most MAX of text, smaller than MIN merged where allowed.
# Recorded with the site's index: a crawl with other sizes learns every page again.
HELPPUFF_CHUNK_MIN_TOKENS = 150
HELPPUFF_CHUNK_MAX_TOKENS = 800

# --- HelpPuff: the components (each can be turned off) --------------------------------------
# The run row (extensions/run.py): without it no pipeline has a knowledge base to record into.
HELPPUFF_RUN_ENABLED = True
# Learn the site's furniture from a sample of pages and drop it (pipelines/boilerplate.py).
HELPPUFF_BOILERPLATE_ENABLED = True
# Markdown, title, facts of each fetched page (pipelines/extract.py).
HELPPUFF_EXTRACT_ENABLED = True
# Chunks of each learned page (pipelines/chunk.py); off: pages are recorded, passages kept as they were.
HELPPUFF_CHUNK_ENABLED = True
# Embedding of new passages (pipelines/embed.py); off: as with chunking off.
HELPPUFF_EMBED_ENABLED = True
# Pages, passages and the work after the last page (pipelines/store.py).
HELPPUFF_STORE_ENABLED = True
# Page writes are sent together (kb/write_queue.py): at most this many pages per send, or what is
# queued once no page came for HELPPUFF_STORE_LINGER seconds. REST calls per page are the
# production bottleneck (Cloudflare allows 1,200 requests per 5 minutes).
HELPPUFF_STORE_BATCH_PAGES = 20
HELPPUFF_STORE_LINGER = 1.0
# CPU per stage (fetch, extract, chunk, embed, write, other) in the stats (extensions/profile.py);
# off: nothing is timed.
HELPPUFF_PROFILE_STAGES = False
# gc.freeze() at spider_opened, gc.unfreeze() at spider_closed (extensions/heap.py); off: the collector
# walks the process's startup objects in each full pass, as by default.
HELPPUFF_GC_FREEZE = True

# --- HelpPuff: how to crawl -----------------------------------------------------------------

# Discovery: at most this many fetches (robots.txt, home page, sitemaps) before crawling.
HELPPUFF_DISCOVERY_MAX_FETCHES = 50
# Sitemaps: at most this many fetched, and this many page URLs taken from them.
HELPPUFF_SITEMAP_MAX_SITEMAPS = 25
HELPPUFF_SITEMAP_MAX_URLS = 1000
# Pages fetched per run when the spider argument max_pages is not given (hard cap 1000).
HELPPUFF_MAX_PAGES = 300
# Connections to non-public addresses (loopback, private, link-local, ...; web/addresses.py): false =
# refused, true = allowed, or the addresses and networks allowed (e.g. "127.0.0.0/8,::1", which
# `helppuff crawl` sets for a start URL on loopback; the environment variable of the same name, e.g. in
# the crawl container, for sites on a private network). Redirects to another site are never followed.
HELPPUFF_ALLOW_PRIVATE_ADDRESSES: bool | str = os.environ.get("HELPPUFF_ALLOW_PRIVATE_ADDRESSES", "") or False
# Follow same-site links found on fetched pages (not only the home page's) up to max_pages.
HELPPUFF_FOLLOW_LINKS = True
# Script files of the site (same site, robots.txt honoured) read for the pages they open
# (location.href = '...'): at most this many a crawl, 0 for none. The home page's are read during
# discovery, within its fetch budget; another page's only when it has fewer than
# HELPPUFF_SCRIPT_LINKS_FEW_LINKS links to the site. Inline scripts and handlers are always read.
HELPPUFF_SCRIPT_LINKS_MAX_FETCHES = 10
HELPPUFF_SCRIPT_LINKS_FEW_LINKS = 5
# Cap on a robots.txt Crawl-delay / Request-rate we honour, in seconds.
HELPPUFF_ROBOTS_MAX_CRAWL_DELAY = 30.0
# JS rendering: "auto" (thin main content that its scripts can have built), "always" or "never".
HELPPUFF_RENDER_JS = "auto"
# auto: render when the main content (nav, header, footer, banners removed) has fewer characters than this ...
HELPPUFF_RENDER_MIN_TEXT = 300
# ... and at least this many page scripts (inline code, the site's own files; not analytics), or one
# inline script that fetches content into the page, or one script on an app shell (web/pagecheck.py).
HELPPUFF_RENDER_MIN_SCRIPTS = 2
# Browser time budget per run, in seconds; past it, pages that need rendering are skipped.
HELPPUFF_RENDER_BUDGET = 600.0
# Boilerplate: pages read first to learn the site's furniture (blocks on more than half of them).
HELPPUFF_BOILERPLATE_SAMPLE = 5
# A block on more than this share of the sample is furniture.
HELPPUFF_BOILERPLATE_THRESHOLD = 0.5
# Failed pages are worth retrying after these delays (seconds): +15 min, then +2 h.
HELPPUFF_RETRY_DELAYS = [900, 7200]
# A running run whose heartbeat is older than this (seconds) is taken as dead and marked failed.
HELPPUFF_RUN_STALE_AFTER = 600.0
# Seconds between heartbeats of a running run.
HELPPUFF_RUN_HEARTBEAT = 30.0

# --- HelpPuff: the crawl queue (Cloudflare Queues, HTTP pull; the local cloud's on this machine) ---
# The queue of crawl jobs, and the dead-letter queue its consumer sends given-up messages to.
HELPPUFF_QUEUE = os.environ.get("HELPPUFF_QUEUE", "helppuff-crawl")
HELPPUFF_QUEUE_DEAD_LETTER = os.environ.get("HELPPUFF_QUEUE_DEAD_LETTER", "helppuff-crawl-dead")
# A pulled job is this worker's for this many seconds; not acknowledged by then, it is delivered again
# (a job still beating is left to its taker: kb/jobs.py take).
HELPPUFF_QUEUE_VISIBILITY = 600.0
# Times a job is taken again after its crawl failed (each after HELPPUFF_RETRY_DELAYS), before it is
# given up (dead, with its reason, in `helppuff status`); the consumer's max_retries.
HELPPUFF_QUEUE_MAX_RETRIES = 3
# After a crawl, queue its pages that failed for a passing reason as one retry job (+15 min, then +2 h).
HELPPUFF_QUEUE_RETRIES = True
# `helppuff worker`: seconds between pulls while the queue is empty.
HELPPUFF_QUEUE_POLL = 5.0

COMMANDS_MODULE = "helppuff_crawl.commands"
