"""One piece through prompt → call → parse → validate, with corrective laps.

This is the legacy loop of seed 000 (no structured output, no output budget):
an answer that is not the JSON object, or that keeps issues the mechanical
pass cannot remove, earns a corrective turn — the conversation rebuilt from
the base pair plus only the latest bad answer — until
TAGURU_EXTRACT_MAX_ATTEMPTS is spent. An empty answer earns at most one
correction; a refusal ends the piece at once; a cut-off answer that still
parses is judged like any other, one that does not is asked for a shorter
answer. Stage 2's single corrective turn (`correct_once`) is the same lap with
a different ask. Ray-free and disk-free: the model and the records are ports.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.records import Record, attempt_ref
from taguru_ray.llm.client import Completion, CompletionRequest
from taguru_ray.pipeline.mechanical import Offered, Removal, judge, lossy_pass
from taguru_ray.pipeline.parse import Answer, parse_answer
from taguru_ray.pipeline.prompt import (
    Conversation,
    empty_ask,
    syntax_ask,
    system_sha256,
    validation_ask,
)
from taguru_ray.pipeline.validate import PieceOutput, Rules, format_corrective_issues
from taguru_ray.text.occurrence import Haystack

CUT_OFF_REASONS = {"length", "max_tokens"}
REFUSAL_REASONS = {"content_filter", "refusal"}


class PieceFailed(Exception):
    """The piece could not be extracted; the message is the failure line's tail."""


@dataclass(frozen=True)
class PieceSpec:
    """Everything the loop needs to know about one piece."""

    piece_id: str
    chunk_index: int
    source: str
    conversation: Conversation
    rules: Rules
    haystack: Haystack  # the text the model was shown, for the occurrence check
    offered: Offered = field(default_factory=Offered)


@dataclass(frozen=True)
class LoopPolicy:
    max_attempts: int
    replay_cap: int | None  # TAGURU_EXTRACT_CORRECTIVE_CONTEXT_BYTES
    fact_budget: int
    run_id: str
    lossy: bool = False


@dataclass(frozen=True)
class Accepted:
    output: PieceOutput
    answer: str
    attempt: Record  # {run_id, attempt_seq}
    removed: list[Removal]  # mechanical removals (strict)
    dropped: list[Removal]  # parse-time drops (--lossy)


Complete = Callable[[CompletionRequest], Awaitable[Completion]]
NextSeq = Callable[[], Awaitable[int]]
OnAttempt = Callable[[Record], Awaitable[None]]


@dataclass(frozen=True)
class _Verdict:
    state: str
    parse_error: str | None = None
    issues: tuple[str, ...] = ()
    output: PieceOutput | None = None  # set when the answer parsed
    removed: tuple[Removal, ...] = ()
    dropped: tuple[Removal, ...] = ()
    cut_off: bool = False
    empty: bool = False
    refusal: bool = False

    @property
    def clean(self) -> bool:
        return self.output is not None and not self.issues


def _judge(completion: Completion, spec: PieceSpec, lossy: bool) -> _Verdict:
    """Classify an answer into the attempt states of ADR 0001 §7 and find its faults."""
    if completion.outcome != "answer":
        return _Verdict(completion.outcome, parse_error=completion.error)
    reason = completion.finish_reason or ""
    if reason in REFUSAL_REASONS or completion.refusal:
        detail = f"finish_reason {reason or 'stop'}"
        if completion.refusal:
            detail += f": {completion.refusal}"
        return _Verdict("refusal", parse_error=f"the provider refused ({detail})", refusal=True)
    cut_off = reason in CUT_OFF_REASONS
    parsed = parse_answer(completion.text)
    if not isinstance(parsed, Answer):
        if parsed.empty:
            return _Verdict("empty", parse_error=parsed.message, empty=True)
        state = "length_limited" if cut_off else "stop_malformed"
        return _Verdict(state, parse_error=parsed.message, cut_off=cut_off)
    state = "length_limited" if cut_off else "stop_valid"
    parse_error = "the answer was cut off at the output limit" if cut_off else None
    if lossy:
        output, dropped = lossy_pass(parsed.value, spec.rules)
        return _Verdict(state, parse_error, output=output, dropped=tuple(dropped), cut_off=cut_off)
    judgement = judge(parsed.value, spec.rules, spec.haystack, spec.offered)
    return _Verdict(
        state,
        parse_error,
        issues=tuple(judgement.issues),
        output=judgement.output(spec.rules),
        removed=tuple(judgement.removals),
        cut_off=cut_off,
    )


async def extract_piece(
    spec: PieceSpec,
    policy: LoopPolicy,
    complete: Complete,
    next_seq: NextSeq,
    on_attempt: OnAttempt,
) -> Accepted:
    """Run the loop; returns the accepted answer or raises PieceFailed."""
    messages = spec.conversation.base()
    corrects: Record | None = None
    empty_corrected = False
    attempt = 1
    while True:
        seq = await next_seq()  # issue order: numbered as it is sent, not as it returns
        completion = await complete(CompletionRequest(messages))
        verdict = _judge(completion, spec, policy.lossy)
        record = _attempt_record(
            spec,
            policy,
            "item",
            attempt,
            policy.max_attempts,
            seq,
            corrects,
            messages,
            completion,
            verdict,
        )
        await on_attempt(record)
        this = attempt_ref(policy.run_id, seq)
        if verdict.clean:
            assert verdict.output is not None
            return Accepted(
                verdict.output,
                completion.text or "",
                this,
                list(verdict.removed),
                list(verdict.dropped),
            )
        _fail_if_final(verdict, attempt, policy.max_attempts, empty_corrected)
        if verdict.empty:
            empty_corrected = True
        messages = spec.conversation.corrective(
            completion.text or "", _ask(verdict, policy), policy.replay_cap
        )
        corrects = this
        attempt += 1


def _ask(verdict: _Verdict, policy: LoopPolicy) -> str:
    if verdict.empty:
        return empty_ask()
    if verdict.output is None:
        return syntax_ask(
            verdict.parse_error or "", cut_off=verdict.cut_off, fact_budget=policy.fact_budget
        )
    return validation_ask(format_corrective_issues(list(verdict.issues)), len(verdict.issues))


async def correct_once(
    spec: PieceSpec,
    policy: LoopPolicy,
    answer: str,
    issues: list[str],
    corrects: Record | None,
    complete: Complete,
    next_seq: NextSeq,
    on_attempt: OnAttempt,
) -> Accepted | None:
    """Stage 2's one corrective turn: the corrected answer, or None when it left its
    issues standing (invalid, cut off, refused or empty). Transport failures raise."""
    messages = spec.conversation.corrective(
        answer, validation_ask(format_corrective_issues(issues), len(issues)), policy.replay_cap
    )
    seq = await next_seq()
    completion = await complete(CompletionRequest(messages))
    verdict = _judge(completion, spec, lossy=False)
    await on_attempt(
        _attempt_record(
            spec, policy, "cross_chunk", 1, 1, seq, corrects, messages, completion, verdict
        )
    )
    if verdict.state in ("timeout", "transport"):
        raise PieceFailed(f"the cross-chunk corrective turn failed: {verdict.parse_error}")
    if not verdict.clean or verdict.cut_off:
        return None
    assert verdict.output is not None
    return Accepted(
        verdict.output,
        completion.text or "",
        attempt_ref(policy.run_id, seq),
        list(verdict.removed),
        [],
    )


def _fail_if_final(verdict: _Verdict, attempt: int, max_attempts: int, empty_used: bool) -> None:
    if verdict.state in ("timeout", "transport"):
        raise PieceFailed(verdict.parse_error or verdict.state)
    if verdict.refusal:
        raise PieceFailed(
            f"{verdict.parse_error} — a policy refusal is terminal; "
            "no corrective turn argues with it"
        )
    if verdict.empty and empty_used:
        raise PieceFailed(
            "the model answered empty again after its one correction — a thinking model may "
            "have spent its whole budget before answering"
        )
    if attempt < max_attempts:
        return
    if verdict.empty:
        raise PieceFailed("the model's answer was empty")
    if verdict.output is None:
        raise PieceFailed(f"the model would not produce the JSON object: {verdict.parse_error}")
    raise PieceFailed(
        f"the answer left {len(verdict.issues)} invalid item(s) uncorrected: "
        + "; ".join(verdict.issues)
    )


def _attempt_record(
    spec: PieceSpec,
    policy: LoopPolicy,
    stage: str,
    attempt: int,
    max_attempts: int,
    seq: int,
    corrects: Record | None,
    messages: list[dict[str, str]],
    completion: Completion,
    verdict: _Verdict,
) -> Record:
    """The attempts-log record; the sidecar's is derived from it by the recorder."""
    record: Record = {"type": "attempt", "run_id": policy.run_id, "attempt_seq": seq}
    if corrects is not None:
        record["corrects"] = corrects
    removed: list[Any] = [r.text for r in (*verdict.removed, *verdict.dropped)]
    record.update(
        piece_id=spec.piece_id,
        source=spec.source,
        chunk_index=spec.chunk_index,
        stage=stage,
        attempt=attempt,
        max_attempts=max_attempts,
        state=verdict.state,
        length_limited=verdict.cut_off,
        transport_retries=completion.transport_retries,
        elapsed_seconds=round(completion.elapsed_seconds, 3),
        requested_max_tokens=None,
        finish_reason=completion.finish_reason,
        input_tokens=completion.input_tokens,
        output_tokens=completion.output_tokens,
        total_tokens=completion.total_tokens,
        messages=[_logged_message(message) for message in messages],
        answer=completion.text if completion.outcome == "answer" else None,
        parse_error=verdict.parse_error,
        validation_issues=list(verdict.issues) or None,
        removed_items=removed if verdict.clean and removed else None,
    )
    return record


def _logged_message(message: dict[str, str]) -> dict[str, str]:
    if message["role"] == "system":
        return {"role": "system", "system_sha256": system_sha256(message["content"])}
    return {"role": message["role"], "content": message["content"]}
