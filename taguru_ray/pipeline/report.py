"""The human- and machine-readable lines about a segment: report, sidecar, failure.

Formats are CONTRACT.md section 6's (report and failure lines) and section
4.3's (sidecar records), word for word: users grep them.
"""

from __future__ import annotations

from taguru_ray.contract.records import Record
from taguru_ray.contract.records.sidecar import ProviderMetadata, SidecarAttempt
from taguru_ray.errors import MESSAGE_PREFIX
from taguru_ray.pipeline.merge import Extraction
from taguru_ray.pipeline.plan import Piece
from taguru_ray.pipeline.reconcile import PieceState

FAILURE_PREFIX = MESSAGE_PREFIX


def sidecar_attempt(record: Record, raw_bytes: int) -> Record:
    """The diagnostics sidecar's view of an attempt: metadata, raw text only when opted in."""
    answered = record["state"] not in ("timeout", "transport")
    ladder = "piece_bytes" in record  # the escalation ladder only
    return SidecarAttempt(
        run_id=record["run_id"],
        attempt_seq=record["attempt_seq"],
        piece_id=record["piece_id"],
        source=record["source"],
        stage=record["stage"],
        chunk_index=record["chunk_index"],
        attempt=record["attempt"],
        max_attempts=record["max_attempts"],
        state=record["state"],
        length_limited=record["length_limited"],
        elapsed_seconds=record["elapsed_seconds"],
        provider_metadata=ProviderMetadata(
            finish_reason=record["finish_reason"],
            input_tokens=record["input_tokens"],
            output_tokens=record["output_tokens"],
            total_tokens=record["total_tokens"],
        )
        if answered
        else None,
        parse_error=record["parse_error"],
        validation_issues=record["validation_issues"],
        removed_items=record.get("removed_items"),
        piece_bytes=record["piece_bytes"] if ladder else None,
        requested_max_tokens=record["requested_max_tokens"] if ladder else None,
        response_text=capped(record["answer"], raw_bytes)
        if raw_bytes > 0 and record.get("answer") is not None
        else None,
    ).record()


def capped(text: str, limit: int) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    prefix = encoded[:limit].decode("utf-8", errors="ignore")
    return f"{prefix}… [truncated to {limit} bytes]"


def counts(extraction: Extraction, pieces: list[PieceState]) -> dict[str, int]:
    """The segment record's counts; removed and dropped fold the pieces' own accounting in."""
    return {
        "associations": len(extraction.associations),
        "concepts": sum(1 for a, _ in extraction.aliases if a.kind == "concept"),
        "labels": sum(1 for a, _ in extraction.aliases if a.kind == "label"),
        "questions": len(extraction.questions),
        "duplicates": extraction.count("duplicate"),
        "dropped": extraction.count("dropped") + sum(len(p.dropped) for p in pieces),
        "removed": sum(len(p.removed) for p in pieces),
        "uncovered": 0,
    }


def report_line(
    source: str,
    batch_path: str,
    tally: dict[str, int],
    *,
    passage: bool,
    questions: bool,
    lossy: bool,
) -> str:
    parts = [
        f"{tally['associations']} association(s)",
        f"{tally['concepts'] + tally['labels']} alias(es)",
    ]
    if passage:
        parts.append("passage")
    if questions:
        parts.append(f"{tally['questions']} question(s)")
    if "redacted" in tally:  # --redact: matches masked in this segment
        parts.append(f"{tally['redacted']} redacted")
    if tally["duplicates"]:
        parts.append(f"{tally['duplicates']} duplicate(s) folded")
    if tally["removed"]:
        parts.append(f"{tally['removed']} item(s) removed (mechanical validation)")
    if tally.get("uncovered"):
        parts.append(f"{tally['uncovered']} sentence(s) uncovered (coverage)")
    if tally["dropped"]:
        parts.append(f"{tally['dropped']} item(s) dropped{' (--lossy)' if lossy else ''}")
    # taguru-ray's own counter (seed 002), only when gleaning is on: it costs calls. The
    # carryover is on by default and costs none; its count is the sidecar's, so a default
    # run's report line stays the reference's.
    if "gleaning_passes" in tally:
        parts.append(f"{tally['gleaning_passes']} gleaning pass(es)")
        if tally["failed_gleanings"]:
            parts.append(f"{tally['failed_gleanings']} failed")
    return f"{source}: {', '.join(parts)} → {batch_path}"


def piece_clause(piece: Piece) -> str:
    """``piece <12 hex> (paragraphs a–b, N B): `` — the innermost piece a failure names."""
    if piece.paragraph_first == piece.paragraph_last:
        span = f"paragraph {piece.paragraph_first}"
    else:
        span = f"paragraphs {piece.paragraph_first}–{piece.paragraph_last}"
    return f"piece {piece.sha256[:12]} ({span}, {piece.bytes} B): "


def chunk_prefix(piece: Piece) -> str:
    return f"chunk {piece.index + 1}/{piece.total}"
