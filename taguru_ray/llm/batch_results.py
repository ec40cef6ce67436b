"""A batch's results file read line by line: one verdict per custom_id (issue 49, ADR 0084).

Pure: bytes in, values out. The wire streams the file through `ResultsReader.feed`
a line at a time, so a 200 MB output never sits in memory whole, and each line
stands alone — one bad line costs that line, never the batch:

- a line that is cut short, not JSON, not valid UTF-8 or not an object names no
  answer; its custom_id, when the bytes still show one, becomes `Unread` (no
  verdict from the provider: its request is not handed over again);
- a custom_id repeated keeps its first success: a later line, failed or not,
  never overrides an answer already read (a failure is replaced by a success);
- a line the provider marked failed (errored, expired, cancelled) is a
  `LineFailure`: the provider said so, and only then may its request be paid
  for again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.completion import Completion


@dataclass(frozen=True)
class LineFailure:
    """The provider said this request has no answer: it errored alone, or its batch ended
    (expired, failed, cancelled) before answering it. Only this may be paid for again."""

    why: str
    expired: bool = False


@dataclass(frozen=True)
class Unread:
    """No verdict could be read for this request (its line is damaged, or absent from a
    batch that completed): it may have been answered and paid for, so it is never handed
    over again; its record stays in --out for a rerun to read again."""

    why: str


LineResult = Completion | LineFailure | Unread
LineOf = Callable[[Mapping[str, Any]], Completion | LineFailure]

# A custom_id as the provider echoes it near a line's start: enough to name a cut line.
_CUSTOM_ID = re.compile(rb'"custom_id"\s*:\s*"([A-Za-z0-9_-]{1,64})"')


@dataclass
class ResultsReader:
    line_of: LineOf  # one parsed object → its verdict (the API's shape)
    found: dict[str, LineResult] = field(default_factory=dict)
    bad_lines: int = 0
    first_bad: str | None = None
    repeated: int = 0

    def feed(self, raw: bytes) -> None:
        """One line of the file (without its newline)."""
        if not raw.strip():
            return
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self._bad(raw, "a line is not valid UTF-8")
            return
        try:
            value = json.loads(text)
        except ValueError:
            self._bad(raw, "a line is not JSON (cut short?)")
            return
        if not isinstance(value, dict):
            self._bad(raw, f"a line is a JSON {type(value).__name__}, not an object")
            return
        cid = value.get("custom_id")
        if not isinstance(cid, str) or not cid:
            self._bad(raw, "a line names no custom_id")
            return
        try:
            verdict: LineResult = self.line_of(value)
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            verdict = Unread(f"its line does not have the API's shape ({type(error).__name__})")
            self._count_bad(verdict.why)
        self._keep(cid, verdict)

    def _keep(self, cid: str, verdict: LineResult) -> None:
        before = self.found.get(cid)
        if before is not None:
            self.repeated += 1
            if _rank(verdict) <= _rank(before):
                return  # a success stands; a provider's verdict beats an unread line
        self.found[cid] = verdict

    def _bad(self, raw: bytes, why: str) -> None:
        self._count_bad(why)
        named = _CUSTOM_ID.search(raw)
        if named is not None:
            self._keep(named.group(1).decode("ascii"), Unread(f"its answer line: {why}"))

    def _count_bad(self, why: str) -> None:
        self.bad_lines += 1
        if self.first_bad is None:
            self.first_bad = why


def _rank(verdict: LineResult) -> int:
    return 2 if isinstance(verdict, Completion) else 1 if isinstance(verdict, LineFailure) else 0


def split_lines(pending: bytearray, chunk: bytes, feed: Callable[[bytes], None]) -> None:
    """`chunk` appended to `pending`; every complete line in it fed and removed."""
    pending += chunk
    start = 0
    while (end := pending.find(b"\n", start)) >= 0:
        feed(bytes(pending[start:end]))
        start = end + 1
    del pending[:start]
