"""How an answer is judged: the attempt states of taguru ADR 0001 §7, and the faults found."""

from __future__ import annotations

import json
from dataclasses import dataclass

from taguru_ray.contract.completion import Completion
from taguru_ray.pipeline.mechanical import Removal, judge, lossy_pass
from taguru_ray.pipeline.parse import Answer, parse_answer
from taguru_ray.pipeline.round_types import PieceSpec
from taguru_ray.pipeline.validate import PieceOutput

CUT_OFF_REASONS = {"length", "max_tokens"}
REFUSAL_REASONS = {"content_filter", "refusal"}


@dataclass(frozen=True)
class AttemptVerdict:
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


def judge_answer(completion: Completion, spec: PieceSpec, lossy: bool) -> AttemptVerdict:
    """Classify an answer into the attempt states of taguru ADR 0001 §7 and find its faults."""
    if completion.outcome != "answer":
        return AttemptVerdict(completion.outcome, parse_error=completion.error)
    reason = completion.finish_reason or ""
    if reason in REFUSAL_REASONS or completion.refusal:
        detail = f"finish_reason {reason or 'stop'}"
        if completion.refusal:
            detail += f": {completion.refusal}"
        return AttemptVerdict(
            "refusal", parse_error=f"the provider refused ({detail})", refusal=True
        )
    cut_off = reason in CUT_OFF_REASONS
    parsed = parse_answer(completion.text)
    if not isinstance(parsed, Answer):
        if parsed.empty:
            return AttemptVerdict("empty", parse_error=parsed.message, empty=True)
        state = "length_limited" if cut_off else "stop_malformed"
        return AttemptVerdict(state, parse_error=parsed.message, cut_off=cut_off)
    state = "length_limited" if cut_off else "stop_valid"
    parse_error = "the answer was cut off at the output limit" if cut_off else None
    if lossy:
        output, dropped = lossy_pass(parsed.value, spec.rules)
        return AttemptVerdict(
            state, parse_error, output=output, dropped=tuple(dropped), cut_off=cut_off
        )
    judgement = judge(parsed.value, spec.rules, spec.haystack, spec.offered)
    return AttemptVerdict(
        state,
        parse_error,
        issues=tuple(judgement.issues),
        output=judgement.output(spec.rules),
        removed=tuple(judgement.removals),
        cut_off=cut_off,
    )


def judge_overview(completion: Completion) -> AttemptVerdict:
    """The attempt state; anything but stop_valid says in `parse_error` why it is unusable."""
    if completion.outcome != "answer":
        return AttemptVerdict(completion.outcome, parse_error=completion.error)
    reason = completion.finish_reason or ""
    if reason in REFUSAL_REASONS or completion.refusal:
        why = f"the provider refused (finish_reason {reason or 'stop'})"
        return AttemptVerdict("refusal", parse_error=why, refusal=True)
    text = (completion.text or "").strip()
    if not text:
        return AttemptVerdict("empty", parse_error="empty answer", empty=True)
    if reason in CUT_OFF_REASONS:
        why = "the answer was cut off at the output limit"
        return AttemptVerdict("length_limited", parse_error=why, cut_off=True)
    try:
        json.loads(text.strip("`").removeprefix("json").strip() if text.startswith("```") else text)
    except ValueError as error:
        return AttemptVerdict("stop_malformed", parse_error=f"not a JSON object ({error})")
    return AttemptVerdict("stop_valid")
