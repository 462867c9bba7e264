"""The site spider (site.py) and its parts: its arguments and config (arguments.py), the order its
pages go out in (canonical.py), the script files it reads for links (scriptlinks.py); and `stat_slug`,
the last part of a stats key made from a reason, which they share."""


def stat_slug(reason: str) -> str:
    """A short stats key from a reason: its first words before any ':' or '(', as_snake_case."""
    head = reason.split(":", 1)[0].split("(", 1)[0]
    words = [w for w in "".join(c if c.isalnum() else " " for c in head.lower()).split()][:4]
    return "_".join(words) or "other"
