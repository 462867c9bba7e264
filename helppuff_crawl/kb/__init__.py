"""The knowledge base: what the crawler and the owner's commands read and write in D1 and Vectorize.

One module a room, each a few functions over a `KnowledgeBase` (database.py: the D1 database and the
client that reaches it, on Cloudflare or in the local cloud):

    runs.py           crawl runs: started, beaten, finished, and reaped when their process is gone
    pages.py          one row per page of a site, with its status and kept Markdown
    writer.py         chunks and their vectors, written so that a crash never leaves half a page
    site_index.py     the index checked and the site claimed before a write; reconcile after a killed crawl
    vector_mutations.py  Vectorize's writes a writer made and has not seen applied, and the wait for them
    crawl_start.py    a crawl's start: the knowledge base made ready and read once, one frozen value
    learn.py          Markdown sections become passages: chunk, reuse, embed, write
    after_crawl.py    what a crawl does after its last page
    selfcheck.py      the site's own FAQ questions asked of the knowledge base after each crawl
    crawl_facts.py    the facts a crawl finds, page by page, merged and stored at its end
    facts_table.py    the business facts in D1 (the crawl's and the owner's) and the facts passage
    facts_detect.py   the facts the contact, home and location pages' own words give
    answers.py        the owner's own answers     gaps.py   questions no passage answered
    files.py          documents the owner uploads
    leads.py          callback requests           usage.py  Workers AI use per day, in neurons
    site_settings.py  the helppuff.json the Worker reads
    schedule.py       which sites are due for a crawl
    status.py         what `helppuff knowledge status` reports
    migrations.py     worker/migrations applied to a D1 database

SQL lives here and in the local cloud (helppuff_crawl/local/), nowhere else.
"""
