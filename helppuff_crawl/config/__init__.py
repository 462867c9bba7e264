"""What the project reads from helppuff_crawl/schema/: a site's helppuff.json (`helppuff_json`) and the
contract the crawler shares with the Worker (`contract`)."""
