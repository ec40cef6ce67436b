"""A piece down the ladder, and Stage 2 over a segment's pieces: the program's decisions.

A piece is reused from the checkpoint, or asked in rounds (`rounds.run_round`)
at the run's rung; an exhausted round demotes an `auto`-resolved constrained
rung run-wide and restarts the piece (taguru ADR 0021), or splits the piece at half
its size (the split rung), or fails it when it is too small to split or the
answer ran away. Accepted pieces may glean, and land in the checkpoint before
anything else happens. Stage 2 then gives each clashing output one corrective
turn and prunes what stands (`reconcile`).
"""

from __future__ import annotations

from taguru_ray.contract.records import Record
from taguru_ray.contract.records.attempts import DemoteMove, SplitMove, SystemRecord
from taguru_ray.contract.records.checkpoint import CheckpointUnit
from taguru_ray.pipeline.effects import (
    CurrentRung,
    Demote,
    Log,
    LogMove,
    Program,
    SaveSplit,
    SaveUnit,
)
from taguru_ray.pipeline.ladder import JSON_OBJECT, JSON_SCHEMA
from taguru_ray.pipeline.mechanical import Removal
from taguru_ray.pipeline.plan import Chunk, Piece, piece_from_text, split_cap
from taguru_ray.pipeline.plan import split_piece as split_into
from taguru_ray.pipeline.prompt import system_sha256
from taguru_ray.pipeline.reconcile import (
    PieceState,
    StandingIssue,
    prune_dangling,
    prune_standing,
    stage2_issues,
)
from taguru_ray.pipeline.rounds import (
    Accepted,
    Exhausted,
    PieceFailed,
    correct_once,
    glean,
    move_record,
    run_round,
)
from taguru_ray.pipeline.segment_state import SegmentState
from taguru_ray.pipeline.validate import PieceOutput

CONSTRAINED = (JSON_SCHEMA, JSON_OBJECT)


def rung_now(state: SegmentState) -> Program[str | None]:
    """The run-wide rung a round runs at (None off the ladder)."""
    if not state.ladder.engaged:
        return None
    rung: str | None = yield CurrentRung()
    return rung


def log_system(state: SegmentState, system: str) -> Program[None]:
    """A `system` record the first time each distinct system prompt is sent."""
    digest = system_sha256(system)
    if digest not in state.logged_systems:
        state.logged_systems.add(digest)
        size = len(system.encode("utf-8"))
        yield Log(SystemRecord(sha256=digest, bytes=size, content=system).record())


def descend(state: SegmentState, piece: Piece) -> Program[list[PieceState]]:
    """A piece through the ladder: reuse, rounds, demotion, and the split rung."""
    unit = state.resume.units.get(piece.sha256)
    if unit is not None:
        return [state_from_unit(piece, unit)]
    if piece.sha256 in state.resume.splits:  # an earlier run already climbed this far
        return (yield from _descend_split(state, piece, state.resume.splits[piece.sha256]))
    while True:
        rung = yield from rung_now(state)
        yield from log_system(state, state.system_of(piece))
        try:
            result = yield from state.about(
                piece, run_round(state.spec(piece), state.policy(), rung)
            )
        except PieceFailed as failure:
            raise PieceFailed(str(failure), piece) from None
        if isinstance(result, Accepted):
            gleanings = state.settings.ladder.gleanings
            if gleanings:
                program = glean(state.spec(piece), state.policy(), rung, result, gleanings)
                gleaned = yield from state.about(piece, program)
                state.gleaning_passes += gleaned.passes
                state.failed_gleanings += gleaned.failed
                result = gleaned.accepted
            return [(yield from _keep(state, piece, result))]
        assert isinstance(result, Exhausted)
        if (yield from _demoted(state, piece, result)):
            continue  # the piece restarts at the ladder's top, on the lower rung
        if result.kind == "runaway":
            ratio = state.settings.ladder.runaway_ratio
            raise PieceFailed(
                f"a runaway answer: {result.answer_bytes} B cut off for a {piece.bytes} B "
                f"piece, over {ratio}× its input (TAGURU_EXTRACT_RUNAWAY_RATIO) — the model is "
                "not tracking the text; no escalation or split can converge",
                piece,
            )
        cap = split_cap(piece)
        if len(split_into(piece, cap)) < 2:
            raise PieceFailed(_floor_message(state, piece, result), piece)
        return (yield from _descend_split(state, piece, cap, result))


def _descend_split(
    state: SegmentState, piece: Piece, cap: int, why: Exhausted | None = None
) -> Program[list[PieceState]]:
    subs = split_into(piece, cap)
    if why is not None:
        reason = (
            "timed out"
            if why.kind == "timeout"
            else f"still cut off at max_tokens {why.budget}"
            if why.budget
            else "cut off at the output limit"
        )
        spec = state.spec(piece)
        reason = f"{reason}; splitting the {piece.bytes} B piece at {cap} B into {len(subs)} pieces"
        yield LogMove(
            move_record(
                SplitMove,
                state.run_id,
                spec,
                reason,
                piece_bytes=piece.bytes,
                split_cap=cap,
                sub_pieces=len(subs),
            )
        )
        state.note(piece, reason)
        yield SaveSplit(piece.sha256, cap)
    states: list[PieceState] = []
    for sub in subs:  # in paragraph order, one at a time: halves of one chunk
        states.extend((yield from descend(state, sub)))
    return states


def _demoted(state: SegmentState, piece: Piece, result: Exhausted) -> Program[bool]:
    """taguru ADR 0021: an auto-resolved constrained rung drops one rung, run-wide;
    True restarts."""
    if not state.ladder.demotable or result.rung not in CONSTRAINED:
        return False
    assert result.rung is not None
    demoted, now = yield Demote(result.rung)
    if demoted:
        why = {
            "timeout": "a completion timed out",
            "runaway": "a runaway answer",
            "length": "the answer was still cut off at the escalated budget",
        }[result.kind]
        reason = (
            f"structured output: {result.rung} demoted to {now} — {why} under the "
            f"{result.rung} rung; the piece restarts at the ladder's top"
        )
        spec = state.spec(piece)
        yield Log(
            move_record(DemoteMove, state.run_id, spec, reason, from_rung=result.rung, to_rung=now)
        )
        state.note(piece, reason)
    return bool(now != result.rung)


def _floor_message(state: SegmentState, piece: Piece, result: Exhausted) -> str:
    if result.kind == "timeout":
        return (
            f"timed out after {state.settings.transport.timeout_secs:g} s and the {piece.bytes} "
            "B piece is too small to split — raise TAGURU_EXTRACT_TIMEOUT_SECS or lower "
            "--chunk-bytes"
        )
    return (
        f"the answer was still cut off at max_tokens {result.budget} and the {piece.bytes} B "
        "piece is too small to split — raise --max-output-tokens or "
        "TAGURU_EXTRACT_ESCALATION_FACTOR"
    )


def _keep(state: SegmentState, piece: Piece, accepted: Accepted) -> Program[PieceState]:
    kept = PieceState(
        piece,
        accepted.output,
        accepted.attempt,
        accepted.answer,
        state.user(piece),
        accepted.removed,
        accepted.dropped,
    )
    yield from _checkpoint(state, kept)
    return kept


def _checkpoint(state: SegmentState, kept: PieceState) -> Program[None]:
    """The piece's unit, durable before the program goes on."""
    unit = unit_of(kept)
    yield SaveUnit(kept.piece_id, unit)
    state.resume.units[kept.piece_id] = unit


def reconcile(state: SegmentState, pieces: list[PieceState]) -> Program[None]:
    """Stage 2: one corrective turn per clashing output, then what stands is removed."""
    schema = state.inputs.schema
    for piece_index, issues in stage2_issues(pieces, schema):
        piece_state = pieces[piece_index]
        piece = piece_state.piece
        rung = yield from rung_now(state)
        try:
            yield from log_system(state, state.system_of(piece))
            correction = correct_once(
                state.spec(piece), state.policy(), rung, piece_state.answer, issues,
                piece_state.attempt,
            )  # fmt: skip
            corrected = yield from state.about(piece, correction)
        except PieceFailed as failure:
            state.failures[piece_state.chunk_index] = (piece, str(failure))
            return
        if corrected is not None:
            piece_state.output, piece_state.answer, piece_state.attempt = (
                corrected.output,
                corrected.answer,
                corrected.attempt,
            )
            piece_state.removed, piece_state.reused = list(corrected.removed), False
            yield from _checkpoint(state, piece_state)
    try:
        prune_standing(pieces, stage2_issues(pieces, schema))
    except StandingIssue as standing:
        state.failures[standing.piece.chunk_index] = (
            standing.piece.piece,
            f"the answer left {len(standing.issues)} invalid item(s) uncorrected: {standing}",
        )
        return
    prune_dangling(pieces)


def state_from_unit(chunk: Chunk | Piece, unit: Record) -> PieceState:
    """A checkpointed unit as the piece it answered."""
    user = unit.get("user") or ""
    text = user.split("\n\n", 1)[1] if "\n\n" in user else chunk.text
    return PieceState(
        piece=piece_from_text(chunk.index, chunk.total, text),
        output=PieceOutput.from_json(unit["output"]),
        attempt=unit.get("attempt"),
        answer=unit.get("answer") or "",
        user=user,
        removed=[Removal.from_json(r) for r in unit.get("removed") or []],
        dropped=[Removal.from_json(r) for r in unit.get("unparsed") or []],
        reused=True,
    )


def unit_of(state: PieceState) -> Record:
    return CheckpointUnit(
        chunk_index=state.chunk_index,
        attempt=state.attempt,
        output=state.output.to_json(),
        user=state.user,
        answer=state.answer,
        removed=[r.to_json() for r in state.removed],
        unparsed=[r.to_json() for r in state.dropped],
    ).record()
