"""The simulator's batch desk: files, batches and what each provider's batch API answers.

A batch is answered line by line through the live route's own machinery
(`server.chat_response`: the same rule-based answers, script rules, faults and
counters), after `delay_seconds`. What a test needs to steer and check, beside
the answers, is here: the first `expire` batches expire with nothing answered
(OpenAI: every line in the error file as `batch_expired`; Anthropic: every
result `expired`), a seeded `fail_rate` of lines fail alone (a partial
failure), and `submitted` counts every request by `custom_id`, so a test can
prove a resumed run submitted nothing twice.

Beside those, `mischief` scripts a provider that misbehaves (POST
/batches/mischief, a list of `{"on", "do", "times"}`), each trick played on the
next matching calls: on `create` a 500 with nothing made, `500_after_create`
(the batch is made, the answer is a 500) or `stall_after_create` (made, the
answer held for STALL_S: a driver can be killed with its create in flight); on
`poll` a 500, `flip` (a batch that ended reads `in_progress` again, with no
results named) or `unknown_status`; on
`results` a 500, or the file served with its first line `cut_line`, `not_json`,
`bad_utf8`, a `json_array`, or followed by a failed `duplicate` of it, or
(Anthropic) a results_url on `other_host` (the same server under the name
`localhost`, so a test sees where the key went: `key_hosts` counts the hosts a
results request carried a key to); on `list` a 500.

The provider routes are `batches.py` (OpenAI's /v1/files and /v1/batches) and
`message_batches.py` (Anthropic's /v1/messages/batches).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

MISCHIEF: dict[str, tuple[str, ...]] = {
    "create": ("500", "500_after_create", "stall_after_create"),
    "poll": ("500", "flip", "unknown_status"),
    "results": (
        "500",
        "cut_line",
        "not_json",
        "bad_utf8",
        "json_array",
        "duplicate",
        "other_host",
    ),
    "list": ("500",),
}
UNKNOWN_STATUS = "paused_by_simulator"  # a status no provider documents
STALL_S = 60.0  # how long a stalled create's answer is held

# One line answered: (HTTP status, the JSON body the live route would have sent).
AnswerLine = Callable[[Mapping[str, str], bytes], Awaitable[tuple[int, dict[str, Any]]]]


@dataclass
class BatchBehaviour:
    """How the desk treats the batches it is handed; changed at run time by POST
    /batches/behaviour."""

    delay_seconds: float = 0.0  # from a batch's creation to the end of its processing
    expire: int = 0  # the first N batches created expire with nothing answered
    fail_rate: float = 0.0  # each line fails alone with this probability (seeded)
    seed: int = 0

    def update(self, fields: Mapping[str, Any]) -> None:
        for name, value in fields.items():
            if name not in asdict(self):
                raise ValueError(f"unknown batch behaviour {name!r}")
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{name} takes a number of at least 0, got {value!r}")
            setattr(self, name, type(getattr(self, name))(value))


@dataclass
class Trick:
    """One scripted misbehaviour: what it is played on, what it does, how many times."""

    on: str
    do: str
    times: int = 1

    @staticmethod
    def of(value: Any) -> Trick:
        if not isinstance(value, dict) or set(value) - {"on", "do", "times"}:
            raise ValueError(f"a trick is {{on, do, times}}, got {value!r}")
        on, do, times = value.get("on"), value.get("do"), value.get("times", 1)
        if on not in MISCHIEF or do not in MISCHIEF[on]:
            known = "; ".join(f"{k}: {', '.join(v)}" for k, v in MISCHIEF.items())
            raise ValueError(f"unknown trick {on!r}/{do!r} (known — {known})")
        if isinstance(times, bool) or not isinstance(times, int) or times < 1:
            raise ValueError(f"times takes a whole number of at least 1, got {times!r}")
        return Trick(on, do, times)


@dataclass
class Answered:
    """One line's end: its body (a chat completion) or why it has none."""

    custom_id: str
    status: int = 0
    body: dict[str, Any] | None = None
    error: str | None = None  # batch_expired | failed (a line failed alone)


@dataclass
class BatchDesk:
    answer_line: AnswerLine
    behaviour: BatchBehaviour = field(default_factory=BatchBehaviour)
    files: dict[str, bytes] = field(default_factory=dict)
    submitted: Counter[str] = field(default_factory=Counter)  # requests by custom_id
    said_failed: Counter[str] = field(default_factory=Counter)  # lines answered failed/expired
    created: int = 0
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    mischief: list[Trick] = field(default_factory=list)
    played: Counter[str] = field(default_factory=Counter)  # "on/do" → times played
    key_hosts: Counter[str] = field(default_factory=Counter)  # results requests with a key

    def __post_init__(self) -> None:
        self._rng = random.Random(self.behaviour.seed)
        self._ids = 0
        self.forgotten = 0  # bumped by reset(forget=True): the routes drop their batches

    def new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}{self._ids:06d}"

    def reset(self, forget: bool = False) -> None:
        """Counters back to zero and no mischief left. Files and batches stay (a resumed
        run still finds them) unless `forget`: then the desk is as new, and the provider
        routes drop theirs (`forgotten` bumps)."""
        self.submitted.clear()
        self.said_failed.clear()
        self.created = 0
        self.mischief.clear()
        self.played.clear()
        self.key_hosts.clear()
        self._rng = random.Random(self.behaviour.seed)
        if forget:
            self.files.clear()
            self.forgotten += 1

    def trick(self, on: str, allowed: tuple[str, ...] | None = None) -> str | None:
        """The next scripted trick for a call `on` (of those `allowed` now), spent."""
        for trick in self.mischief:
            if trick.on == on and trick.times > 0 and (allowed is None or trick.do in allowed):
                trick.times -= 1
                self.played[f"{on}/{trick.do}"] += 1
                return trick.do
        return None

    def stats(self) -> dict[str, Any]:
        return {
            "batches": self.created,
            "requests": sum(self.submitted.values()),
            "submitted": dict(sorted(self.submitted.items())),
            "twice": sorted(cid for cid, n in self.submitted.items() if n > 1),
            "said_failed": dict(sorted(self.said_failed.items())),
            "behaviour": asdict(self.behaviour),
            "mischief": [asdict(t) for t in self.mischief if t.times > 0],
            "played": dict(sorted(self.played.items())),
            "key_hosts": dict(sorted(self.key_hosts.items())),
        }

    def accept(self, custom_ids: list[str]) -> bool:
        """Count a new batch's requests; True when this batch is to expire."""
        self.created += 1
        self.submitted.update(custom_ids)
        return self.created <= self.behaviour.expire

    def start(
        self,
        lines: list[tuple[str, bytes]],
        headers: Mapping[str, str],
        expire: bool,
        done: Callable[[list[Answered], bool], None],
    ) -> None:
        """Answer `lines` (custom_id, chat request body) after the delay, then `done`."""
        # Decided now, in creation order: the seeded failures do not depend on timing.
        failing = [self._rng.random() < self.behaviour.fail_rate for _ in lines]
        delay = self.behaviour.delay_seconds
        kept = dict(headers)

        async def work() -> None:
            await asyncio.sleep(delay)
            self.said_failed.update(
                cid for (cid, _), fail in zip(lines, failing, strict=True) if expire or fail
            )
            if expire:
                done([Answered(cid, error="batch_expired") for cid, _ in lines], True)
                return
            pairs = zip(lines, failing, strict=True)
            answered = await asyncio.gather(
                *(self._one(cid, raw, kept, fail) for (cid, raw), fail in pairs)
            )
            done(list(answered), False)

        task = asyncio.ensure_future(work())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _one(
        self, custom_id: str, raw: bytes, headers: Mapping[str, str], fail: bool
    ) -> Answered:
        if fail:
            return Answered(custom_id, status=500, error="failed")
        status, body = await self.answer_line(headers, raw)
        return Answered(custom_id, status=status, body=body)


def mangled(data: bytes, trick: str, failed_copy: Callable[[dict[str, Any]], Any]) -> bytes:
    """A results file with its first line damaged as `trick` says (or, `duplicate`,
    followed by a failed copy of itself: a custom_id repeated, its success first)."""
    lines = data.split(b"\n")
    if not lines or not lines[0]:
        return data
    first = lines[0]
    if trick == "cut_line":
        lines[0] = first[: max(len(first) // 2, 1)]
    elif trick == "not_json":
        lines[0] = b"<html>502 Bad Gateway</html>"
    elif trick == "bad_utf8":
        lines[0] = first[:-2] + b"\xff\xfe" + first[-2:]
    elif trick == "json_array":
        lines[0] = b"[" + first + b"]"
    elif trick == "duplicate":
        copy = json.dumps(failed_copy(json.loads(first))).encode("utf-8")
        lines.insert(1, copy)
    return b"\n".join(lines)


def now() -> int:
    return int(time.time())


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
