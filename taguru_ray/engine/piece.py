"""One round of one piece: prompt → call → parse → validate, with corrective laps.

A round runs at one rung of the structured-output ladder. An answer that is
not the JSON object, or keeps issues the mechanical pass cannot remove, earns
a corrective turn — the conversation rebuilt from the base pair plus only the
latest bad answer — until TAGURU_EXTRACT_MAX_ATTEMPTS is spent. An empty
answer earns at most one correction; a refusal ends the piece at once.

Off the ladder (no --structured-output, no --max-output-tokens) a cut-off
answer that parses is judged like any other and one that does not is asked
for a shorter answer. On the ladder a cut-off answer is never asked to
shrink: it is a runaway (ADR 0035), or it escalates once to the larger
budget (ADR 0019), or the round is exhausted and the caller demotes or
splits; a timeout exhausts the round at once (ADR 0020). Stage 2's single
corrective turn (`correct_once`) is the same lap with a different ask.
Ray-free and disk-free: the model and the records are ports.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from taguru_ray.contract.records import Record, attempt_ref
from taguru_ray.contract.records.attempts import (
    AttemptRecord,
    EscalateMove,
    MoveRecord,
    RunawayMove,
)
from taguru_ray.llm.client import Completion, CompletionRequest
from taguru_ray.llm.ladder import (
    JSON_OBJECT,
    JSON_SCHEMA,
    LadderConfig,
    non_conformance,
    response_format,
)
from taguru_ray.pipeline.carryover import combine, glean_ask
from taguru_ray.pipeline.mechanical import Offered, Removal, judge, lossy_pass
from taguru_ray.pipeline.parse import Answer, parse_answer
from taguru_ray.pipeline.plan import Piece
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

    def __init__(self, message: str, piece: Piece | None = None) -> None:
        super().__init__(message)
        self.piece = piece  # the innermost piece the ladder was working on


@dataclass(frozen=True)
class PieceSpec:
    """Everything a round needs to know about one piece."""

    piece: Piece
    source: str
    conversation: Conversation
    rules: Rules
    haystack: Haystack  # the text the model was shown, for the occurrence check
    offered: Offered = field(default_factory=Offered)

    @property
    def piece_id(self) -> str:
        return self.piece.sha256


@dataclass(frozen=True)
class LoopPolicy:
    max_attempts: int
    replay_cap: int | None  # TAGURU_EXTRACT_CORRECTIVE_CONTEXT_BYTES
    fact_budget: int
    run_id: str
    lossy: bool = False
    ladder: LadderConfig = field(default_factory=lambda: LadderConfig.of("off", 0, 2, 8))


@dataclass(frozen=True)
class Accepted:
    output: PieceOutput
    answer: str
    attempt: Record  # {run_id, attempt_seq}
    removed: list[Removal]  # mechanical removals (strict)
    dropped: list[Removal]  # parse-time drops (--lossy)


@dataclass(frozen=True)
class Exhausted:
    """A ladder round that ended without an answer: the caller demotes or splits."""

    kind: Literal["length", "timeout", "runaway"]
    rung: str | None
    budget: int | None = None  # the last max_tokens sent
    answer_bytes: int = 0


Complete = Callable[[CompletionRequest], Awaitable[Completion]]
NextSeq = Callable[[], Awaitable[int]]
OnRecord = Callable[[Record], Awaitable[None]]


@dataclass(frozen=True)
class Wire:
    """The ports of a round: the model, the run-wide attempt counter, the records."""

    complete: Complete
    next_seq: NextSeq
    on_attempt: OnRecord
    on_move: OnRecord
    on_note: Callable[[str], None] = lambda note: None


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


@dataclass
class _Lap:
    """The running state of one round."""

    messages: list[dict[str, str]]
    budget: int | None
    attempt: int = 1
    judged: int = 0  # answers judged for correction (escalated resends are not)
    escalated: bool = False
    empty_corrected: bool = False
    corrects: Record | None = None


async def run_round(
    spec: PieceSpec, policy: LoopPolicy, wire: Wire, rung: str | None
) -> Accepted | Exhausted:
    """One round at `rung` (None off the ladder); raises PieceFailed on a terminal answer."""
    ladder = policy.ladder
    lap = _Lap(spec.conversation.base(), ladder.max_output_tokens if ladder.engaged else None)
    while True:
        request = CompletionRequest(
            lap.messages,
            max_tokens=lap.budget,
            response_format=response_format(rung) if rung else None,
            retry_timeouts=not ladder.engaged,
        )
        completion, seq, verdict = await _attempt(
            spec, policy, wire, request, "item", lap.attempt, lap.corrects, rung
        )
        this = attempt_ref(policy.run_id, seq)
        if ladder.engaged:
            exhausted = await _ladder_step(spec, policy, wire, rung, lap, completion, verdict)
            if exhausted is not None:
                return exhausted
            if lap.escalated and verdict.cut_off:
                continue  # the neutral resend at the escalated budget
            if rung and verdict.state != "refusal":
                why = non_conformance(rung, completion.text)
                if why:
                    wire.on_note(
                        "provider non-conformance: the answer violated the requested "
                        f"response_format ({why})"
                    )
        if verdict.clean:
            assert verdict.output is not None
            return Accepted(
                verdict.output,
                completion.text or "",
                this,
                list(verdict.removed),
                list(verdict.dropped),
            )
        lap.judged += 1
        _fail_if_final(verdict, lap.judged, policy.max_attempts, lap.empty_corrected)
        if verdict.empty:
            lap.empty_corrected = True
        lap.messages = spec.conversation.corrective(
            completion.text or "", _ask(verdict, policy), policy.replay_cap
        )
        lap.corrects = this
        lap.attempt += 1


async def _ladder_step(
    spec: PieceSpec,
    policy: LoopPolicy,
    wire: Wire,
    rung: str | None,
    lap: _Lap,
    completion: Completion,
    verdict: _Verdict,
) -> Exhausted | None:
    """What the ladder does with a timeout or a cut-off answer (None: carry on)."""
    if verdict.state == "timeout":
        return Exhausted("timeout", rung, lap.budget)
    if not verdict.cut_off:
        return None
    ladder = policy.ladder
    answer_bytes = len((completion.text or "").encode("utf-8"))
    piece_bytes = spec.piece.bytes
    if ladder.runaway_ratio and answer_bytes > ladder.runaway_ratio * piece_bytes:
        await wire.on_move(
            move_record(
                RunawayMove,
                policy.run_id,
                spec,
                f"a {answer_bytes} B answer cut off for a {piece_bytes} B piece is over "
                f"{ladder.runaway_ratio}× its input — a runaway; no escalation, no split",
                piece_bytes=piece_bytes,
                answer_bytes=answer_bytes,
            )
        )
        return Exhausted("runaway", rung, lap.budget, answer_bytes)
    if lap.budget is not None and not lap.escalated:
        higher = ladder.escalated(lap.budget)
        shown = higher if higher is not None else "no cap"
        await wire.on_move(
            move_record(
                EscalateMove,
                policy.run_id,
                spec,
                f"the answer was cut off at max_tokens {lap.budget}; resending once at {shown}",
                from_max_tokens=lap.budget,
                to_max_tokens=higher,
            )
        )
        lap.budget, lap.escalated = higher, True
        lap.attempt += 1
        return None
    return Exhausted("length", rung, lap.budget)


async def _attempt(
    spec: PieceSpec,
    policy: LoopPolicy,
    wire: Wire,
    request: CompletionRequest,
    stage: str,
    attempt: int,
    corrects: Record | None,
    rung: str | None,
    *,
    strict: bool = False,
    judge: Callable[[Completion], _Verdict] | None = None,
    gleans: Record | None = None,
) -> tuple[Completion, int, _Verdict]:
    """One completion: sent, numbered, judged (the extraction judge unless `judge` is
    given; `strict` ignores --lossy) and recorded before anything acts on it. A gleaning
    pass names the attempt whose answer it extends (`gleans`), never as a correction."""
    completion = await wire.complete(request)
    seq = await _seq_of(completion, wire)
    if judge is not None:
        verdict = judge(completion)
    else:
        verdict = _judge(completion, spec, lossy=policy.lossy and not strict)
    record = _attempt_record(
        spec, policy, stage, attempt, seq, corrects, request, completion, verdict, rung, gleans
    )
    await wire.on_attempt(record)
    return completion, seq, verdict


async def _escalate_once(
    spec: PieceSpec, policy: LoopPolicy, wire: Wire, budget: int, what: str
) -> int | None:
    """ADR 0019/0032's one escalated resend: the `move` record, and the budget to resend at."""
    higher = policy.ladder.escalated(budget)
    await wire.on_move(
        move_record(
            EscalateMove,
            policy.run_id,
            spec,
            f"{what} was cut off at max_tokens {budget}; resending once at "
            f"{higher if higher is not None else 'no cap'}",
            from_max_tokens=budget,
            to_max_tokens=higher,
        )
    )
    return higher


async def _seq_of(completion: Completion, wire: Wire) -> int:
    """The attempt's run-wide number: admission control numbered it as it was sent
    (issue order); a model port without admission numbers it here."""
    if completion.attempt_seq is not None:
        return completion.attempt_seq
    return await wire.next_seq()


def move_record(
    move: type[MoveRecord], run_id: str, spec: PieceSpec, reason: str, **fields: Any
) -> Record:
    """An attempts-log `move` record (ADR 0029): what the ladder did, in the stderr's words."""
    return move(
        run_id=run_id, piece_id=spec.piece_id, chunk_index=spec.piece.index, reason=reason, **fields
    ).record()


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
    wire: Wire,
    rung: str | None,
    answer: str,
    issues: list[str],
    corrects: Record | None,
) -> Accepted | None:
    """Stage 2's one corrective turn: the corrected answer, or None when it left its
    issues standing (invalid, cut off, refused or empty). Transport failures raise.

    On the ladder a cut-off correction is resent once at the escalated budget
    (ADR 0032); there is no piece to split, so cut off again it stands.
    """
    ladder = policy.ladder
    messages = spec.conversation.corrective(
        answer, validation_ask(format_corrective_issues(issues), len(issues)), policy.replay_cap
    )
    budget = ladder.max_output_tokens if ladder.engaged else None
    escalated = False
    while True:
        request = CompletionRequest(
            messages, max_tokens=budget, response_format=response_format(rung) if rung else None
        )
        completion, seq, verdict = await _attempt(
            spec, policy, wire, request, "cross_chunk", 1, corrects, rung, strict=True
        )
        if verdict.state in ("timeout", "transport"):
            raise PieceFailed(
                f"the cross-chunk corrective turn failed: {verdict.parse_error}", spec.piece
            )
        if verdict.cut_off and budget is not None and not escalated:
            budget = await _escalate_once(spec, policy, wire, budget, "the cross-chunk correction")
            escalated = True
            continue
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


def _fail_if_final(verdict: _Verdict, judged: int, max_attempts: int, empty_used: bool) -> None:
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
    if judged < max_attempts:
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
    seq: int,
    corrects: Record | None,
    request: CompletionRequest,
    completion: Completion,
    verdict: _Verdict,
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
        messages=[_logged_message(message) for message in request.messages],
        answer=completion.text if completion.outcome == "answer" else None,
        parse_error=verdict.parse_error,
        validation_issues=list(verdict.issues) or None,
        removed_items=removed if verdict.clean and removed else None,
    ).record()


def _logged_message(message: dict[str, str]) -> dict[str, str]:
    if message["role"] == "system":
        return {"role": "system", "system_sha256": system_sha256(message["content"])}
    return {"role": message["role"], "content": message["content"]}


@dataclass(frozen=True)
class Gleaned:
    accepted: Accepted
    passes: int
    failed: int


async def glean(
    spec: PieceSpec,
    policy: LoopPolicy,
    wire: Wire,
    rung: str | None,
    first: Accepted,
    passes: int,
) -> Gleaned:
    """`--gleanings N` (seed 002): up to N more passes asking what the answer missed.

    Each pass's answer is combined with the answer so far and judged whole, so
    an edge between a first-pass name and a gleaned one resolves. A pass that
    lands is counted in `passes`; one that cannot — no JSON, cut off, refused, a
    transport failure, or a combined answer with issues — leaves the answer so
    far standing, is counted in `failed` and ends the gleaning (the same ask
    would get the same answer): a failed gleaning never fails the piece. A pass
    that finds nothing new ends it too. Its attempt records say stage
    ``gleaning`` and ``gleans`` (the attempt it extends), never ``corrects``.
    """
    current, landed, failed = first, 0, 0
    for number in range(1, passes + 1):
        parsed = parse_answer(current.answer)
        if not isinstance(parsed, Answer):
            break
        messages = [
            *spec.conversation.base(),
            {"role": "assistant", "content": current.answer},
            {"role": "user", "content": glean_ask()},
        ]
        request = CompletionRequest(
            messages,
            max_tokens=policy.ladder.max_output_tokens if policy.ladder.engaged else None,
            response_format=response_format(rung) if rung else None,
        )
        completion, _, verdict = await _attempt(
            spec, policy, wire, request, "gleaning", number, None, rung, gleans=current.attempt
        )
        more = parse_answer(completion.text) if verdict.state == "stop_valid" else None
        if not isinstance(more, Answer):
            failed += 1
            break
        combined = combine(parsed.value, more.value)
        if combined == combine(parsed.value, {}):
            landed += 1
            break  # nothing missed: another pass would ask the same of the same answer
        if policy.lossy:
            output, dropped = lossy_pass(combined, spec.rules)
            judged = Accepted(output, "", current.attempt, [], dropped)
        else:
            judgement = judge(combined, spec.rules, spec.haystack, spec.offered)
            if judgement.issues:
                failed += 1
                break
            judged = Accepted(
                judgement.output(spec.rules), "", current.attempt, judgement.removals, []
            )
        answer = json.dumps(combined, ensure_ascii=False, separators=(",", ":"))
        current = Accepted(judged.output, answer, current.attempt, judged.removed, judged.dropped)
        landed += 1
    return Gleaned(current, landed, failed)


async def ask_overview(
    spec: PieceSpec, policy: LoopPolicy, wire: Wire, rung: str | None
) -> tuple[str | None, str | None]:
    """The overview pass's one ask for a chunk (ADR 0034): (answer, None) or (None, why).

    Advisory, so never a corrective turn: a cut-off answer gets ADR 0019's one
    escalated resend when a budget was sent, anything else unusable is simply
    reported. Under a constrained rung it asks for json_object — the extraction
    schema is the wrong shape for this answer.
    """
    ladder = policy.ladder
    budget = ladder.max_output_tokens if ladder.engaged else None
    shape = response_format(JSON_OBJECT) if rung in (JSON_SCHEMA, JSON_OBJECT) else None
    attempt, escalated = 1, False
    while True:
        request = CompletionRequest(
            spec.conversation.base(),
            max_tokens=budget,
            response_format=shape,
            retry_timeouts=not ladder.engaged,
        )
        completion, _, verdict = await _attempt(
            spec, policy, wire, request, "overview", attempt, None, rung, judge=_overview_verdict
        )
        if verdict.state == "stop_valid":
            return completion.text or "", None
        if verdict.cut_off and budget is not None and not escalated:
            budget = await _escalate_once(spec, policy, wire, budget, "the overview answer")
            escalated, attempt = True, attempt + 1
            continue
        return None, verdict.parse_error


def _overview_verdict(completion: Completion) -> _Verdict:
    """The attempt state; anything but stop_valid says in `parse_error` why it is unusable."""
    if completion.outcome != "answer":
        return _Verdict(completion.outcome, parse_error=completion.error)
    reason = completion.finish_reason or ""
    if reason in REFUSAL_REASONS or completion.refusal:
        why = f"the provider refused (finish_reason {reason or 'stop'})"
        return _Verdict("refusal", parse_error=why, refusal=True)
    text = (completion.text or "").strip()
    if not text:
        return _Verdict("empty", parse_error="empty answer", empty=True)
    if reason in CUT_OFF_REASONS:
        why = "the answer was cut off at the output limit"
        return _Verdict("length_limited", parse_error=why, cut_off=True)
    try:
        json.loads(text.strip("`").removeprefix("json").strip() if text.startswith("```") else text)
    except ValueError as error:
        return _Verdict("stop_malformed", parse_error=f"not a JSON object ({error})")
    return _Verdict("stop_valid")
