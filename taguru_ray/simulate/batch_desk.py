"""The simulator's batch desk: files, batches and what each provider's batch API answers.

A batch is answered line by line through the live route's own machinery
(`server.chat_response`: the same rule-based answers, script rules, faults and
counters), after `delay_seconds`. What a test needs to steer and check, beside
the answers, is here: the first `expire` batches expire with nothing answered
(OpenAI: every line in the error file as `batch_expired`; Anthropic: every
result `expired`), a seeded `fail_rate` of lines fail alone (a partial
failure), and `submitted` counts every request by `custom_id`, so a test can
prove a resumed run submitted nothing twice.

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
    created: int = 0
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.behaviour.seed)
        self._ids = 0

    def new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}{self._ids:06d}"

    def reset(self) -> None:
        """Counters back to zero (files and batches stay: a resumed run still finds them)."""
        self.submitted.clear()
        self.created = 0
        self._rng = random.Random(self.behaviour.seed)

    def stats(self) -> dict[str, Any]:
        return {
            "batches": self.created,
            "requests": sum(self.submitted.values()),
            "submitted": dict(sorted(self.submitted.items())),
            "twice": sorted(cid for cid, n in self.submitted.items() if n > 1),
            "behaviour": asdict(self.behaviour),
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


def now() -> int:
    return int(time.time())


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
