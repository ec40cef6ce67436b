"""One round of one piece: prompt → call → parse → validate, with corrective laps.

A round runs at one rung of the structured-output ladder. An answer that is
not the JSON object, or keeps issues the mechanical pass cannot remove, earns
a corrective turn — the conversation rebuilt from the base pair plus only the
latest bad answer — until TAGURU_EXTRACT_MAX_ATTEMPTS is spent. An empty
answer earns at most one correction; a refusal ends the piece at once.

Off the ladder (no --structured-output, no --max-output-tokens) a cut-off
answer that parses is judged like any other and one that does not is asked
for a shorter answer. On the ladder a cut-off answer is never asked to
shrink: it is a runaway (taguru ADR 0035), or it escalates once to the larger
budget (taguru ADR 0019), or the round is exhausted and the caller demotes or
splits; a timeout exhausts the round at once (taguru ADR 0020). Stage 2's single
corrective turn (`correct_once`) is the same lap with a different ask.

Each is a program (`effects`): it yields a completion to make, a record to
log or a note to say, and gets back what came of it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records import Record, attempt_ref
from taguru_ray.contract.records.attempts import EscalateMove, RunawayMove
from taguru_ray.pipeline.attempt_records import attempt_record, move_record
from taguru_ray.pipeline.carryover import combine, glean_ask
from taguru_ray.pipeline.effects import Answered, Ask, LogAttempt, LogMove, Program, Say
from taguru_ray.pipeline.ladder import JSON_OBJECT, JSON_SCHEMA, non_conformance, response_format
from taguru_ray.pipeline.mechanical import judge, lossy_pass
from taguru_ray.pipeline.parse import Answer, parse_answer
from taguru_ray.pipeline.prompt import empty_ask, syntax_ask, validation_ask
from taguru_ray.pipeline.round_types import (
    Accepted,
    Exhausted,
    LoopPolicy,
    PieceFailed,
    PieceSpec,
)
from taguru_ray.pipeline.validate import format_corrective_issues
from taguru_ray.pipeline.verdict import AttemptVerdict, judge_answer, judge_overview

__all__ = [
    "Accepted",
    "Exhausted",
    "LoopPolicy",
    "PieceFailed",
    "PieceSpec",
    "ask_overview",
    "correct_once",
    "glean",
    "move_record",
    "run_round",
]


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


def run_round(
    spec: PieceSpec, policy: LoopPolicy, rung: str | None
) -> Program[Accepted | Exhausted]:
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
        completion, seq, verdict = yield from _attempt(
            spec, policy, request, "item", lap.attempt, lap.corrects, rung
        )
        this = attempt_ref(policy.run_id, seq)
        if ladder.engaged:
            exhausted = yield from _ladder_step(spec, policy, rung, lap, completion, verdict)
            if exhausted is not None:
                return exhausted
            if lap.escalated and verdict.cut_off:
                continue  # the neutral resend at the escalated budget
            if rung and verdict.state != "refusal":
                why = non_conformance(rung, completion.text)
                if why:
                    yield Say(
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


def _ladder_step(
    spec: PieceSpec,
    policy: LoopPolicy,
    rung: str | None,
    lap: _Lap,
    completion: Completion,
    verdict: AttemptVerdict,
) -> Program[Exhausted | None]:
    """What the ladder does with a timeout or a cut-off answer (None: carry on)."""
    if verdict.state == "timeout":
        return Exhausted("timeout", rung, lap.budget)
    if not verdict.cut_off:
        return None
    ladder = policy.ladder
    answer_bytes = len((completion.text or "").encode("utf-8"))
    piece_bytes = spec.piece.bytes
    if ladder.runaway_ratio and answer_bytes > ladder.runaway_ratio * piece_bytes:
        yield LogMove(
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
        lap.budget = yield from _escalate_once(spec, policy, lap.budget, "the answer")
        lap.escalated = True
        lap.attempt += 1
        return None
    return Exhausted("length", rung, lap.budget)


def _attempt(
    spec: PieceSpec,
    policy: LoopPolicy,
    request: CompletionRequest,
    stage: str,
    attempt: int,
    corrects: Record | None,
    rung: str | None,
    *,
    strict: bool = False,
    judge: Callable[[Completion], AttemptVerdict] | None = None,
    gleans: Record | None = None,
) -> Program[tuple[Completion, int, AttemptVerdict]]:
    """One completion: sent, numbered, judged (the extraction judge unless `judge` is
    given; `strict` ignores --lossy) and recorded before anything acts on it. A gleaning
    pass names the attempt whose answer it extends (`gleans`), never as a correction."""
    answered: Answered = yield Ask(request)
    completion, seq = answered.completion, answered.attempt_seq
    if judge is not None:
        verdict = judge(completion)
    else:
        verdict = judge_answer(completion, spec, lossy=policy.lossy and not strict)
    record = attempt_record(
        spec, policy, stage, attempt, seq, corrects, request, completion, verdict, rung, gleans
    )
    yield LogAttempt(record)
    return completion, seq, verdict


def _escalate_once(
    spec: PieceSpec, policy: LoopPolicy, budget: int, what: str
) -> Program[int | None]:
    """taguru ADR 0019/0032's one escalated resend of a cut-off answer — an extraction round's,
    Stage 2's or an overview's: the `move` record, and the budget to resend at."""
    higher = policy.ladder.escalated(budget)
    yield LogMove(
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


def _ask(verdict: AttemptVerdict, policy: LoopPolicy) -> str:
    if verdict.empty:
        return empty_ask()
    if verdict.output is None:
        return syntax_ask(
            verdict.parse_error or "", cut_off=verdict.cut_off, fact_budget=policy.fact_budget
        )
    return validation_ask(format_corrective_issues(list(verdict.issues)), len(verdict.issues))


def correct_once(
    spec: PieceSpec,
    policy: LoopPolicy,
    rung: str | None,
    answer: str,
    issues: list[str],
    corrects: Record | None,
) -> Program[Accepted | None]:
    """Stage 2's one corrective turn: the corrected answer, or None when it left its
    issues standing (invalid, cut off, refused or empty). Transport failures raise.

    On the ladder a cut-off correction is resent once at the escalated budget
    (taguru ADR 0032); there is no piece to split, so cut off again it stands.
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
        completion, seq, verdict = yield from _attempt(
            spec, policy, request, "cross_chunk", 1, corrects, rung, strict=True
        )
        if verdict.state in ("timeout", "transport"):
            raise PieceFailed(
                f"the cross-chunk corrective turn failed: {verdict.parse_error}", spec.piece
            )
        if verdict.cut_off and budget is not None and not escalated:
            budget = yield from _escalate_once(spec, policy, budget, "the cross-chunk correction")
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


def _fail_if_final(
    verdict: AttemptVerdict, judged: int, max_attempts: int, empty_used: bool
) -> None:
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


@dataclass(frozen=True)
class Gleaned:
    accepted: Accepted
    passes: int
    failed: int


def glean(
    spec: PieceSpec,
    policy: LoopPolicy,
    rung: str | None,
    first: Accepted,
    passes: int,
) -> Program[Gleaned]:
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
        completion, _, verdict = yield from _attempt(
            spec, policy, request, "gleaning", number, None, rung, gleans=current.attempt
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


def ask_overview(
    spec: PieceSpec, policy: LoopPolicy, rung: str | None
) -> Program[tuple[str | None, str | None]]:
    """The overview pass's one ask for a chunk (taguru ADR 0034): (answer, None) or (None, why).

    Advisory, so never a corrective turn: a cut-off answer gets taguru ADR 0019's one
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
        completion, _, verdict = yield from _attempt(
            spec, policy, request, "overview", attempt, None, rung, judge=judge_overview
        )
        if verdict.state == "stop_valid":
            return completion.text or "", None
        if verdict.cut_off and budget is not None and not escalated:
            budget = yield from _escalate_once(spec, policy, budget, "the overview answer")
            escalated, attempt = True, attempt + 1
            continue
        return None, verdict.parse_error
