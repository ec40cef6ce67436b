"""A manifest entry's fields (CONTRACT.md section 2), in serialisation order.

The compute inputs a segment was extracted under, plus what names its file.
`settings` computes them; `store.manifest` stores and compares them; both read
the field list from here.
"""

from __future__ import annotations

MANIFEST_FIELDS = (
    "sha256",
    "model",
    "prompt_version",
    "context",
    "questions_n",
    "no_passage",
    "description",
    "fact_budget",
    "structured_output",
    "max_output_tokens",
    "escalation_factor",
    "runaway_ratio",
    "chunk_context",
    "chunk_bytes",
    "lossy",
    "schema_digest",
    "candidates",
    "redaction",
    "vocabulary_digest",
    "carryover",
    "gleanings",
    "source_id",
    "date",
    "tags",
    "output",
)
