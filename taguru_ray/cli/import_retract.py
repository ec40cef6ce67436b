"""`import`'s retractions: the segments `extract --prune` retired, withdrawn from the context
(ADR 0083).

An extract --out that `import` reads as a folder may hold ``.extract-retired/``:
the records of every finished prune (`store/retire.py`). Each retired source is
retracted from its context — the embedded store's `retract_source`, or a Taguru
server's ``POST /contexts/{name}/sources/retract`` — unless a file of this
import writes it again (retired, then re-added since). A source the context no
longer holds retracts to nothing and is not said, so a second import over the
same folder changes nothing and prints nothing more.

stdout: one line per source retracted (``would retract`` under --dry-run);
stderr: a record file that cannot be read, a refused retraction, a prune left
unfinished (the next extract completes it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

from taguru_ray.context.errors import ContextError
from taguru_ray.context.store import SqliteStore
from taguru_ray.contract.names import RETIRED
from taguru_ray.contract.records.retired import RetiredRecord, records_name
from taguru_ray.remote.client import RemoteError, TaguruClient
from taguru_ray.store.outdir import OutDir
from taguru_ray.store.retire import read_retired
from taguru_ray.text.terminal import printable

Pending = list[tuple[str, str, RetiredRecord]]  # (the folder, the context's name, the record)


def retired_in(folder: str, prefix: str) -> tuple[list[RetiredRecord], int]:
    """The finished prunes' records in an extract --out, and how many record files could
    not be read (each said on stderr)."""
    try:
        found = read_retired(OutDir(folder))
    except OSError as error:
        where = printable(f"{folder.rstrip('/')}/{RETIRED}")
        print(f"{prefix}{where}: cannot read it ({error.strerror or error})", file=sys.stderr)
        return [], 1
    for name, why in found.unreadable.items():
        shown = printable(f"{folder.rstrip('/')}/{name}")
        print(f"{prefix}{shown}: cannot read it ({why}) — its retractions are not applied",
              file=sys.stderr)  # fmt: skip
    for run_id in found.unfinished:
        print(
            printable(
                f"{prefix}{folder}: the prune of extract run {run_id} was left unfinished — the "
                "next extract over this --out completes it, and the import after retracts its "
                "segments"
            ),
            file=sys.stderr,
        )
    return found.records, len(found.unreadable)


def retract_embedded(store: SqliteStore, pending: Pending, dry_run: bool) -> int:
    """Each pending retraction applied to the embedded store; how many were refused."""
    refused = 0
    for folder, context, record in pending:
        try:
            result = store.retract_source(context, record.id, dry_run=dry_run)
        except ContextError as error:
            if error.code == "no_context":  # nothing of it was ever imported here
                continue
            print(printable(f"{_where(folder, record)}: {error}"), file=sys.stderr)
            refused += 1
            continue
        _said(folder, context, record, result, dry_run)
    return refused


def retract_remote(url: str, pending: Pending, dry_run: bool) -> int:
    """Each pending retraction sent to a Taguru server; how many were refused."""
    client = TaguruClient.from_environment(url, os.environ)
    refused = 0
    for folder, context, record in pending:
        try:
            reply = client.retract_source(context, record.id, dry_run=dry_run)
        except RemoteError as error:
            if error.status == 404 and error.code in (None, "no_context", "not_found"):
                continue  # no such context there: nothing of it to retract
            print(printable(f"{_where(folder, record)}: {error.message}"), file=sys.stderr)
            refused += 1
            continue
        result = reply.result if isinstance(reply.result, dict) else {}
        _said(folder, context, record, result, dry_run)
    return refused


def pending_of(
    found: Iterable[tuple[str, RetiredRecord]],
    keep: list[tuple[str, RetiredRecord]],
) -> Pending:
    """`keep` (what `to_retract` chose) with each record's folder, from `found`."""
    folders = {_key(record): folder for folder, record in found}
    return [(folders[_key(record)], context, record) for context, record in keep]


def _key(record: RetiredRecord) -> tuple[str, str, str]:
    return record.run_id, record.source, record.id


def _said(
    folder: str, context: str, record: RetiredRecord, result: dict[str, Any], dry_run: bool
) -> None:
    touched = int(result.get("associations_touched", 0) or 0)
    removed = bool(result.get("passage_removed"))
    if not touched and not removed:
        return  # retracted before (or never imported): nothing to say
    verb = "would retract" if dry_run else "retracted"
    parts = [f"{touched} associations"] + (["passage removed"] if removed else [])
    print(
        printable(
            f"{_where(folder, record)}: {verb} source '{record.id}' from context '{context}' "
            f"(retired by extract --prune): {', '.join(parts)}"
        )
    )


def _where(folder: str, record: RetiredRecord) -> str:
    return f"{folder.rstrip('/')}/{RETIRED}/{records_name(record.run_id)}"
