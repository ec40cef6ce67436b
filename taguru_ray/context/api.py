"""What an embedded Taguru context answers: the interface `serve` and `search` read.

Every method returns the wire `result` object of the route it stands for
(EVALUATE.md §1, the recorded shapes under the anchor's `wire/http/`), so the
HTTP server only parses requests, calls one method and wraps the answer in
the envelope. Failures are `ContextError`s carrying their HTTP status and
wire `code`; the server turns them into the error envelope verbatim.
Implementations must allow concurrent readers (the server calls from a
thread pool) and one writer at a time (imports).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from taguru_ray.context.errors import (
    Namespace,
    Position,
)

if TYPE_CHECKING:
    from taguru_ray.context.evidence_request import EvidenceRequest


class ContextStore(Protocol):
    """An embedded store of Taguru contexts (one SQLite file per store folder)."""

    def contexts(self) -> dict[str, Any]:
        """GET /contexts → `{"contexts": [DirectoryEntry…], "total": n}`."""
        ...

    def context(self, name: str) -> dict[str, Any]:
        """GET /contexts/{name} → one DirectoryEntry (name, description, pinned, loaded,
        dice_floor, semantic_floor, stats, usage, revision, schema_mode)."""
        ...

    def context_names(self) -> list[str]:
        """Every context's name, byte-ordered (what `/metrics` counts)."""
        ...

    def embeddings(self, name: str) -> dict[str, Any]:
        """GET /contexts/{name}/embeddings → `{"provider_model": str|null, "glosses"?,
        "passages"?}`."""
        ...

    def sources(
        self, name: str, *, limit: int = 1000, after: str | None = None, prefix: str | None = None
    ) -> dict[str, Any]:
        """GET /contexts/{name}/sources → `{"total", "sources": [id…], "entries": [{name,
        stored_at?, date?, tags?}]}`: byte-ordered ids with a stored passage, `after`
        exclusive."""
        ...

    def search(
        self,
        name: str,
        query: str,
        *,
        limit: int = 5,
        semantic_floor: float | None = None,
        tags: Sequence[str] = (),
        since: int | None = None,
        until: int | None = None,
    ) -> dict[str, Any]:
        """POST /contexts/{name}/sources/search → `{"plan": {"contexts": [{context, lanes,
        filter?}]}, "hits": [{source, paragraph, score, text, lanes}]}` (EVALUATE.md §2.4)."""
        ...

    def resolve(
        self,
        name: str,
        cue: str,
        *,
        namespace: Namespace = "concept",
        limit: int = 1000,
        dice_floor: float | None = None,
        semantic_floor: float | None = None,
    ) -> list[dict[str, Any]]:
        """POST /contexts/{name}/resolve (concept) and /resolve_label (label) → a bare
        array, best first: `[{name, score, tier, kind?, gloss?, types?}]` (§2.2)."""
        ...

    def query(
        self,
        name: str,
        *,
        subject: Position = None,
        label: Position = None,
        object: Position = None,  # the wire's own name
        limit: int = 100,
        since: int | None = None,
        until: int | None = None,
    ) -> dict[str, Any]:
        """POST /contexts/{name}/query → `{"total", "matches": [{subject, label, object,
        weight, count, attributions: [{source, weight, count, paragraph, section,
        locator}]}], "plan": {"contexts": [name]}}` (§1.4, §2.5)."""
        ...

    def citation(self, name: str, source: str, paragraph: int) -> dict[str, Any]:
        """POST /contexts/{name}/citations → `{"text", "source", "section", "locator"}`;
        404 `no_source` / `no_paragraph` (§1.5)."""
        ...

    def lookup_passages(self, name: str, sources: Sequence[str]) -> dict[str, Any]:
        """POST /contexts/{name}/sources/lookup → `{"passages": {source: text}, "missing":
        [source…]}`. The write routes' methods are `context.writes.ContextWrites`."""
        ...

    def evidence(self, name: str, request: EvidenceRequest) -> dict[str, Any]:
        """POST /contexts/{name}/evidence → an EvidencePackage `{items, citations, budget,
        omitted, omitted_total, omitted_by_reason, plan}` (EVALUATE.md §1.6)."""
        ...

    def import_stream(self, data: bytes, *, dry_run: bool = False) -> dict[str, Any]:
        """POST /import: a batch stream (one or more source files) → `{"batches": [...]}`;
        a refusal applies nothing of the refused file (§4.1)."""
        ...
