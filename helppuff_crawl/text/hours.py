"""Opening hours: the weekly table, read from schema.org's notation or from a page's words. Pure: no Scrapy import.

A week is {day: [(opens, closes)]}, days by their English names (`DAYS`), clocks "HH:MM"; a span that
closes before it opens runs past midnight. Its JSON is {"Monday": [["08:00", "17:00"]], ...}
(`week_from_json` reads it back; `hours_table` says whether a value has that shape, every clock up to
"24:00", as worker/src/chat/hours.ts reads it).

One clock reader ("8", "8:30", "08:00:00", "5.30 pm", "noon": hour, minute and half) and one way round
the week ("Sa-Mo" wraps) serve the two notations hours are written in:

- schema.org's openingHours (`read_opening_hours`, for structured_data.py): "Mo-Fr 08:00-17:00",
  "Mo,We 09:00-12:00,13:00-17:00", "Monday-Friday 8am-5:30pm", "24/7". Days go by their first two
  letters; clocks are read as written, one without am or pm on a 24-hour clock, so "Fr 11:00-01:00"
  closes at one at night. `opening_clock` reads an openingHoursSpecification's opens and closes alike.
- a page's own words (`read_hours`, for contact_details.py): opening-hours lines ("Mon–Fri 8am–5pm",
  "Monday to Friday: 8:00 - 17:00", "Sat 9-12", "Mo–Fr 8–18 Uhr", "Montag bis Donnerstag 10–13 und
  15–17:30 Uhr", table rows "| Monday to Friday | 7:00 am | 5:00 pm |"), read as a shop sign is: "8-5"
  is 8am to 5pm, and "8-5pm" gives the opening the closing's half unless that makes it later.
  `page_clocks` lists every clock a text writes (fact_checks.py holds a reader's hours to them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from helppuff_crawl.text.html_text import collapse

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


Week = dict[str, list[tuple[str, str]]]  # day -> [("08:00", "17:00")]; all 7 days or none


def week_from_json(value: Any) -> Week:
    """{day: [[opens, closes]]} (JSON) as a Week; anything else is an empty one."""
    if not isinstance(value, Mapping):
        return {}
    return {str(day): [(str(span[0]), str(span[1])) for span in spans if isinstance(span, list | tuple) and len(span) == 2]
            for day, spans in value.items() if isinstance(spans, list)}


def day_named(name: str) -> str | None:
    """The day `name` is, by its English name in any case ("monday" -> "Monday"); None for anything else."""
    wanted = name.strip().lower()
    return next((day for day in DAYS if day.lower() == wanted), None)


def hours_table(value: Any) -> dict[str, list[list[str]]] | None:
    """`value` in the facts' hours shape, every day named, or None when it is not one (as hours.ts reads it)."""
    if not isinstance(value, Mapping):
        return None
    table: dict[str, list[list[str]]] = {day: [] for day in DAYS}
    spans = 0
    for name, raw in value.items():
        day = day_named(str(name))
        if day is None or not isinstance(raw, list):
            return None
        for span in raw:
            if not (isinstance(span, list | tuple) and len(span) == 2 and all(isinstance(t, str) for t in span)
                    and all(re.fullmatch(r"(?:[01]\d|2[0-3]):[0-5]\d|24:00", t) for t in span)):
                return None
            table[day].append([span[0], span[1]])
            spans += 1
    return table if spans else None


# -- clocks and days, in either notation ---------------------------------------------------------------------

_CLOCK_PARTS = re.compile(r"(\d{1,2})(?:[:.](\d{2}))?(?::\d{2})?\s*(?:([ap])\.?\s?m\.?)?", re.IGNORECASE)


def _clock(text: str) -> tuple[int, int, str] | None:
    """(hour, minute, "a"|"p"|"") for "8", "8:30", "08:00:00", "5.30 pm", "noon"; None when unreadable."""
    word = text.strip().lower()
    if word in ("noon", "midday", "mittag"):
        return 12, 0, ""
    if word == "midnight":
        return 24, 0, ""
    match = _CLOCK_PARTS.fullmatch(word)
    if not match:
        return None
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    if hour > 24 or minute > 59:
        return None
    return hour, minute, (match.group(3) or "").lower()


def _as_24(hour: int, minute: int, half: str) -> str:
    if half == "p" and hour < 12:
        hour += 12
    elif half == "a" and hour == 12:
        hour = 0
    return f"{hour:02d}:{minute:02d}"


def _round_the_week(first: str, last: str) -> list[str]:
    """The days from `first` to `last`, both in, round the week: ("Saturday", "Monday") is Saturday, Sunday, Monday."""
    start = DAYS.index(first)
    return [DAYS[(start + step) % 7] for step in range((DAYS.index(last) - start) % 7 + 1)]


# -- schema.org's openingHours -------------------------------------------------------------------------------

_DAY_PREFIXES = {day[:2].lower(): day for day in DAYS}
_NOTATION_CLOCK = r"\d{1,2}(?:[:.]\d{2})?(?::\d{2})?\s*(?:[ap]\.?m\.?)?"
_NOTATION_RANGE = rf"{_NOTATION_CLOCK}\s*[-–]\s*{_NOTATION_CLOCK}"
_NOTATION = re.compile(
    rf"(?P<days>[A-Za-z]{{2,9}}(?:\s*[-–,]\s*[A-Za-z]{{2,9}})*)\s*:?\s*"
    rf"(?P<times>{_NOTATION_RANGE}(?:\s*,\s*{_NOTATION_RANGE})*)",
    re.IGNORECASE,
)


def read_opening_hours(value: str) -> dict[str, list[tuple[str, str]]] | None:
    """The spans of the days one openingHours text names: "Mo-Fr 08:00-17:00" -> Monday..Friday 08:00-17:00.

    Days it does not name are left out; "24/7" opens every day round the clock; a text that only says
    "closed" names no spans ({}); None when it cannot be read."""
    text = collapse(value)
    if re.fullmatch(r"(?i)24/7|24 hours|open 24 hours", text):
        return {day: [("00:00", "24:00")] for day in DAYS}
    found: dict[str, list[tuple[str, str]]] = {}
    matched = False
    for match in _NOTATION.finditer(text):
        days = _notation_days(match.group("days"))
        spans = [_notation_span(part) for part in re.split(r"\s*,\s*", match.group("times"))]
        if not days or not all(spans):
            continue
        matched = True
        for day in days:
            found.setdefault(day, []).extend(span for span in spans if span)
    if not matched and not re.search(r"(?i)closed", text):
        return None
    return found


def opening_clock(text: str) -> str:
    """A clock as schema.org's notation writes it, "HH:MM": "8:00", "08:00:00", "8am", "5.30 pm" ->
    "08:00", "08:00", "08:00", "17:30"; "" when unreadable."""
    text = text.strip()
    clock = _clock(text) if re.fullmatch(_NOTATION_CLOCK, text, re.IGNORECASE) else None
    return _as_24(*clock) if clock else ""


def _notation_days(spec: str) -> list[str]:
    """ "Mo-Fr" -> Monday..Friday; "Mo,We" -> Monday, Wednesday; "Sa-Mo" wraps round the week."""
    days: list[str] = []
    for part in re.split(r"\s*,\s*", spec.strip()):
        ends = [_DAY_PREFIXES.get(token[:2].lower()) for token in re.split(r"\s*[-–]\s*", part)]
        if not ends or None in ends or len(ends) > 2:
            return []
        days.extend(_round_the_week(ends[0], ends[-1]))
    return days


def _notation_span(text: str) -> tuple[str, str] | None:
    parts = re.split(r"\s*[-–]\s*", text.strip())
    if len(parts) != 2:
        return None
    opens, closes = opening_clock(parts[0]), opening_clock(parts[1])
    return (opens, closes) if opens and closes else None


# -- a page's words ------------------------------------------------------------------------------------------

_DAY_WORDS: dict[str, tuple[str, ...]] = {
    "Monday": ("monday", "mon", "montag"), "Tuesday": ("tuesday", "tues", "tue", "dienstag"),
    "Wednesday": ("wednesday", "wed", "mittwoch"), "Thursday": ("thursday", "thurs", "thur", "thu", "donnerstag"),
    "Friday": ("friday", "fri", "freitag"), "Saturday": ("saturday", "sat", "samstag", "sonnabend"),
    "Sunday": ("sunday", "sun", "sonntag"),
}
_GERMAN_SHORT = {"Mo": "Monday", "Di": "Tuesday", "Mi": "Wednesday", "Do": "Thursday", "Fr": "Friday",
                 "Sa": "Saturday", "So": "Sunday"}  # capitalised only: "do" and "so" are English words
_GROUPS = {"weekdays": DAYS[:5], "weekday": DAYS[:5], "werktags": DAYS[:5], "weekends": DAYS[5:],
           "weekend": DAYS[5:], "daily": DAYS, "everyday": DAYS, "every day": DAYS, "täglich": DAYS,
           "7 days": DAYS, "seven days": DAYS}
_WORD_DAY = {word: day for day, words in _DAY_WORDS.items() for word in words}
_DAY_NAMES = sorted([*_WORD_DAY, *_GROUPS], key=len, reverse=True)
_DAY = (r"(?:(?i:(?<![^\W\d_])(?:" + "|".join(re.escape(w) for w in _DAY_NAMES) + r")\.?)"
        r"|(?<![^\W\d_])(?:" + "|".join(_GERMAN_SHORT) + r")\.?)(?![^\W\d_])")
_DAY_JOIN = r"\s*(?:[-–—/,&+]|(?i:to|through|thru|till|until|bis|and|und))\s*"
_DAYSPEC = rf"{_DAY}(?:{_DAY_JOIN}{_DAY})*"
_CLOCK = r"(?:\d{1,2}(?:[:.]\d{2})?\s*(?i:[ap]\.?\s?m\.?)?|(?i:noon|midday|midnight|mittag))"
_UNIT = r"(?:\s*(?i:uhr|h|hrs)(?![^\W\d_]))?"
_TIME_JOIN = r"\s*(?:[-–—]|(?i:to|till|until|bis))\s*"
_RANGE = rf"{_CLOCK}{_UNIT}{_TIME_JOIN}{_CLOCK}{_UNIT}"
_RANGES_JOIN = r"\s*(?:[,&/·;+]|(?i:and|und))\s*"
_CLOSED = r"(?i:closed|geschlossen)"
_SPEC = re.compile(
    rf"(?P<days>{_DAYSPEC})\s*(?:[:=|]|-(?=\s))?\s*(?i:from\s+|von\s+)?"
    rf"(?:(?P<times>{_RANGE}(?:{_RANGES_JOIN}{_RANGE})*)|(?P<closed>{_CLOSED}))"
)
_CLOSED_FIRST = re.compile(rf"{_CLOSED}\s+(?i:on\s+|am\s+)?(?P<days>{_DAYSPEC})")
_UNTIL = re.compile(rf"(?P<day>{_DAY})\s+(?i:until|till|to|bis)\s+(?P<clock>{_CLOCK}){_UNIT}")
# Open round the clock: "Open 24/7", "open 24 hours"; a bare "24/7 Emergency" is a service, not opening hours.
_ALL_DAY = re.compile(r"(?i)\bopen\s+(?:24/7|24\s+hours|24\s+hours\s+a\s+day,?\s+7\s+days(?:\s+a\s+week)?)(?!\s+emergenc)")


def _days(spec: str) -> list[str]:
    """ "Mon–Fri" -> Monday..Friday; "Mo, Mi" -> Monday, Wednesday; "Sat-Mon" wraps round the week."""
    tokens = re.findall(rf"{_DAY}|{_DAY_JOIN}", spec)
    days: list[str] = []
    pending_range = False
    for token in tokens:
        word = token.strip().rstrip(".")
        if not word or re.fullmatch(_DAY_JOIN, token):
            pending_range = bool(re.fullmatch(r"[-–—]|to|through|thru|till|until|bis", word, re.IGNORECASE))
            continue
        group = _GROUPS.get(word.lower())
        if group:
            days.extend(d for d in group if d not in days)
            pending_range = False
            continue
        day = _GERMAN_SHORT.get(word) or _WORD_DAY.get(word.lower())
        if day is None:
            continue
        if pending_range and days:
            days.extend(d for d in _round_the_week(days[-1], day)[1:] if d not in days)
        elif day not in days:
            days.append(day)
        pending_range = False
    return days


def _span(text: str) -> tuple[str, str] | None:
    """ "8am–5pm" -> ("08:00", "17:00"); "9-12" -> ("09:00", "12:00"); "8-5" -> ("08:00", "17:00")."""
    parts = re.split(_TIME_JOIN, re.sub(r"(?i)\s*(?:uhr|hrs|h)(?![^\W\d_])", "", text).strip(), maxsplit=1)
    if len(parts) != 2:
        return None
    opens, closes = _clock(parts[0]), _clock(parts[1])
    if opens is None or closes is None:
        return None
    if closes[2] and not opens[2]:  # "8-5pm": the opening takes the closing's half unless that makes it later
        same = _as_24(opens[0], opens[1], closes[2])
        opens = (opens[0], opens[1], closes[2] if same < _as_24(*closes) else ("a" if closes[2] == "p" else "p"))
    start, end = _as_24(*opens), _as_24(*closes)
    if not opens[2] and not closes[2] and end <= start and opens[0] < 12 and closes[0] < 12:
        end = _as_24(closes[0] + 12, closes[1], "")  # "8-5" on a shop sign means 8am to 5pm
    if end > "24:00" or start >= "24:00":
        return None
    return start, end


def _table_line(line: str) -> str:
    """A Markdown table row as an hours line: "| Mon to Fri | 7:00 am | 5:00 pm |" -> "Mon to Fri 7:00 am - 5:00 pm".

    A row with times for several places ("| Monday | 8am to 6pm | 8:30am to 5:30pm |") is left out: it
    says nothing of one business's hours alone."""
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    if len(cells) < 2 or not re.fullmatch(_DAYSPEC, cells[0]):
        return ""
    rest = [cell for cell in cells[1:] if cell and not re.fullmatch(r"-+|–", cell)]
    ranges = [cell for cell in rest if re.fullmatch(rf"{_RANGE}(?:{_RANGES_JOIN}{_RANGE})*", cell)]
    clocks = [cell for cell in rest if re.fullmatch(rf"{_CLOCK}{_UNIT}", cell)]
    if len(ranges) == 1 and len(rest) == 1:
        return f"{cells[0]} {ranges[0]}"
    if len(clocks) == 2 and len(rest) == 2:
        return f"{cells[0]} {clocks[0]} - {clocks[1]}"
    if rest and all(re.fullmatch(_CLOSED, cell) for cell in rest):
        return f"{cells[0]} closed"
    return ""


def read_hours(text: str) -> tuple[dict[str, list[list[str]]], list[str]]:
    """The weekly table the text writes, and the lines it was read from ({} and [] when none).

    Every day is in the table (a day the text does not open is closed). A day keeps the first hours
    written for it: a second place's hours further down do not mix in."""
    table: dict[str, list[tuple[str, str]]] = {}
    used: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("|"):
            line = _table_line(line)
        line = line.replace("*", "").replace("\u00a0", " ")
        if not line:
            continue
        found = False
        here: set[str] = set()  # days this line gave hours: only they take its "Thu until 8pm"
        if _ALL_DAY.search(line) and not table:
            for day in DAYS:
                table[day] = [("00:00", "24:00")]
            found = True
        for match in _SPEC.finditer(line):
            if match.group("days").strip() in _GERMAN_SHORT and "uhr" not in match.group(0).lower():
                continue  # "So 10-12 people": a lone German abbreviation counts only with "Uhr"
            days = _days(match.group("days"))
            if match.group("closed"):
                spans: list[tuple[str, str]] = []
            else:
                spans = [span for part in re.split(_RANGES_JOIN + r"(?=\d|noon|midday)",
                                                   match.group("times"), flags=re.IGNORECASE)
                         if (span := _span(part))]
                if not spans:
                    continue
            for day in days:
                if day not in table:
                    table[day] = list(spans)
                    here.add(day)
                    found = True
        for match in _CLOSED_FIRST.finditer(line):
            for day in _days(match.group("days")):
                if day not in table:
                    table[day] = []
                    found = True
        for match in _UNTIL.finditer(line):  # "(Thu until 8pm)": that day closes later
            day_list = _days(match.group("day"))
            clock = _clock(match.group("clock"))
            if day_list and clock and day_list[0] in here and table.get(day_list[0]):
                opens, _ = table[day_list[0]][-1]
                closes = _as_24(clock[0], clock[1], clock[2] or ("p" if clock[0] < 12 else ""))
                if closes > opens:
                    table[day_list[0]][-1] = (opens, closes)
        if found:
            used.append(raw.strip())
    if not any(table.values()):
        return {}, []
    return {day: [list(span) for span in table.get(day, [])] for day in DAYS}, used


def page_clocks(text: str) -> set[str]:
    """Every clock the text writes, as "HH:MM": "5pm", "17:00", "17.00", the ends of "8–18 Uhr" and "9-12"."""
    clean = text.replace("*", "").replace("\u00a0", " ")
    clocks: set[str] = set()
    for match in re.finditer(rf"{_CLOCK}{_UNIT}{_TIME_JOIN}{_CLOCK}{_UNIT}", clean):
        span = _span(match.group(0))
        if span:
            clocks.update(span)
    for match in re.finditer(r"(?<![\d.:])(\d{1,2})(?:[:.](\d{2}))?\s*(?:([ap])\.?\s?m\.?|uhr\b)?(?![\d])", clean,
                             re.IGNORECASE):
        if match.group(2) or match.group(3) or "uhr" in match.group(0).lower():
            clock = _clock(re.sub(r"(?i)\s*uhr", "", match.group(0)))
            if clock:
                clocks.add(_as_24(*clock))
    if re.search(r"(?i)\b(?:noon|midday|mittag)\b", clean):
        clocks.add("12:00")
    if re.search(r"(?i)\bmidnight\b|24/7|24\s+hours", clean):
        clocks.update({"00:00", "24:00"})
    return clocks
