"""P16 ledger: per session, what extraction did to it, append-only (SESSIONS.md §4).

``{store}/.ledger/{agent}/{id}.jsonl`` beside the session store, one JSON record a
line, never rewritten — so ``sessions list`` can say, with no model and no out
folder at hand, which stages a session went through and how its last run ended.
A record is §4's shape: ``{stage, batch, seq_first, seq_last, input_sha256,
prompt_sha256, model, state, rows, attempt}`` plus ``source`` (a part's own) and
``at`` (epoch ms), absent fields null. ``stage`` is a model stage's name, or
``"session"`` for the record that closes a run (``state`` written, failed or
not written; ``rows`` the association lines written).

The session id is percent-encoded into one file name, so an id holding ``/`` or
``..`` (a subagent's ``…/agent-x``) stays inside its agent's folder. A line that
does not read as a JSON object (a write cut short) is skipped when read, never
fatal: the ledger informs, the manifest and checkpoints decide.

``memory.jsonl`` beside the agents' folders logs each memory card and brief ask
(`append_ask`, `read_asks`): what, about whom, model, tokens, seconds, state.

`append` writes one record. A run's records come from what each session's run logged
as each ask finished, durably, in the session's attempts log under ``--out``
(`run_asks`): a settled stage batch or review is its checkpoint unit, one that failed
a ``session_batch`` record (`contract/records/session_batch.py`) — so a run that
fails, is interrupted or is killed has recorded every ask it finished. `open_run`,
before a ``sessions extract`` asks anything, first closes a run the ledger shows
``running`` (one killed outright: its asks are read from the out folder it names,
state ``killed``), then marks each session ``running``; `close_run`, after the run
however it ended (the CLI calls it in a ``finally``), appends one record per ask the
run finished and the ``session`` record (written, failed or not written). Without an
attempts log (``TAGURU_EXTRACT_TRACE_ATTEMPTS=off``) the written trace's ``batch``
lines stand in (`settled`: a resumed batch recorded as it was asked). `read` and
`summary` are what ``list`` shows.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from taguru_ray.contract import strict_json

FOLDER = ".ledger"
FIELDS = (
    "stage", "batch", "seq_first", "seq_last", "input_sha256", "prompt_sha256", "model",
    "state", "rows", "attempt",
)  # fmt: skip
SESSION_STAGE = "session"
RUNNING, KILLED = "running", "killed"  # a run's session record until it closes; one never closed
# The memory card and brief asks' log: a file, never an agent's folder (those are folders).
ASKS = "memory.jsonl"


@dataclass(frozen=True)
class Summary:
    """What ``sessions list`` shows of a session's ledger."""

    stages: tuple[str, ...]  # stages with a done record, in first-done order
    batches: int  # batch records done
    outcome: str | None  # the last run's state, None before any run closed
    rows: int | None  # the rows the last closed run wrote

    def __str__(self) -> str:
        if self.outcome is None and not self.stages:
            return "not extracted"
        rows = "" if self.rows is None else f" {self.rows} rows"
        stages = f", stages {','.join(self.stages)}" if self.stages else ""
        return f"{self.outcome or 'running'}{rows}{stages}"


def settled(unit: dict[str, Any]) -> dict[str, Any]:
    """A settled ask's ledger fields, from its checkpoint unit (`asks.py`): a stage's
    batch (``rows`` the drafts the checks left) or a review (no ``batch``; ``rows`` its
    flags). ``attempt`` is the asks it took, the corrective turn included. Pure."""
    review = "flags" in unit
    return {
        "stage": unit.get("stage", "fact"),
        "batch": None if review else unit.get("batch"),
        **{key: unit.get(key) for key in ("seq_first", "seq_last", "input_sha256")},
        "prompt_sha256": unit.get("prompt_sha256"),
        "state": "done",
        "rows": len(unit["flags"] if review else unit.get("drafts", ())),
        "attempt": unit.get("asked", 1),
    }


def path(store: str | Path, agent: str, session_id: str) -> Path:
    return Path(store) / FOLDER / quote(agent, safe="") / f"{quote(session_id, safe='')}.jsonl"


def append(store: str | Path, agent: str, session_id: str, **record: Any) -> None:
    """One record, its §4 fields in order (absent ones null), then any others."""
    unknown = [key for key in record if key not in FIELDS and key not in ("source", "at")]
    line = {key: record.get(key) for key in FIELDS}
    line["source"] = record.get("source")
    line["at"] = record.get("at", _now())
    line |= {key: record[key] for key in unknown}
    _write(path(store, agent, session_id), line)


def append_ask(store: str | Path, record: dict[str, Any]) -> None:
    """One memory card or brief ask (`cli/sessions_memory.py`) into
    ``{store}/.ledger/memory.jsonl``: those asks go around the engine's attempts log,
    so their cost is kept here."""
    _write(Path(store) / FOLDER / ASKS, {**record, "at": record.get("at", _now())})


def read_asks(store: str | Path) -> list[dict[str, Any]]:
    """The memory asks logged, in written order; [] when none was."""
    return _read(Path(store) / FOLDER / ASKS)


def _now() -> int:
    return int(time.time() * 1000)


def _write(file: Path, line: dict[str, Any]) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    with open(file, "ab") as handle:  # O_APPEND: concurrent runs interleave whole lines
        if handle.tell() and not _ends_a_line(file):
            data = b"\n" + data  # after a write cut short: that line stays apart, skipped
        handle.write(data)


def _ends_a_line(file: Path) -> bool:
    with open(file, "rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


def read(store: str | Path, agent: str, session_id: str) -> list[dict[str, Any]]:
    """The session's records in written order; [] when it has no ledger."""
    return _read(path(store, agent, session_id))


def _read(file: Path) -> list[dict[str, Any]]:
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        return []
    return _records(data)


def _records(data: bytes) -> list[dict[str, Any]]:
    """Each line that reads as a JSON object; the rest (a write cut short) skipped."""
    records = []
    for raw in data.splitlines():
        try:
            record = strict_json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def summary(records: Sequence[dict[str, Any]]) -> Summary:
    stages: dict[str, None] = {}
    batches = 0
    outcome: str | None = None
    rows: int | None = None
    run_at: object = None
    for record in records:
        stage = record.get("stage")
        if stage == SESSION_STAGE:
            # A session in parts gets one record per part from the same run (one `at`):
            # the run wrote it when it wrote every part, and its rows are their sum.
            state, count = record.get("state"), record.get("rows")
            # An open (running) record and a close never fold, even in one millisecond.
            same_run = (
                run_at is not None
                and record.get("at") == run_at
                and (state == RUNNING) == (outcome == RUNNING)
            )
            if same_run and outcome is not None:
                outcome = outcome if state == outcome else "not written"
                rows = None if rows is None or not isinstance(count, int) else rows + count
            else:
                outcome, rows = state, count
            run_at = record.get("at")
        elif isinstance(stage, str) and record.get("state") == "done":
            stages.setdefault(stage)
            counted = record.get("batches")  # a run's stage total, or one batch's record
            batches += counted if isinstance(counted, int) else int(record.get("batch") is not None)
    return Summary(tuple(stages), batches, outcome, rows)


def open_run(
    store: str | Path, out: str, sessions: Sequence[Any], model: str | None = None
) -> None:
    """Before a ``sessions extract`` asks anything: close what a killed run left open,
    then mark each session (or part) ``running`` under ``out``."""
    closed = _now()  # one time for the killed run's close: `summary` folds its parts by it
    for session in sessions:
        name = (session.agent, session.session_id)
        last = _last_session_record(read(store, *name), session.source)
        if last is not None and last.get("state") == RUNNING:
            _close(store, str(last.get("out") or out), session, model, killed=True, at=closed)
    at = _now()
    for session in sessions:
        append(store, session.agent, session.session_id, source=session.source,
               stage=SESSION_STAGE, state=RUNNING, model=model, at=at, out=out,
               **_span(session))  # fmt: skip


def close_run(
    store: str | Path, out: str, sessions: Sequence[Any], model: str | None = None
) -> None:
    """After a ``sessions extract`` run, however it ended: per session (or part), one
    record per ask the run finished (from its attempts log, else its written trace's
    ``batch`` lines or, older, one per stage) and a ``session`` record — ``written`` with
    the rows its source file holds, ``failed`` when an ask failed, else ``not written``.
    `sessions` are `Session`s as staged."""
    at = _now()  # one time for the run: `summary` folds a session's parts by it
    for session in sessions:
        _close(store, out, session, model, at=at)


def _close(
    store: str | Path,
    out: str,
    session: Any,
    model: str | None,
    *,
    killed: bool = False,
    at: int | None = None,
) -> None:
    at = _now() if at is None else at
    found = _written(out, session.source)
    asks = run_asks(out, session.source)
    name = (session.agent, session.session_id)
    span = _span(session)
    for line in asks if asks is not None else found.batches:
        fields = {key: line.get(key) for key in FIELDS if key != "model"}
        extra = {"reason": line["reason"]} if line.get("reason") else {}
        append(store, *name, source=session.source, model=model, at=at, **fields, **extra)
    if asks is None:
        for stage in [] if found.batches else found.stages:  # a trace from before batch lines
            append(store, *name, source=session.source, stage=stage["stage"],
                   batches=stage.get("batches"), state="done", model=model,
                   rows=stage.get("kept"), at=at, **span)  # fmt: skip
    failed = any(line.get("state") == "failed" for line in asks or ())
    state = (
        KILLED if killed
        else "written" if found.rows is not None
        else "failed" if failed
        else "not written"
    )  # fmt: skip
    append(store, *name, source=session.source, stage=SESSION_STAGE, state=state,
           rows=found.rows if state == "written" else None, model=model, at=at,
           **span)  # fmt: skip


def run_asks(out: str, source: str) -> list[dict[str, Any]] | None:
    """The asks the session's last run finished, as ledger fields in the order they
    finished: the checkpoint units and failed asks its attempts log holds after the run's
    ``segment`` record. None when there is no attempts log to read."""
    import fsspec

    from taguru_ray.contract.names import TRACE, attempts_name, join

    try:
        with fsspec.open(join(out, f"{TRACE}/{attempts_name(source)}"), "rb") as handle:
            records = _records(handle.read())
    except OSError:
        return None
    starts = [i for i, record in enumerate(records) if record.get("type") == "segment"]
    asks: list[dict[str, Any]] = []
    for record in records[starts[-1] + 1 if starts else 0 :]:
        kind = record.get("type")
        if kind == "checkpoint" and isinstance(record.get("unit"), dict):
            unit = record["unit"]
            if isinstance(unit.get("stage"), str):  # a stage batch's or a review's unit
                asks.append(settled(unit))
        elif kind == "session_batch":
            asks.append({key: record.get(key) for key in (*FIELDS, "reason")})
    return asks


def _last_session_record(records: Sequence[dict[str, Any]], source: str) -> dict[str, Any] | None:
    mine = [r for r in records if r.get("stage") == SESSION_STAGE and r.get("source") == source]
    return mine[-1] if mine else None


def _span(session: Any) -> dict[str, Any]:
    seqs = [event.seq for event in session.events]
    return {"seq_first": seqs[0] if seqs else None, "seq_last": seqs[-1] if seqs else None}


@dataclass(frozen=True)
class _Written:
    rows: int | None  # association lines in the source file; None: no file
    stages: list[dict[str, Any]]  # the trace's per-stage metrics lines
    batches: list[dict[str, Any]]  # the trace's per-batch lines (`settled`), in run order


def _written(out: str, source: str) -> _Written:
    """What ``out`` holds for one source: its rows and its trace's stage lines."""
    import fsspec

    from taguru_ray.contract.names import TRACE, join, output_name
    from taguru_ray.contract.source_file import parse_source_file

    name = output_name(source)
    try:
        with fsspec.open(join(out, name), "rb") as handle:
            rows = len(parse_source_file(handle.read(), name=name, strict=False).associations)
    except (OSError, ValueError):
        return _Written(None, [], [])
    stages: list[dict[str, Any]] = []
    batches: list[dict[str, Any]] = []
    try:
        with fsspec.open(join(out, f"{TRACE}/{name}"), "rb") as handle:
            lines = handle.read().splitlines()
    except OSError:
        lines = []
    for raw in lines:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(line, dict) or not line.get("stage"):
            continue
        if line.get("type") == "stage":
            stages.append(line)
        elif line.get("type") == "batch":
            batches.append(line)
    return _Written(rows, stages, batches)
