"""Record serialisation shared by the trace, the attempts log and the sidecar.

Every record is one compact JSON object per line, non-ASCII raw, keys in the
order the record builder inserted them (the order CONTRACT.md section 4
lists), discriminated by ``type``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

Record = dict[str, Any]


# One encoder for every compact text: `json.dumps` with options builds a new one per call,
# a third of the cost of a small record, and a completion writes several dozen.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def compact_json(value: Any) -> str:
    """`value` as one compact JSON text, non-ASCII raw (what `dumps_line` writes)."""
    return _COMPACT.encode(value)


def dumps_line(record: Record) -> bytes:
    return (_COMPACT.encode(record) + "\n").encode("utf-8")


def dumps_lines(records: Iterable[Record]) -> bytes:
    return b"".join(dumps_line(record) for record in records)


def attempt_ref(run_id: str, attempt_seq: int) -> Record:
    return {"run_id": run_id, "attempt_seq": attempt_seq}
