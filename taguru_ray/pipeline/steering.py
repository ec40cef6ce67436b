"""The steer step for one segment, and the system prompt a replay may pin instead."""

from __future__ import annotations

from taguru_ray.contract.context_schema import schema_offer
from taguru_ray.contract.settings.groups import Prompting
from taguru_ray.pipeline.prompt import system_prompt
from taguru_ray.pipeline.replay_book import ReplayBook
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.pipeline.segment_job import SegmentJob
from taguru_ray.pipeline.steer import Steering
from taguru_ray.text.candidates import candidates, render_candidates


def steering_for(job: SegmentJob, prompt: Prompting, inputs: RunInputs, text: str) -> Steering:
    """The steer step's output for one segment: what taguru-ray offers the model.

    Blocks in prompt order after the label reuse list: the context's names
    (--vocabulary), the schema (its relations the run already uses first),
    then the segment's own names (--candidates).
    """
    names = tuple(candidates(text)) if prompt.candidates else ()
    offer = (
        schema_offer(inputs.schema, (use.label for use in job.vocabulary))
        if inputs.schema is not None
        else None
    )
    return Steering(
        job.vocabulary,
        prompt.questions,
        prompt.fact_budget,
        blocks=(inputs.context_block, offer.text if offer else "", render_candidates(names)),
        context_names=inputs.context_names,
        schema=offer.to_json() if offer else None,
        candidates=names,
    )


def system_for(
    steering: Steering, book: ReplayBook | None, pin: bool
) -> tuple[str, str | None, list[str]]:
    """The segment's system prompt: this run's, or the recording's when a replay (`book`)
    pins the one it names. A log naming several (carryover, an overview pass, several
    runs) pins them piece by piece instead (`SegmentState.system_of`)."""
    system = system_prompt(steering)
    if book is None or not pin:
        return system, None, []
    pinned = book.pinned_system()
    if pinned is None:
        return system, None, []
    content, recorded_run = pinned
    notes = []
    if content != system:
        notes.append(
            "the recorded system prompt differs from this run's — replaying with the recorded one"
        )
    return content, recorded_run, notes
