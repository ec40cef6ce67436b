"""Chunk checkpoints ``.extract-checkpoints/<stem>.json``: paid-for work that survives a kill.

One file per segment, rewritten whole and atomically each time a unit lands
(CONTRACT.md section 3). Units are keyed by the piece text's sha256, so a
rerun recognises a finished piece whatever the chunk index. The file is bound
to the segment's compute-input fingerprint: any mismatch discards it whole,
with one stderr note — a stale unit is never reused.
"""

from __future__ import annotations

import json
from typing import Any

from taguru_ray.contract.names import CHECKPOINTS, checkpoint_name
from taguru_ray.contract.records import compact_json
from taguru_ray.contract.records.checkpoint import CheckpointDocument
from taguru_ray.store.outdir import OutDir


def checkpoint_path(source: str) -> str:
    return f"{CHECKPOINTS}/{checkpoint_name(source)}"


class Checkpoint:
    """The units of one segment, in memory, mirrored to its checkpoint file."""

    def __init__(self, out: OutDir, source: str, fingerprint: dict[str, Any]) -> None:
        self._out = out
        self._name = checkpoint_path(source)
        self.fingerprint = fingerprint
        self.units: dict[str, dict[str, Any]] = {}
        # Pieces an earlier run split (piece id -> split cap): a resumed run goes
        # straight to their sub-pieces instead of paying again for the rounds that
        # proved the piece too big. An extension the reference's reader ignores.
        self.splits: dict[str, int] = {}
        # --chunk-context overview: each chunk's answer by chunk hash ("" = a failed ask,
        # never re-asked) and the digest of the merged overview the units were built on.
        self.overview: dict[str, str] = {}
        self.overview_digest = ""

    @property
    def location(self) -> str:
        return self._out.path(self._name)

    def load(self) -> str | None:
        """Read the file; returns the stderr note when it exists but cannot be used."""
        data = self._out.read(self._name)
        if data is None:
            return None
        try:
            document = json.loads(data.decode("utf-8"))
            units = document["units"]
            if not isinstance(units, dict):
                raise TypeError("units is not an object")
        except (ValueError, KeyError, TypeError) as error:
            return (
                f"ignoring an unreadable checkpoint at {self.location}: {error} — every unit "
                "of this segment re-extracts"
            )
        if document.get("fingerprint") != self.fingerprint:
            return (
                f"checkpoint at {self.location} was written under different settings — "
                f"{len(units)} unit(s) re-extract"
            )
        self.units = {str(key): unit for key, unit in units.items() if isinstance(unit, dict)}
        splits = document.get("splits")
        if isinstance(splits, dict):
            self.splits = {str(k): v for k, v in splits.items() if isinstance(v, int)}
        overview = document.get("overview")
        if isinstance(overview, dict):
            self.overview = {str(k): v for k, v in overview.items() if isinstance(v, str)}
        digest = document.get("overview_digest")
        self.overview_digest = digest if isinstance(digest, str) else ""
        return None

    def save(self, piece_id: str, unit: dict[str, Any]) -> None:
        """Add a unit and make the file durable before the caller goes on."""
        self.units[piece_id] = unit
        self._write()

    def save_split(self, piece_id: str, cap: int) -> None:
        self.splits[piece_id] = cap
        self._write()

    def save_overview(self, chunk_sha256: str, answer: str) -> None:
        self.overview[chunk_sha256] = answer
        self._write()

    def bind_overview(self, digest: str, *, keep: bool) -> bool:
        """Bind the units to `digest`; True when kept units were bound to another one
        (they were extracted against a different block and are dropped here)."""
        stale = keep and bool(self.units) and self.overview_digest != digest
        if stale:
            self.units = {}
        if stale or self.overview_digest != digest:
            self.overview_digest = digest
            self._write()
        return stale

    def _write(self) -> None:
        document = CheckpointDocument(
            fingerprint=self.fingerprint,
            units=self.units,
            overview=self.overview,
            overview_digest=self.overview_digest,
            splits=self.splits,
        ).record()
        data = compact_json(document).encode("utf-8")
        self._out.write(self._name, data)

    def delete(self) -> None:
        self._out.delete(self._name)


def count_reusable(
    out: OutDir, source: str, fingerprint: dict[str, Any], chunk_ids: list[str]
) -> int:
    """--dry-run's count: top-level chunks whose piece id already has a unit."""
    checkpoint = Checkpoint(out, source, fingerprint)
    if checkpoint.load() is not None:
        return 0
    return sum(1 for chunk_id in chunk_ids if chunk_id in checkpoint.units)
