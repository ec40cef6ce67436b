"""A manifest entry (CONTRACT.md section 2) and a checkpoint's fingerprint (section 3).

The compute inputs a segment was extracted under, plus what names its file.
`settings` computes them; `store.manifest` stores and compares them; both read
the field list from here. A field an older entry lacks reads as its default
here — the default run's value — so the entry still matches.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from taguru_ray.contract.records.typed import WHEN_SET, Typed


class CheckpointFingerprint(Typed):
    """The compute inputs a checkpoint is bound to, in the order its file holds them."""

    sha256: str
    model: str
    prompt_version: int
    context: str = ""
    questions_n: int = 0
    no_passage: bool = False
    description: str = ""
    fact_budget: int = 0
    structured_output: str = ""
    max_output_tokens: int = 0
    escalation_factor: str = ""
    runaway_ratio: str = ""
    chunk_bytes: str = ""
    chunk_context: str = ""
    lossy: bool = False
    schema_digest: str = ""
    candidates: str = ""
    redaction: str = ""
    vocabulary_digest: str = ""
    # taguru-ray's own inputs (seed 002): present only off their defaults.
    carryover: Annotated[int | None, WHEN_SET] = None
    gleanings: Annotated[int | None, WHEN_SET] = None
    # A document's converter and its version (ADR 0078): absent for a text segment.
    converter: Annotated[str | None, WHEN_SET] = None


class ManifestEntry(Typed):
    """One segment's entry: its compute inputs, then what names its file.

    Declared apart from `CheckpointFingerprint`, not derived from it: the two
    files order the same inputs differently (`chunk_context` before
    `chunk_bytes` here, after it there — CONTRACT.md sections 2 and 3), and
    `tests/test_records.py` pins each order.
    """

    sha256: str
    model: str
    prompt_version: int
    context: str = ""
    questions_n: int = 0
    no_passage: bool = False
    description: str = ""
    fact_budget: int = 0
    structured_output: str = ""
    max_output_tokens: int = 0
    escalation_factor: str = ""
    runaway_ratio: str = ""
    chunk_context: str = ""
    chunk_bytes: str = ""
    lossy: bool = False
    schema_digest: str = ""
    candidates: str = ""
    redaction: str = ""
    vocabulary_digest: str = ""
    carryover: Annotated[int | None, WHEN_SET] = None
    gleanings: Annotated[int | None, WHEN_SET] = None
    # A document's converter and its version (ADR 0078): absent for a text segment.
    converter: Annotated[str | None, WHEN_SET] = None
    source_id: str = ""
    date: int = 0
    tags: list[str] = Field(default_factory=list)
    output: str


MANIFEST_FIELDS = ManifestEntry.keys()
CHECKPOINT_FIELDS = CheckpointFingerprint.keys()
# What an older entry's absent field means: the default run's value.
ENTRY_DEFAULTS = {
    name: info.get_default(call_default_factory=True)
    for name, info in ManifestEntry.model_fields.items()
    if not info.is_required() and info.get_default(call_default_factory=True) is not None
}
