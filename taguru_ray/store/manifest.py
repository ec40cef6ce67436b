"""The manifest ``.extract-manifest.json``: the skip index of written segments.

Shape (CONTRACT.md section 2): ``{"documents": {<input path>: <entry>}}``,
pretty-printed, keys sorted. An entry records the compute inputs its source
file was made from; a segment is skipped only when every input is equal and
the recorded output file still exists. A missing or unreadable manifest means
everything re-extracts — never a false "unchanged". Only successes are
recorded.
"""

from __future__ import annotations

import json
from typing import Any

from taguru_ray.settings import MANIFEST_FIELDS
from taguru_ray.store.outdir import MANIFEST, OutDir

# Fields an older entry may lack; absent means the default run's value.
ENTRY_DEFAULTS: dict[str, Any] = {
    "context": "",
    "questions_n": 0,
    "no_passage": False,
    "description": "",
    "fact_budget": 0,
    "structured_output": "",
    "max_output_tokens": 0,
    "escalation_factor": "",
    "runaway_ratio": "",
    "chunk_context": "",
    "chunk_bytes": "",
    "lossy": False,
    "schema_digest": "",
    "candidates": "",
    "redaction": "",
    "vocabulary_digest": "",
    "source_id": "",
    "date": 0,
    "tags": [],
}


class Manifest:
    def __init__(self, out: OutDir, entries: dict[str, dict[str, Any]]) -> None:
        self._out = out
        self.entries = entries

    @classmethod
    def load(cls, out: OutDir) -> tuple[Manifest, str | None]:
        """The manifest and, when it could not be used, the one stderr note saying so."""
        data = out.read(MANIFEST)
        if data is None:
            return cls(out, {}), None
        try:
            documents = json.loads(data.decode("utf-8"))["documents"]
            if not isinstance(documents, dict):
                raise TypeError("documents is not an object")
            entries = {
                str(path): _normalised(entry)
                for path, entry in documents.items()
                if isinstance(entry, dict)
            }
        except (ValueError, KeyError, TypeError) as error:
            note = (
                f"ignoring an unreadable manifest at {out.path(MANIFEST)} ({error}) — every "
                "segment re-extracts"
            )
            return cls(out, {}), note
        return cls(out, entries), None

    def unchanged(self, source: str, inputs: dict[str, Any], existing: set[str]) -> bool:
        entry = self.entries.get(source)
        return entry is not None and entry == inputs and inputs["output"] in existing

    def previous_output(self, source: str) -> str | None:
        entry = self.entries.get(source)
        return entry.get("output") if entry else None

    def record(self, source: str, inputs: dict[str, Any]) -> None:
        """Record a written segment and rewrite the manifest atomically."""
        self.entries[source] = dict(inputs)
        self._out.write(MANIFEST, self.render())

    def compact(self) -> None:
        """Settle the manifest at run end (every `record` already rewrote it whole)."""

    def render(self) -> bytes:
        documents = {
            path: {key: entry[key] for key in MANIFEST_FIELDS if key in entry}
            for path, entry in sorted(self.entries.items())
        }
        text = json.dumps({"documents": documents}, ensure_ascii=False, indent=2)
        return (text + "\n").encode("utf-8")


def _normalised(entry: dict[str, Any]) -> dict[str, Any]:
    merged = {**ENTRY_DEFAULTS, **entry}
    return {key: merged[key] for key in MANIFEST_FIELDS if key in merged}
