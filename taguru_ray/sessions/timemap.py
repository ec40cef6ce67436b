"""L10's arithmetic: a relative ISO-8601 offset and a turn's own timestamp → an interval.

The model only maps a turn's ``time_text`` ("last week", "昨日") to an offset such as
``-P1W``; code does the calendar. The interval starts at the turn's time plus the offset
and lasts one unit of the offset's smallest component (``-P1W`` → the week before the
turn, ``-P2D`` → the day two days before it), so it says no more than the text did.
Months and years move on the calendar (the day clamped to the month's end). Pure.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_OFFSET = re.compile(
    r"^(?P<sign>[+-])?P(?:(?P<Y>\d{1,4})Y)?(?:(?P<M>\d{1,4})M)?(?:(?P<W>\d{1,4})W)?"
    r"(?:(?P<D>\d{1,5})D)?(?:T(?:(?P<h>\d{1,6})H)?(?:(?P<m>\d{1,6})M)?(?:(?P<s>\d{1,7})S)?)?$"
)
_UNITS = ("Y", "M", "W", "D", "h", "m", "s")  # largest first


@dataclass(frozen=True)
class Offset:
    sign: int  # +1 or -1
    parts: tuple[tuple[str, int], ...]  # (unit, amount), largest unit first

    @property
    def smallest(self) -> str:
        return self.parts[-1][0]


def parse_offset(text: str) -> Offset | None:
    """The offset ``text`` spells, or None when it is no ISO-8601 duration (``P``, ``PT``
    and ``P1DT`` say nothing, and are refused)."""
    match = _OFFSET.match(text.strip())
    if match is None or text.strip().endswith("T"):
        return None
    parts = tuple((unit, int(match.group(unit))) for unit in _UNITS if match.group(unit))
    if not parts:
        return None
    return Offset(-1 if match.group("sign") == "-" else 1, parts)


def interval(ts_ms: int, offset: Offset) -> tuple[datetime, datetime]:
    """[start, end) of what the offset names, measured from the turn's time."""
    at = datetime.fromtimestamp(ts_ms / 1000, UTC).replace(microsecond=0)
    start = _shift(at, offset.parts, offset.sign)
    return start, _shift(start, ((offset.smallest, 1),), 1)


def iso_interval(ts_ms: int, offset: Offset) -> str:
    """The interval as ISO 8601 ``start/end`` in UTC, seconds resolution."""
    start, end = interval(ts_ms, offset)
    return f"{start:%Y-%m-%dT%H:%M:%SZ}/{end:%Y-%m-%dT%H:%M:%SZ}"


def _shift(at: datetime, parts: tuple[tuple[str, int], ...], sign: int) -> datetime:
    months = sum(n * (12 if unit == "Y" else 1) for unit, n in parts if unit in "YM")
    if months:
        at = _add_months(at, sign * months)
    seconds = {"W": 7 * 86400, "D": 86400, "h": 3600, "m": 60, "s": 1}
    total = sum(n * seconds[unit] for unit, n in parts if unit in seconds)
    return at + timedelta(seconds=sign * total)


def _add_months(at: datetime, months: int) -> datetime:
    index = at.year * 12 + at.month - 1 + months
    year, month = divmod(index, 12)
    year = min(max(year, 1), 9999)
    day = min(at.day, calendar.monthrange(year, month + 1)[1])
    return at.replace(year=year, month=month + 1, day=day)
