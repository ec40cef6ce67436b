"""One session's extraction as a program of effects, run by extract's engine.

The engine treats a session like a segment: a worker interprets this program
(`engine/segment.py`) with the same ports — completions through the gateway,
the attempts log, checkpoints, the commit turn, the source file. So a session
gets what a segment gets: the gateway's limits, no completion paid twice (every
stage's batch and every review is a checkpoint unit, `asks.py`; a rerun resumes at
the first not done), replay, Ctrl+C.

The model stages (`stages.py`) run one after another, each over every batch in
order: one ask, the code checks, at most one path-addressed corrective turn; a
batch still invalid fails, and the session stops there (what was done is kept). A
later stage sees earlier ones only as the names code assembled from their checked
drafts (`rows.carried_names`). Then review (L11), one ask per row draft: flags
only, stored beside the unchanged draft. Then the rows (`rows.assemble`) and the
source file, one per session; a session whose stated facts the checks all removed
would write zero rows: it writes nothing and fails, on a first run and a resumed one
alike (`rows.zero_rows`). P17's per-stage counts go to the
trace and the diagnostics sidecar.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from taguru_ray.contract.names import join, output_name
from taguru_ray.contract.records import Record
from taguru_ray.contract.records.attempts import SegmentAttempts
from taguru_ray.contract.settings import checkpoint_fingerprint, compute_inputs, settings_record
from taguru_ray.contract.source_file import SourceFileError
from taguru_ray.pipeline.claims import Proposal
from taguru_ray.pipeline.effects import Begin, Commit, Finish, LoadResume, Program, Sidecar, Stopped
from taguru_ray.pipeline.report import FAILURE_PREFIX
from taguru_ray.pipeline.segment_job import SegmentOutcome
from taguru_ray.pipeline.segment_state import SegmentTask
from taguru_ray.pipeline.steer import Contribution
from taguru_ray.sessions import prompt, stage_metrics
from taguru_ray.sessions.asks import Asks, SessionFailed, drafts_of, sha
from taguru_ray.sessions.batches import DEFAULT_KINDS, Batch, candidates, cut
from taguru_ray.sessions.checks import Draft
from taguru_ray.sessions.events import Event, Origin, Session, Tool
from taguru_ray.sessions.ledger import settled
from taguru_ray.sessions.provenance import fact_provenance
from taguru_ray.sessions.rows import Rows, assemble, carried_for, row_drafts, zero_rows
from taguru_ray.sessions.source import render
from taguru_ray.sessions.stages import MAIN_LINE, REVIEW, StageSpec, specs
from taguru_ray.text.masking import masked

STAGED = b'{"taguru_session":1,'
__all__ = [
    "SessionFailed", "batches_of", "extract_session", "is_staged", "settled_by_code", "stage",
    "staged_stages", "unstage",
]  # fmt: skip


# -- the staged form the engine carries ------------------------------------------


def stage(
    session: Session, stages: Sequence[str] = MAIN_LINE, program: str = prompt.PROMPT_VERSION
) -> bytes:
    """The session as the engine's segment bytes: its events and what names it, plus the
    prompt version and the stages asked, so a new prompt or another `--stages` makes
    every session read as changed."""
    body = {"program": program, "session": asdict(session), "stages": list(stages)}
    rest = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return STAGED + rest[1:].encode()  # the stamp first: the engine tells a session by it


def staged_stages(data: bytes) -> tuple[str, ...]:
    return tuple(json.loads(data).get("stages", MAIN_LINE))


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
    stages = staged_stages(job.data)
    turns, batches = batches_of(session)
    sha256 = sha(job.data)
    fingerprint = checkpoint_fingerprint(settings, task.inputs.digests, sha256)
    resume, note = yield LoadResume(fingerprint, settings.run.force)
    if note:
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {note}")
    head = [
        SegmentAttempts(
            run_id=task.run_id, source=job.source, segment_sha256=sha256, resumed=bool(resume.units)
        ).record(),
        settings_record(settings, task.inputs.digests, None).record(),
    ]
    yield Begin(head, not resume.holds)
    asks = Asks(task, resume.units)
    done: list[Record] = []  # the units this session's result is built from, in order
    drafts: list[Draft] = []
    by_seq = {event.seq: event for event in turns}
    try:
        for spec in specs(stages):
            if spec is REVIEW:
                for draft in row_drafts(drafts):
                    done.append((yield from asks.review(draft, by_seq[draft.seq])))
                continue
            for batch in batches:
                if settled_by_code(spec, batch):
                    continue
                carried = carried_for(spec, drafts, batch)
                if spec.needs_carried and not carried:
                    continue  # nothing settled yet to compare against
                unit = yield from asks.batch(spec, batch, carried)
                done.append(unit)
                drafts += drafts_of(unit)
    except Stopped:
        outcome.status = "interrupted"
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: stopped — {len(asks.units)} ask(s) "
            "are checkpointed; a rerun resumes from them"
        )
        return outcome
    except SessionFailed as failed:
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: {failed} ({len(asks.units)} ask(s) "
            "checkpointed — a rerun resumes from the break)"
        )
        return outcome
    rows = assemble(drafts, by_seq)
    stated = sum(u.get("stated", 0) for u in done if u.get("stage") in _row_stages(stages))
    refused = zero_rows(rows, stated)
    if refused:
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: {refused} — writing zero rows is an error, "
            "nothing was written"
        )
        return outcome
    try:
        source_bytes = render(session, settings.source.context, session.events,
                              rows.associations, rows.aliases)  # fmt: skip
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
    metrics = stage_metrics.fold(stages, done, rows.losses)
    flags = [flag for unit in done for flag in unit.get("flags", ())]
    losses = [loss for unit in done for loss in unit.get("losses", ())] + rows.losses
    judgements = [d for d in drafts if d.stage not in _row_stages(stages) and d.stage != "alias"]
    trace = _trace(session, rows, judgements, losses, flags, metrics, done,
                   settings.transport.model)  # fmt: skip
    written: list[str] = yield Finish(source_bytes, trace)
    yield Sidecar([{"type": "session_stage", "source": job.source, **m} for m in metrics])
    outcome.notes.extend(f"{FAILURE_PREFIX}{job.source}: {note}" for note in written)
    outcome.status = "written"
    outcome.inputs = compute_inputs(
        settings, task.inputs.digests, sha256, job.written_id, output_name(job.source)
    )
    outcome.counts = {
        "facts": len(rows.associations),
        "aliases": len(rows.aliases),
        "removed": len(losses),
        "flags": len(flags),
        "batches": len(batches),
        "turns": len(session.events),
    }
    outcome.report = (
        f"{job.source}: {len(rows.associations)} fact(s), {len(rows.aliases)} alias(es) from "
        f"{len(turns)} turn(s) in {len(batches)} batch(es) × {len(stages)} stage(s), "
        f"{len(losses)} removed by the checks, {len(flags)} review flag(s) → "
        f"{join(settings.source.out, output_name(job.source))}"
    )
    return outcome


def batches_of(session: Session) -> tuple[list[Event], list[Batch]]:
    """The turns the model is asked about (user and assistant text, plus the kinds
    ``--candidates`` offered, `Session.kinds`) and their batches: what a run asks about
    and what ``--dry-run`` counts."""
    turns = candidates(session.events, DEFAULT_KINDS | frozenset(session.kinds))
    return turns, cut(turns)


def settled_by_code(spec: StageSpec, batch: Batch) -> bool:
    """A stage's batch that is never asked: L10 with no turn whose time it could measure
    from. (L4 also waits for carried names, known only as the run goes.)"""
    return spec.needs_exact_time and not any(_exact(e) for e in batch.events)


def _exact(event: Event) -> bool:
    return event.ts_exact and event.ts_ms is not None


def _row_stages(stages: Sequence[str]) -> set[str]:
    return {spec.name for spec in specs(stages) if spec.rows}


def _trace(
    session: Session,
    rows: Rows,
    judgements: Sequence[Draft],
    losses: Sequence[dict[str, Any]],
    flags: Sequence[dict[str, Any]],
    metrics: Sequence[dict[str, Any]],
    done: Sequence[Record] = (),
    model: str | None = None,
) -> bytes:
    """The session's trace: each written fact with its stage, turn and quote; the
    aliases; the judgements that feed later stages and are not written; what the checks
    removed and why; review's flags beside the drafts they are about; P17's counts; one
    line per settled batch and review, what the ledger records of it (`ledger.settled`)."""
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "source": session.source,
            "file": masked(session.file),  # stored masked; a store from before, here
            "turns": len(session.events),
            "masked": list(session.masked),
            "metrics": stage_metrics.total(metrics),
        }
    ]
    for stated, written in zip(rows.stated, rows.associations, strict=True):
        line = _drafted("fact", stated)
        line |= fact_provenance(session, stated.seq, stated.quote, model=model)  # P14
        if written.fact != stated.fact:  # an L10 offset, written as the interval it names
            line["written"] = written.fact.value
        lines.append(line)
    # An alias line is an output too: it traces to its seq and verbatim quote as a fact
    # line does (the source file's alias line has no room for them: import's shape).
    lines += [
        {"type": "alias", **asdict(alias), "stage": draft.stage,
         **fact_provenance(session, draft.seq, draft.quote, model=model)}
        for alias, draft in zip(rows.aliases, rows.alias_drafts, strict=True)
    ]  # fmt: skip
    lines += [_drafted("judgement", d) for d in judgements]
    lines += [{"type": "loss", **loss} for loss in losses]
    lines += [{"type": "flag", **flag} for flag in flags]
    lines += [{"type": "stage", **m} for m in metrics]
    lines += [{"type": "batch", **settled(unit)} for unit in done]  # P16, per batch
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


def _drafted(kind: str, draft: Draft) -> dict[str, Any]:
    return {"type": kind, "stage": draft.stage, "seq": draft.seq, "quote": draft.quote,
            **asdict(draft.fact)}  # fmt: skip
