"""One session's asks as programs: a stage's batch, a review, and the attempt record each.

Every finished ask is a checkpoint unit, keyed by what it is about, so a rerun skips
it and a killed run resumes at the stage and batch it stopped in:
``{stage}-{batch:05d}-{batch sha256[:16]}`` for a stage's batch (the stage in the key:
one batch is asked once per stage), ``review-{seq:06d}-{fact sha256[:16]}`` for a review.
A stage's unit keeps what the checks left and what P17 counts: the drafts, the losses,
the asks it took, the turns answered, the facts stated before the checks; and what the
ledger records of it (§4: the batch, its seqs, its input's and prompt's digests).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict

from taguru_ray.contract.completion import CompletionRequest
from taguru_ray.contract.records import Record
from taguru_ray.contract.records.attempts import AttemptRecord
from taguru_ray.contract.records.session_batch import SessionBatchRecord
from taguru_ray.contract.records.typed import Stage, State
from taguru_ray.pipeline.attempt_records import logged_message
from taguru_ray.pipeline.effects import Answered, Ask, Log, LogAttempt, Program, SaveUnit
from taguru_ray.pipeline.segment_state import SegmentTask
from taguru_ray.sessions import answer, prompt
from taguru_ray.sessions.batches import Batch
from taguru_ray.sessions.checks import Checked, Draft, check
from taguru_ray.sessions.events import Event
from taguru_ray.sessions.stages import StageSpec

# The attempt record's `stage` is the contract's ask kind; the model stage is in piece_id.
BATCH_ASK, REVIEW_ASK = Stage.SESSION_FACT, Stage.REVIEW


class SessionFailed(Exception):
    """An ask that could not be settled — a batch still invalid after its corrective
    turn, or no answer: the session stops there (its `SessionBatchRecord` logged)."""


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def prompt_sha256(messages: Sequence[dict[str, str]]) -> str:
    """The first ask's messages as sent (the corrective turn extends them): the ledger's
    ``prompt_sha256``, so a changed rubric or carryover shows in the record."""
    return sha(json.dumps(list(messages), ensure_ascii=False, sort_keys=True).encode())


def batch_key(spec: StageSpec, batch: Batch) -> str:
    return f"{spec.name}-{batch.index:05d}-{batch.sha256[:16]}"


class Asks:
    """Asks and their records for one session; `units` are the checkpointed ones."""

    def __init__(self, task: SegmentTask, units: dict[str, Record]) -> None:
        self.task = task
        self.units = units

    def batch(self, spec: StageSpec, batch: Batch, carried: Sequence[str]) -> Program[Record]:
        """One stage's judgement of one batch, checked; at most one corrective turn."""
        piece_id = batch_key(spec, batch)
        if piece_id in self.units:
            return self.units[piece_id]
        names = frozenset(carried)
        messages = prompt.stage_messages(spec, batch, carried)
        asked = 1
        try:
            text = yield from self._ask(piece_id, batch, messages, BATCH_ASK, 1, None)
            checked = check(batch, answer.read(text), names, spec)
            if checked.corrective:
                problems = [(p.path, p.why) for p in checked.corrective]
                again = [
                    *messages,
                    {"role": "assistant", "content": text},
                    prompt.corrective_message(problems),
                ]
                asked = 2
                text = yield from self._ask(piece_id, batch, again, BATCH_ASK, 2, problems)
                checked = check(batch, answer.read(text), names, spec)
                if checked.corrective:
                    first = checked.corrective[0]
                    raise SessionFailed(
                        f"{spec.label}, batch {batch.index + 1} (seq {batch.seqs[0]}–"
                        f"{batch.seqs[-1]}): {first.path}: {first.why}"
                    )
        except SessionFailed as failed:  # logged as it fails: the ledger's record of it
            seqs = (batch.seqs[0], batch.seqs[-1])
            yield self._failed(spec.name, batch.index, seqs, batch.sha256, messages, asked, failed)
            raise
        stated = sum(len(item.facts) for item in answer.read(text).items)
        unit = _unit(spec, checked, asked, stated) | {
            "batch": batch.index,
            "seq_first": batch.seqs[0],
            "seq_last": batch.seqs[-1],
            "input_sha256": batch.sha256,
            "prompt_sha256": prompt_sha256(messages),
        }
        self.units[piece_id] = unit
        yield SaveUnit(piece_id, unit)
        return unit

    def review(self, draft: Draft, event: Event) -> Program[Record]:
        """L11: one draft against its turn; flags only, the draft stands unchanged."""
        fact = asdict(draft.fact)
        key = f"review-{draft.seq:06d}-{sha(json.dumps(fact, sort_keys=True).encode())[:16]}"
        if key in self.units:
            return self.units[key]
        messages = prompt.review_messages(event, fact, draft.quote)
        try:
            text = yield from self._ask(key, None, messages, REVIEW_ASK, 1, None)
        except SessionFailed as failed:
            seqs = (draft.seq, draft.seq)
            yield self._failed("review", None, seqs, None, messages, 1, failed)
            raise
        flags = [
            {"seq": draft.seq, "stage": draft.stage, **fact, "field": f.subject, "flag": f.value}
            for item in answer.read(text).items
            for f in item.facts
            if f.predicate == "flag" and f.value in prompt.REVIEW_FLAGS
        ]
        unit = {"stage": "review", "flags": flags, "asked": 1, "seq_first": draft.seq,
                "seq_last": draft.seq, "prompt_sha256": prompt_sha256(messages)}  # fmt: skip
        self.units[key] = unit
        yield SaveUnit(key, unit)
        return unit

    def _failed(
        self,
        stage: str,
        batch: int | None,
        seqs: tuple[int, int],
        input_sha256: str | None,
        messages: Sequence[dict[str, str]],
        asked: int,
        failed: SessionFailed,
    ) -> Log:
        """The attempts-log record of an ask that could not be settled (no unit is saved
        for it): what the ledger records of it, written before the session stops."""
        record = SessionBatchRecord(
            run_id=self.task.run_id, stage=stage, batch=batch, seq_first=seqs[0],
            seq_last=seqs[1], input_sha256=input_sha256, prompt_sha256=prompt_sha256(messages),
            state="failed", rows=0, attempt=asked, reason=str(failed),
        )  # fmt: skip
        return Log(record.record())

    def _ask(
        self,
        piece_id: str,
        batch: Batch | None,
        messages: list[dict[str, str]],
        kind: Stage,
        attempt: int,
        corrects: list[tuple[str, str]] | None,
    ) -> Program[str]:
        settings = self.task.settings
        # 0 is "unset": the server decides the length, as extract off the ladder does.
        request = CompletionRequest(messages, max_tokens=settings.ladder.max_output_tokens or None)
        answered: Answered = yield Ask(request)
        completion = answered.completion
        text = completion.text if completion.outcome == "answer" else None
        state = (
            State.STOP_VALID
            if text
            else State.TRANSPORT
            if completion.outcome != "answer"
            else State.EMPTY
        )
        record = AttemptRecord(
            run_id=self.task.run_id,
            attempt_seq=answered.attempt_seq,
            piece_id=piece_id,
            source=self.task.job.source,
            chunk_index=batch.index if batch else -1,
            stage=kind,
            attempt=attempt,
            max_attempts=2,
            state=state,
            length_limited=completion.finish_reason == "length",
            transport_retries=completion.transport_retries,
            elapsed_seconds=round(completion.elapsed_seconds, 3),
            requested_max_tokens=request.max_tokens,
            finish_reason=completion.finish_reason,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            total_tokens=completion.total_tokens,
            messages=[logged_message(m) for m in messages],
            answer=text,
            parse_error=None,
            validation_issues=[{"path": p, "why": w} for p, w in corrects] if corrects else None,
            removed_items=None,
            replayed_from=completion.replayed_from,
        ).record()
        yield LogAttempt(record)
        if text is None:
            why = completion.error or completion.outcome
            raise SessionFailed(f"{piece_id}: no answer ({why})")
        return unicodedata.normalize("NFC", text)


def _unit(spec: StageSpec, checked: Checked, asked: int, stated: int) -> Record:
    return {
        "stage": spec.name,
        "drafts": [
            {"seq": d.seq, "quote": d.quote, "paragraph": d.paragraph, **asdict(d.fact)}
            for d in checked.drafts
        ],
        "losses": checked.losses,
        "asked": asked,
        "answered": len(checked.answered),
        "stated": stated,
    }


def drafts_of(unit: Record) -> list[Draft]:
    """A stage unit's drafts, as the checks left them."""
    return [
        Draft(
            raw["seq"],
            raw["quote"],
            answer.Fact(raw["subject"], raw["predicate"], raw["value"]),
            raw["paragraph"],
            unit.get("stage", "fact"),
        )
        for raw in unit["drafts"]
    ]
