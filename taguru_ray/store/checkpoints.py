"""Chunk checkpoints: paid-for work that survives a kill (CONTRACT.md section 3).

Units are keyed by the piece text's sha256, so a rerun recognises a finished
piece whatever the chunk index, and bound to the segment's compute-input
fingerprint: any mismatch discards them, with one stderr note — a stale unit is
never reused.

Where they live (ADR 0049): with the attempts log on (the default), each change
is one `checkpoint` record appended to the segment's attempts log — durable
before the caller goes on, as every record of that log is — and the segment's
written state ends with a `settled` record instead of a file deleted. With the
attempts log off, one file per segment, ``.extract-checkpoints/<stem>.json``,
rewritten whole and atomically each time a unit lands and deleted once the
segment is written. A file an earlier build wrote is read either way, and
deleted once its segment is written.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from taguru_ray.contract.names import CHECKPOINTS, TRACE, attempts_name, checkpoint_name
from taguru_ray.contract.records import Record, compact_json
from taguru_ray.contract.records.checkpoint import CheckpointDocument, CheckpointRecord
from taguru_ray.store.outdir import OutDir

RECORD_PREFIX = b'{"type":"checkpoint"'  # how a checkpoint line of an attempts log opens


def checkpoint_path(source: str) -> str:
    return f"{CHECKPOINTS}/{checkpoint_name(source)}"


def fingerprint_digest(fingerprint: dict[str, Any]) -> str:
    """The sha256 a `checkpoint` record names its fingerprint by."""
    text = json.dumps(fingerprint, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Checkpoint:
    """The units of one segment, in memory, mirrored to its checkpoint file or, `logged`,
    to `checkpoint` records of its attempts log (the caller appends what the `logged_*`
    methods hand back)."""

    def __init__(
        self, out: OutDir, source: str, fingerprint: dict[str, Any], *, logged: bool = False
    ) -> None:
        self._out = out
        self._name = checkpoint_path(source)
        self._log_name = f"{TRACE}/{attempts_name(source)}"
        self.logged = logged
        self.file_found = False  # a checkpoint file was there to read: delete it once written
        self.fingerprint = fingerprint
        self.digest = fingerprint_digest(fingerprint) if logged else ""
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
        """Read the file (and, logged, the attempts log's records); the stderr note when
        what is there cannot be used."""
        note = self._load_file()
        if self.logged:
            note = self._load_log() or note
        return note

    def _load_file(self) -> str | None:
        data = self._out.read(self._name)
        if data is None:
            return None
        self.file_found = True
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

    def _load_log(self) -> str | None:
        """Fold the attempts log's `checkpoint` records in order: a `settled` one spends
        what came before it; one under another fingerprint is counted, not reused."""
        data = self._out.read(self._log_name)
        if data is None:
            return None
        stale = 0
        for line in data.splitlines():
            if not line.startswith(RECORD_PREFIX):
                continue
            try:
                record = CheckpointRecord.read(json.loads(line))
            except ValueError:
                record = None  # a line cut short by a kill: the ones before it stand
            if record is None:
                continue
            if record.settled:
                stale = 0
                self._forget()
            elif record.fingerprint != self.digest:
                stale += record.unit is not None
            else:
                self._apply(record)
        if stale:
            location = self._out.path(self._log_name)
            return (
                f"checkpoint records in {location} were written under different settings — "
                f"{stale} unit(s) re-extract"
            )
        return None

    @property
    def holds(self) -> bool:
        """Logged records to spend once the segment is written: units, splits, overview."""
        return self.logged and bool(
            self.units or self.splits or self.overview or self.overview_digest
        )

    def _forget(self) -> None:
        self.units, self.splits, self.overview, self.overview_digest = {}, {}, {}, ""

    def _apply(self, record: CheckpointRecord) -> None:
        if record.piece_id is not None and record.unit is not None:
            self.units[record.piece_id] = record.unit
        elif record.piece_id is not None and record.split_cap is not None:
            self.splits[record.piece_id] = record.split_cap
        elif record.chunk_sha256 is not None and record.overview is not None:
            self.overview[record.chunk_sha256] = record.overview
        elif record.overview_digest is not None:
            if record.cleared:
                self.units = {}
            self.overview_digest = record.overview_digest

    def _record(self, **change: Any) -> Record:
        return CheckpointRecord(fingerprint=self.digest, **change).record()

    def logged_unit(self, piece_id: str, unit: dict[str, Any]) -> Record:
        """Add a unit; the record to append (durable before the caller goes on)."""
        self.units[piece_id] = unit
        return self._record(piece_id=piece_id, unit=unit)

    def logged_split(self, piece_id: str, cap: int) -> Record:
        self.splits[piece_id] = cap
        return self._record(piece_id=piece_id, split_cap=cap)

    def logged_overview(self, chunk_sha256: str, answer: str) -> Record:
        self.overview[chunk_sha256] = answer
        return self._record(chunk_sha256=chunk_sha256, overview=answer)

    def logged_binding(self, digest: str, *, keep: bool) -> tuple[bool, Record | None]:
        """`bind_overview`, logged: whether kept units were dropped, and the record to
        append when the binding changed."""
        stale = keep and bool(self.units) and self.overview_digest != digest
        if stale:
            self.units = {}
        if not stale and self.overview_digest == digest:
            return False, None
        self.overview_digest = digest
        return stale, self._record(overview_digest=digest, cleared=stale or None)

    def settled_record(self) -> Record:
        """The segment was written: every record before this one is spent."""
        return self._record(settled=True)

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
    out: OutDir,
    source: str,
    fingerprint: dict[str, Any],
    chunk_ids: list[str],
    *,
    logged: bool = True,
) -> int:
    """--dry-run's count: top-level chunks whose piece id already has a unit."""
    checkpoint = Checkpoint(out, source, fingerprint, logged=logged)
    if checkpoint.load() is not None:
        return 0
    return sum(1 for chunk_id in chunk_ids if chunk_id in checkpoint.units)
