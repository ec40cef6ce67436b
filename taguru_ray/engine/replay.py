"""Replaying a recorded run (taguru ADR 0031): a recorded completion stands in for a live one.

A request is matched in the segment's `ReplayBook` by the exact conversation
it would send (`pipeline/replay_book.py`): a request whose content changed (a
different rule, vocabulary or setting) is a different question and goes live
under `auto`, or fails loudly under `strict`. The recorded answer is served
with `replayed_from` naming the original attempt, near-zero time, and the
original's tokens restated.

The system prompt is pinned from the segment's own log, piece by piece: a
piece is sent the system prompt its recorded extraction attempts were (by
conversation, so a run with --carryover's per-chunk prompts, an overview
pass's own prompt or several segments replays strictly), and a piece the log
never saw the one system prompt the log names, if it names exactly one. So
replaying segment *i* does not depend on the label vocabulary this run
happened to fold from earlier segments.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records import attempt_ref
from taguru_ray.pipeline.replay_book import ReplayBook, conversation_key


@dataclass
class Replayer:
    """The model port under --replay: recorded answers first, live calls by mode."""

    book: ReplayBook
    mode: str  # auto | strict
    live: Callable[[CompletionRequest], Awaitable[Completion]] | None
    replayed: int = 0
    went_live: int = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        record = self.book.answers.get(conversation_key(request.messages, request.max_tokens))
        if record is not None:
            self.replayed += 1
            return Completion(
                outcome="answer",
                text=record.answer,
                finish_reason=record.finish_reason,
                input_tokens=record.input_tokens,
                output_tokens=record.output_tokens,
                total_tokens=record.total_tokens,
                elapsed_seconds=0.0,
                replayed_from=attempt_ref(record.run_id, record.attempt_seq),
            )
        if self.mode == "strict" or self.live is None:
            return Completion(
                outcome="transport",
                error="no recorded completion matches this conversation (--replay strict): "
                "the request changed since the recording, or was never made",
            )
        self.went_live += 1
        return await self.live(request)
