"""A segment's recorded completions, read from its attempts log (taguru ADR 0031).

A request is matched by the exact conversation it would send — every turn's
role and content, the system turn by its hash — plus its requested output
cap, never by piece id or attempt number. The book also keeps each piece's
recorded system prompt, so a replay pins it piece by piece, and the last
`settings` record, to say how this run's settings differ.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.records import Record
from taguru_ray.contract.records.attempts import (
    AttemptRecord,
    SegmentAttempts,
    SettingsRecord,
    SystemRecord,
)
from taguru_ray.contract.records.typed import Stage, State

Key = tuple[tuple[tuple[str, str], ...], int | None]
LIVE_STATES = {State.TIMEOUT, State.TRANSPORT}  # no answer arrived: nothing to serve
# The stages sent the extraction system prompt (an overview ask has its own, never pinned).
PINNED_STAGES = (Stage.ITEM, Stage.CROSS_CHUNK, Stage.GLEANING)


def conversation_key(messages: list[dict[str, Any]], max_tokens: int | None) -> Key:
    """The match key: (role, content) per turn — a system turn by its sha256 — and the cap."""
    turns = []
    for message in messages:
        if message.get("role") == "system":
            digest = (
                message.get("system_sha256")
                or hashlib.sha256(str(message.get("content", "")).encode("utf-8")).hexdigest()
            )
            turns.append(("system", str(digest)))
        else:
            turns.append((str(message.get("role")), str(message.get("content"))))
    return tuple(turns), max_tokens


def _system_digest(messages: list[Any]) -> str | None:
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "system":
            digest = message.get("system_sha256")
            return digest if isinstance(digest, str) else None
    return None


@dataclass
class ReplayBook:
    """One segment's recorded completions, read from its attempts log."""

    answers: dict[Key, AttemptRecord] = field(default_factory=dict)
    systems: dict[str, str] = field(default_factory=dict)  # sha256 -> content
    system_runs: dict[str, str] = field(default_factory=dict)  # sha256 -> run_id recorded in
    # piece id -> the system prompt (sha256) its latest recorded extraction attempt was sent
    piece_systems: dict[str, str] = field(default_factory=dict)
    settings: SettingsRecord | None = None  # the last settings record
    unreadable_lines: int = 0

    @staticmethod
    def read(text: str) -> ReplayBook:
        book = ReplayBook()
        run_id = ""
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                book.unreadable_lines += 1  # a torn last line of a killed run
                continue
            if not isinstance(record, dict):
                book.unreadable_lines += 1
                continue
            if segment := SegmentAttempts.read(record):
                run_id = segment.run_id
            elif settings := SettingsRecord.read(record):
                book.settings = settings
            elif system := SystemRecord.read(record):
                book.systems.setdefault(system.sha256, system.content)
                book.system_runs.setdefault(system.sha256, run_id)
            elif attempt := AttemptRecord.read(record):
                book.add(attempt)
        return book

    def add(self, attempt: AttemptRecord) -> None:
        if attempt.state not in LIVE_STATES:
            key = conversation_key(attempt.messages, attempt.requested_max_tokens)
            self.answers[key] = attempt  # the latest recording of a conversation wins
        if attempt.stage in PINNED_STAGES:
            digest = _system_digest(attempt.messages)
            if digest is not None:
                self.piece_systems[attempt.piece_id] = digest

    def piece_system(self, piece_id: str) -> tuple[str, str] | None:
        """(content, run_id) of the system prompt the piece was recorded under."""
        digest = self.piece_systems.get(piece_id)
        if digest is None or digest not in self.systems:
            return None
        return self.systems[digest], self.system_runs.get(digest, "")

    def pinned_system(self) -> tuple[str, str] | None:
        """(content, run_id) when the log names exactly one system prompt."""
        if len(self.systems) != 1:
            return None
        [(digest, content)] = self.systems.items()
        return content, self.system_runs.get(digest, "")


def settings_differences(recorded: SettingsRecord | None, current: Record) -> list[str]:
    """``fact_budget 0 → 3`` for every field the recorded settings record names differently."""
    if recorded is None:
        return []
    before = recorded.record()
    return [
        f"{key} {json.dumps(before[key], ensure_ascii=False)} → "
        f"{json.dumps(value, ensure_ascii=False)}"
        for key, value in current.items()
        if key != "type" and key in before and before[key] != value
    ]
