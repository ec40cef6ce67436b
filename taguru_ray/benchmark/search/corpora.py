"""One corpus context per model: its name, whose it is, and building or probing it
(BENCHMARK.md §3.2).

A corpus is ``<prefix>::<model_id>``, made by importing the model's batch files of
one run with each header's ``context`` replaced and ``create`` set to an ownership
marker. The marker names the extract run, the model and the run index, so this
verb never imports into a context it did not make — nor into one it made from
another ``--run``, which import (replacing per source, never removing one) would
silently mix into this one. Every line after the header is sent byte for byte:
what extract wrote is what the server reads.

A newest-shape header names its context by ``context_id`` (the extract context's
UUID, the same for every model). That key is dropped: a header may give
``context_id`` or ``context`` but not both, and a corpus is a context name.

`build_corpus` and `probe_corpus` take a `TaguruClient` and a `ResultsReader` and
return a `CorpusBlock`; a failure is a block's outcome, never an exception, so one
model's broken cell does not stop the others being measured.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taguru_ray.benchmark.search.results import Results, ResultsReader
from taguru_ray.remote.client import RemoteError, TaguruClient

# Kept as the reference spells it: the marker lives on the server, where a corpus the
# reference built for the same run, model and run index is the same corpus.
MARKER_PREFIX = "taguru benchmark search corpus"
AVAILABLE = ("built", "search_only")


class HeaderError(ValueError):
    """A batch file whose first line cannot be rewritten (empty, or not a JSON object)."""


@dataclass(frozen=True)
class CorpusBlock:
    """One model's entry in retrieval.json's ``corpus`` map."""

    context: str
    outcome: str  # built | search_only | skipped | rejected | failed
    reason: str | None = None
    segments_imported: int = 0
    segments_failed: int = 0
    passage_vectors: dict[str, Any] | None = None  # {model, rows}, when the server has some

    @property
    def available(self) -> bool:
        return self.outcome in AVAILABLE

    def to_json(self) -> dict[str, Any]:
        block: dict[str, Any] = {"context": self.context, "outcome": self.outcome}
        if self.reason is not None:
            block["reason"] = self.reason
        block["segments_imported"] = self.segments_imported
        block["segments_failed"] = self.segments_failed
        if self.passage_vectors is not None:
            block["passage_vectors"] = self.passage_vectors
        return block


def corpus_name(prefix: str, model_id: str) -> str:
    return f"{prefix}::{model_id}"


def ownership_marker(run_id: str, model_id: str, run_index: int) -> str:
    """The ``create.description`` that says this verb made the context for this cell.
    `run_index` is in it because `run_id` names the whole extract matrix."""
    return f"{MARKER_PREFIX}: run {run_id}, model {model_id}, run_index {run_index}"


def rewrite_header(data: bytes, context: str, marker: str) -> bytes:
    """The batch file with line 1's ``context`` set (any ``context_id`` dropped) and
    ``create`` overwritten with ``{"description": marker}``; later non-blank lines
    byte-identical, one ``\\n`` each.

    The header is re-serialized compact with sorted keys (as the reference's serde_json
    writes a free-form object). HeaderError for an empty file or a header that is not
    a JSON object.
    """
    if not data:
        raise HeaderError("empty batch file")
    lines = data.split(b"\n")
    try:
        header = json.loads(lines[0].removesuffix(b"\r").decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise HeaderError(f"header is not JSON: {error}") from None
    if not isinstance(header, dict):
        raise HeaderError("header is not a JSON object")
    header.pop("context_id", None)
    header["context"] = context
    header["create"] = {"description": marker}
    head = json.dumps(header, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    body = [line.removesuffix(b"\r") for line in lines[1:]]
    kept = [line for line in body if line.strip()]
    return b"\n".join([head.encode("utf-8"), *kept]) + b"\n"


def build_corpus(
    client: TaguruClient,
    reader: ResultsReader,
    results: Results,
    *,
    model_id: str,
    run: int,
    context: str,
) -> CorpusBlock:
    """Build `model_id`'s corpus `context` from its cell of run `run` (§3.2 steps 1–5)."""
    marker = ownership_marker(results.run_id, model_id, run)
    try:
        entry = client.context(context).result
    except RemoteError as error:
        if error.status != 404:
            return CorpusBlock(context, "failed", error.cut())
    else:
        found = entry.get("description") if isinstance(entry, Mapping) else None
        if found != marker:
            return CorpusBlock(
                context,
                "rejected",
                f"context '{context}' exists and its description is not this run's ownership "
                f"marker ({marker!r}) — nothing was imported; pick another --context-prefix",
            )
    cell = results.cell(model_id, run)
    if cell is None:
        return CorpusBlock(context, "skipped", f"no cell recorded for model '{model_id}' run {run}")
    if cell.outcome != "complete":
        return CorpusBlock(
            context,
            "skipped",
            f"cell outcome is '{cell.outcome}': only a complete cell is imported",
        )
    try:
        files = reader.batch_files(cell.cell_dir)
    except OSError as error:
        return CorpusBlock(context, "failed", f"reading {cell.cell_dir}: {error}")
    if not files:
        return CorpusBlock(context, "skipped", f"no batch files in {cell.cell_dir}")
    failures = [
        problem
        for name in files
        if (problem := _import_one(client, reader, name, context, marker)) is not None
    ]
    imported = len(files) - len(failures)
    return CorpusBlock(
        context,
        "built" if imported else "failed",
        "; ".join(failures) if failures else None,
        segments_imported=imported,
        segments_failed=len(failures),
        passage_vectors=passage_vectors(client, context),
    )


def probe_corpus(client: TaguruClient, context: str) -> CorpusBlock:
    """``--skip-import``: search `context` as it is, if it exists."""
    try:
        client.context(context)
    except RemoteError as error:
        if error.status == 404:
            return CorpusBlock(
                context, "failed", "--skip-import given but this context does not exist"
            )
        return CorpusBlock(context, "failed", error.cut())
    return CorpusBlock(context, "search_only", passage_vectors=passage_vectors(client, context))


def passage_vectors(client: TaguruClient, context: str) -> dict[str, Any] | None:
    """``{model, rows}`` of the context's passage vectors — evidence for why the vector
    lane did or did not run; None when the server reports none or cannot say."""
    try:
        result = client.embeddings(context).result
    except RemoteError:
        return None
    passages = result.get("passages") if isinstance(result, Mapping) else None
    if not isinstance(passages, Mapping):
        return None
    model = passages.get("model")
    rows = passages.get("rows")
    return {
        "model": model if isinstance(model, str) else None,
        "rows": rows if isinstance(rows, int) and not isinstance(rows, bool) else 0,
    }


def _import_one(
    client: TaguruClient, reader: ResultsReader, name: str, context: str, marker: str
) -> str | None:
    """None when the file was imported, else why not (naming the file)."""
    try:
        data = rewrite_header(reader.read(name), context, marker)
        client.import_stream(data)
    except OSError as error:
        return f"{name}: cannot read it ({error})"
    except HeaderError as error:
        return f"{name}: {error}"
    except RemoteError as error:
        return f"{name}: {error.cut()}"
    return None
