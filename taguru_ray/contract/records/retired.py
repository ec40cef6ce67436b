"""The record of one segment `extract --prune` retired (ADR 0083).

A run that retires segments writes one line per segment to
``.extract-retired/<run_id>.jsonl`` once the prune is done: the source it was
(the manifest's key), the id its header wrote and the context it went to (what
`import` needs to retract it), its content digest, when, and the run. The same
lines, in ``<run_id>.plan.jsonl``, are the prune's plan while it is under way:
a run killed mid-prune leaves the plan, and the next run completes it.

`retraction_header` is the header-only batch that retracts the same source
with Taguru's own `taguru import` (a file that is only a header is a pure
retraction there): ``<run_id>.retract.jsonl`` holds one per record.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar

from taguru_ray.contract.records.typed import WHEN_SET, Typed
from taguru_ray.contract.source_file import FORMAT_VERSION

RUN_ID = re.compile(r"[0-9a-f]{16}")
RECORDS_SUFFIX = ".jsonl"
PLAN_SUFFIX = ".plan.jsonl"
RETRACT_SUFFIX = ".retract.jsonl"


class RetiredRecord(Typed):
    TYPE: ClassVar[str] = "retired"
    run_id: str  # the run that retired it
    source: str  # the manifest's key: the input path as the run that wrote it saw it
    id: str  # the source id its header wrote (what a context knows it by)
    context_id: str  # the header's context_id
    name: Annotated[str | None, WHEN_SET] = None  # the header's create.name, when it had one
    sha256: str  # the segment text's digest, as the manifest held it
    output: str  # its source file's name, in --out before and in <run_id>/ now
    retired_at: int  # epoch seconds

    def context(self, override: str | None = None) -> str:
        """The local context's name, as `import` names a file's: --context, else the
        header's create name, else its context_id."""
        return override or self.name or self.context_id

    def retraction_header(self) -> dict[str, Any]:
        """The header-only batch retracting this source (no create block: a retraction
        never creates a context)."""
        return {"type": "source", "version": FORMAT_VERSION, "id": self.id,
                "context_id": self.context_id}  # fmt: skip


def records_name(run_id: str) -> str:
    """The run's records, written last: the prune is done."""
    return f"{run_id}{RECORDS_SUFFIX}"


def plan_name(run_id: str) -> str:
    """The run's plan, there only while its prune is unfinished."""
    return f"{run_id}{PLAN_SUFFIX}"


def retract_name(run_id: str) -> str:
    """The run's retractions as a Taguru import stream."""
    return f"{run_id}{RETRACT_SUFFIX}"


def run_of(name: str, suffix: str) -> str | None:
    """The run id a retired folder's file name holds, for that kind of file; else None."""
    if not name.endswith(suffix):
        return None
    run_id = name[: -len(suffix)]
    return run_id if RUN_ID.fullmatch(run_id) else None
