"""The attempts log's `attempt` and `move` records of a round (CONTRACT.md section 4.2)."""

from __future__ import annotations

from typing import Any

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records import Record
from taguru_ray.contract.records.attempts import AttemptRecord, MoveRecord
from taguru_ray.pipeline.prompt import system_sha256
from taguru_ray.pipeline.round_types import LoopPolicy, PieceSpec
from taguru_ray.pipeline.verdict import AttemptVerdict


def move_record(
    move: type[MoveRecord], run_id: str, spec: PieceSpec, reason: str, **fields: Any
) -> Record:
    """An attempts-log `move` record (taguru ADR 0029): what the ladder did, in the stderr's
    words."""
    return move(
        run_id=run_id, piece_id=spec.piece_id, chunk_index=spec.piece.index, reason=reason, **fields
    ).record()


def attempt_record(
    spec: PieceSpec,
    policy: LoopPolicy,
    stage: str,
    attempt: int,
    seq: int,
    corrects: Record | None,
    request: CompletionRequest,
    completion: Completion,
    verdict: AttemptVerdict,
    rung: str | None,
    gleans: Record | None = None,
) -> Record:
    """The attempts-log record; the sidecar's is derived from it by the recorder."""
    removed: list[Any] = [r.text for r in (*verdict.removed, *verdict.dropped)]
    engaged = policy.ladder.engaged
    return AttemptRecord(
        run_id=policy.run_id,
        attempt_seq=seq,
        corrects=corrects,
        gleans=gleans,
        replayed_from=completion.replayed_from,
        piece_id=spec.piece_id,
        source=spec.source,
        chunk_index=spec.piece.index,
        stage=stage,
        attempt=attempt,
        max_attempts=policy.max_attempts,
        state=verdict.state,
        length_limited=verdict.cut_off,
        transport_retries=completion.transport_retries,
        elapsed_seconds=round(completion.elapsed_seconds, 3),
        requested_max_tokens=request.max_tokens,
        rung=rung if engaged else None,
        piece_bytes=spec.piece.bytes if engaged else None,
        finish_reason=completion.finish_reason,
        input_tokens=completion.input_tokens,
        output_tokens=completion.output_tokens,
        total_tokens=completion.total_tokens,
        messages=[logged_message(message) for message in request.messages],
        answer=completion.text if completion.outcome == "answer" else None,
        parse_error=verdict.parse_error,
        validation_issues=list(verdict.issues) or None,
        removed_items=removed if verdict.clean and removed else None,
        batch_id=completion.extra.get("batch_id"),
        custom_id=completion.extra.get("custom_id"),
    ).record()


def logged_message(message: dict[str, str]) -> dict[str, str]:
    if message["role"] == "system":
        return {"role": "system", "system_sha256": system_sha256(message["content"])}
    return {"role": message["role"], "content": message["content"]}
