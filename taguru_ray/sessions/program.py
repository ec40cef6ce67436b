"""One session's extraction as a program of effects, run by extract's engine.

The engine treats a session like a segment: a worker interprets this program
(`engine/segment.py`) with the same ports — completions through the gateway,
the attempts log, checkpoints, the commit turn, the source file. So a session
gets what a segment gets: the gateway's limits, no completion paid twice (every
batch done is a checkpoint unit; a rerun resumes at the first batch not done),
replay, Ctrl+C.

Per batch, in order: one ask, the code checks, at most one path-addressed
corrective turn when the answer is unreadable or incomplete; a batch still
invalid fails, and the session stops there (the batches before it are kept).
Then review, one ask per draft: flags only, stored beside the unchanged draft.
Then the source file: one per session.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from taguru_ray.contract.completion import CompletionRequest
from taguru_ray.contract.names import join, output_name
from taguru_ray.contract.records import Record
from taguru_ray.contract.records.attempts import AttemptRecord, SegmentAttempts
from taguru_ray.contract.records.typed import Stage, State
from taguru_ray.contract.settings import checkpoint_fingerprint, compute_inputs, settings_record
from taguru_ray.contract.source_file import SourceFileError
from taguru_ray.pipeline.attempt_records import logged_message
from taguru_ray.pipeline.claims import Proposal
from taguru_ray.pipeline.effects import (
    Answered,
    Ask,
    Begin,
    Commit,
    Finish,
    LoadResume,
    LogAttempt,
    Program,
    SaveUnit,
    Stopped,
)
from taguru_ray.pipeline.report import FAILURE_PREFIX
from taguru_ray.pipeline.segment_job import SegmentOutcome
from taguru_ray.pipeline.segment_state import SegmentTask
from taguru_ray.pipeline.steer import Contribution
from taguru_ray.sessions import answer, prompt
from taguru_ray.sessions.batches import Batch, candidates, cut
from taguru_ray.sessions.checks import Checked, Draft, check, unique
from taguru_ray.sessions.events import Event, Origin, Session, Tool
from taguru_ray.sessions.source import render

STAGED = b'{"taguru_session":1,'
BATCH_STAGE, REVIEW_STAGE = Stage.SESSION_FACT, Stage.REVIEW


class SessionFailed(Exception):
    """A batch still invalid after its corrective turn: the session stops there."""


# -- the staged form the engine carries ------------------------------------------


def stage(session: Session, program: str = prompt.PROMPT_VERSION) -> bytes:
    """The session as the engine's segment bytes: its events and what names it, plus the
    prompt version, so a new prompt makes every session read as changed."""
    body = {"program": program, "session": asdict(session)}
    rest = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return STAGED + rest[1:].encode()  # the stamp first: the engine tells a session by it


def is_staged(data: bytes) -> bool:
    return data.startswith(STAGED)


def unstage(data: bytes) -> Session:
    raw = json.loads(data)["session"]
    events = tuple(
        Event(
            **{
                **e,
                "origin": Origin(**e["origin"]),
                "tool": Tool(**e["tool"]) if e["tool"] else None,
            }
        )
        for e in raw.pop("events")
    )
    raw["masked"] = tuple(raw.get("masked", ()))
    return Session(**raw, events=events)


# -- the program ------------------------------------------------------------------


def extract_session(task: SegmentTask) -> Program[SegmentOutcome]:
    job, settings = task.job, task.settings
    outcome = SegmentOutcome(job.index, job.source, "failed")
    session = unstage(job.data)
    turns = candidates(session.events)
    batches = cut(turns)
    sha = _sha(job.data)
    fingerprint = checkpoint_fingerprint(settings, task.inputs.digests, sha)
    resume, note = yield LoadResume(fingerprint, settings.run.force)
    if note:
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {note}")
    head = [
        SegmentAttempts(
            run_id=task.run_id, source=job.source, segment_sha256=sha, resumed=bool(resume.units)
        ).record(),
        settings_record(settings, task.inputs.digests, None).record(),
    ]
    yield Begin(head, not resume.holds)
    run = _Run(task, resume.units)
    carried: list[str] = []
    drafts: list[Draft] = []
    losses: list[dict[str, Any]] = []
    flags: list[dict[str, Any]] = []
    try:
        for batch in batches:
            unit = yield from run.batch(batch, carried)
            drafts += [_draft(d) for d in unit["drafts"]]
            losses += unit["losses"]
            carried = prompt.carry(
                carried, [name for d in unit["drafts"] for name in (d["subject"], d["value"])]
            )
        drafts = unique(drafts)
        by_seq = {event.seq: event for event in turns}
        for draft in drafts:
            flags += yield from run.review(draft, by_seq[draft.seq])
    except Stopped:
        outcome.status = "interrupted"
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: stopped — {len(run.units)} batch(es) "
            "are checkpointed; a rerun resumes from them"
        )
        return outcome
    except SessionFailed as failed:
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: {failed} ({len(run.units)} batch(es) "
            "checkpointed — a rerun resumes from the break)"
        )
        return outcome
    if turns and not drafts and _answerable(run):
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: the model stated facts, and every one "
            "was removed by the checks — nothing was written"
        )
        return outcome
    context = settings.source.context
    try:
        source_bytes = render(session, context, session.events, drafts)
    except SourceFileError as error:
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: the source file failed its own "
            f"import check ({error}) — nothing was written"
        )
        return outcome
    verdict = yield Commit(Proposal(Contribution()))
    if verdict is None:
        outcome.status = "interrupted"
        return outcome
    trace = _trace(session, drafts, losses, flags)
    written: list[str] = yield Finish(source_bytes, trace)
    outcome.notes.extend(f"{FAILURE_PREFIX}{job.source}: {note}" for note in written)
    outcome.status = "written"
    outcome.inputs = compute_inputs(
        settings, task.inputs.digests, sha, job.written_id, output_name(job.source)
    )
    outcome.counts = {
        "facts": len(drafts),
        "removed": len(losses),
        "flags": len(flags),
        "batches": len(batches),
        "turns": len(session.events),
    }
    outcome.report = (
        f"{job.source}: {len(drafts)} fact(s) from {len(turns)} turn(s) in {len(batches)} "
        f"batch(es), {len(losses)} removed by the checks, {len(flags)} review flag(s) → "
        f"{join(settings.source.out, output_name(job.source))}"
    )
    return outcome


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _draft(raw: dict[str, Any]) -> Draft:
    return Draft(
        raw["seq"],
        raw["quote"],
        answer.Fact(raw["subject"], raw["predicate"], raw["value"]),
        raw["paragraph"],
    )


def _answerable(run: _Run) -> bool:
    return run.stated > 0


class _Run:
    """Asks and their records for one session; `units` are the checkpointed batches."""

    def __init__(self, task: SegmentTask, units: dict[str, Record]) -> None:
        self.task = task
        self.units = units
        self.stated = 0  # facts the model stated, before the checks

    def batch(self, batch: Batch, carried: Sequence[str]) -> Program[Record]:
        piece_id = f"batch-{batch.index:05d}-{batch.sha256[:16]}"
        if piece_id in self.units:
            return self.units[piece_id]
        messages = prompt.extract_messages(batch, carried)
        text = yield from self._ask(piece_id, batch, messages, BATCH_STAGE, 1, None)
        reading = answer.read(text)
        checked = check(batch, reading, frozenset(carried))
        if checked.corrective:
            problems = [(p.path, p.why) for p in checked.corrective]
            again = [
                *messages,
                {"role": "assistant", "content": text},
                prompt.corrective_message(problems),
            ]
            text = yield from self._ask(piece_id, batch, again, BATCH_STAGE, 2, problems)
            checked = check(batch, answer.read(text), frozenset(carried))
            if checked.corrective:
                first = checked.corrective[0]
                raise SessionFailed(
                    f"batch {batch.index + 1} (seq {batch.seqs[0]}–"
                    f"{batch.seqs[-1]}): {first.path}: {first.why}"
                )
        self.stated += sum(len(item.facts) for item in answer.read(text).items)
        unit = _unit(checked)
        self.units[piece_id] = unit
        yield SaveUnit(piece_id, unit)
        return unit

    def review(self, draft: Draft, event: Event) -> Program[list[dict[str, Any]]]:
        fact = asdict(draft.fact)
        key = f"review-{draft.seq:06d}-{_sha(json.dumps(fact, sort_keys=True).encode())[:16]}"
        if key in self.units:
            return list(self.units[key]["flags"])
        messages = prompt.review_messages(event, fact, draft.quote)
        text = yield from self._ask(key, None, messages, REVIEW_STAGE, 1, None)
        flags = [
            {"seq": draft.seq, **fact, "field": f.subject, "flag": f.value}
            for item in answer.read(text).items
            for f in item.facts
            if f.predicate == "flag" and f.value in prompt.REVIEW_FLAGS
        ]
        self.units[key] = {"flags": flags}
        yield SaveUnit(key, {"flags": flags})
        return flags

    def _ask(
        self,
        piece_id: str,
        batch: Batch | None,
        messages: list[dict[str, str]],
        stage_: Stage,
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
            stage=stage_,
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


def _unit(checked: Checked) -> Record:
    return {
        "drafts": [
            {"seq": d.seq, "quote": d.quote, "paragraph": d.paragraph, **asdict(d.fact)}
            for d in checked.drafts
        ],
        "losses": checked.losses,
    }


def _trace(
    session: Session,
    drafts: Sequence[Draft],
    losses: Sequence[dict[str, Any]],
    flags: Sequence[dict[str, Any]],
) -> bytes:
    """The session's trace: its facts with their turn and quote, what the checks removed
    and why, and review's flags beside the drafts they are about."""
    lines = [
        {
            "type": "session",
            "source": session.source,
            "file": session.file,
            "turns": len(session.events),
            "masked": list(session.masked),
        }
    ]
    lines += [{"type": "fact", "seq": d.seq, "quote": d.quote, **asdict(d.fact)} for d in drafts]
    lines += [{"type": "loss", **loss} for loss in losses]
    lines += [{"type": "flag", **flag} for flag in flags]
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)
