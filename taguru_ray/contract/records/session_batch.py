"""A session's stage batch or review that failed, in its attempts log (issue 49).

`sessions extract` records each ask a session's run settles in the session's attempts
log as it finishes: a settled one is its `checkpoint` unit (ADR 0049), durable before
the program goes on; one that could not be settled — no answer, or still invalid
after its corrective turn, so the session stops there — is this record, logged before
the session's failure is reported. Together they are what the P16 ledger records of
the run (`sessions/ledger.py`), read back after the run however it ended: written,
failed, interrupted, or killed and found by the next run. Readers of the attempts log
that do not know the type skip it (CONTRACT section 4).
"""

from __future__ import annotations

from typing import ClassVar

from taguru_ray.contract.records.typed import Typed


class SessionBatchRecord(Typed):
    """The ledger fields of one ask (SESSIONS.md §4): a stage's batch (``batch`` its
    index) or a review (``batch`` null, the seqs its draft's turn)."""

    TYPE: ClassVar[str] = "session_batch"
    run_id: str
    stage: str
    batch: int | None
    seq_first: int | None
    seq_last: int | None
    input_sha256: str | None
    prompt_sha256: str | None
    state: str  # "failed": the only state logged so; a settled ask is its checkpoint unit
    rows: int
    attempt: int  # asks made, the corrective turn included
    reason: str
