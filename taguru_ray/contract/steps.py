"""The pipeline's named steps (taguru ADR 0030, table edition 2): a public contract.

The names are what `--resume-from`, the records and the docs use; positions
may shift when a step is added, names never do. `taguru-ray extract --steps`
prints this table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    name: str
    scope: str
    call: bool  # does it spend a model call
    produces: str


STEPS: tuple[Step, ...] = (
    Step("read", "segment", False, "text, sha256, paragraphs → segment, redaction"),
    Step("structure", "segment", False, "heading units → structure"),
    Step("plan", "segment", False, "chunk plan → chunk"),
    Step("overview", "segment", True, "synopses and cast → overview; overview attempts"),
    Step("annotate", "chunk", False, "context block → chunk_context"),
    Step("steer", "segment", False, "candidates, vocabulary, context names, schema → steering"),
    Step("prompt", "piece", False, "messages → attempts messages and system"),
    Step("call", "attempt", True, "answer, finish_reason, usage, retries, state → attempt"),
    Step("parse", "attempt", False, "the model output (no record of its own)"),
    Step("validate", "attempt", False, "mechanical pass → removed_items, loss removed"),
    Step("reconcile", "segment", True, "Stage 2 correction and prunes → cross_chunk, loss"),
    Step("merge", "segment", False, "the extraction → item, loss dropped/duplicate"),
    Step("render", "segment", False, "the source file (no record of its own)"),
    Step("verify", "segment", False, "coverage → paragraph, uncovered"),
)
STEP_NAMES: tuple[str, ...] = tuple(step.name for step in STEPS)


def render_table() -> str:
    rows = [("step", "scope", "model call", "produces")]
    rows += [(s.name, s.scope, "yes" if s.call else "—", s.produces) for s in STEPS]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3]
        for row in rows
    )


# --resume-from STEP (#822): every name folds onto one of three behaviours.
STEP_FOLD = {
    **{
        step: ("off", False)
        for step in ("read", "structure", "plan", "overview", "annotate", "steer")
    },
    "prompt": ("auto", True),  # replay call's answers, never pin the conversation
    **{
        step: ("auto", False)
        for step in ("call", "parse", "validate", "reconcile", "merge", "render", "verify")
    },
}
