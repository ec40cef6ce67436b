"""A batch's results read a line at a time (`llm/batch_results.py`): one verdict per
custom_id, one bad line costing that line alone, a success never overridden; and the
ledger's ids (`engine/paid_ledger.PaidLedger.claim`) stable across a resumed rerun."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from taguru_ray.contract.completion import Completion
from taguru_ray.contract.records.batches import BatchRecord
from taguru_ray.engine.paid_ledger import PaidLedger, Standing
from taguru_ray.llm.batch_results import LineFailure, ResultsReader, Unread, split_lines
from taguru_ray.store.batch_journal import BatchJournal
from taguru_ray.store.outdir import OutDir

CID = "0123456789abcdef-" + "a" * 40 + "-1"


def verdict(line: Mapping[str, Any]) -> Completion | LineFailure:
    if line.get("ok"):
        return Completion("answer", text=str(line["ok"]))
    return LineFailure("HTTP 500")


def line(cid: str, ok: str | None) -> bytes:
    return json.dumps({"custom_id": cid, "ok": ok}).encode()


def test_each_kind_of_bad_line_costs_that_line_alone() -> None:
    reader = ResultsReader(verdict)
    good = line("b", "fine")
    for bad in (
        line(CID, "x")[:-6],  # cut short: its custom_id still shows
        b"<html>502</html>",  # not JSON, names nothing
        line("c", "y")[:-3] + b"\xff" + b'"}',  # invalid UTF-8
        b"[" + line("d", "z") + b"]",  # an array
        b'{"ok": "no id"}',
    ):
        reader.feed(bad)
    reader.feed(good)
    assert reader.found["b"] == Completion("answer", text="fine")
    assert isinstance(reader.found[CID], Unread) and "not JSON" in reader.found[CID].why
    assert reader.bad_lines == 5 and reader.first_bad == "a line is not JSON (cut short?)"
    assert set(reader.found) == {"b", CID, "c", "d"}  # salvaged ids are Unread, not lost
    assert all(isinstance(reader.found[c], Unread) for c in ("c", "d"))


def test_a_repeated_custom_id_keeps_its_first_success() -> None:
    reader = ResultsReader(verdict)
    for raw in (line("a", None), line("a", "won"), line("a", None), line("a", "later")):
        reader.feed(raw)
    assert reader.found["a"] == Completion("answer", text="won") and reader.repeated == 3
    reader.feed(line(CID, "x")[:-6])  # unread, then the provider's verdict replaces it
    reader.feed(line(CID, None))
    assert isinstance(reader.found[CID], LineFailure)


def test_lines_split_across_chunks_are_fed_whole() -> None:
    fed: list[bytes] = []
    pending = bytearray()
    for chunk in (b'{"a":', b'1}\n{"b"', b":2}\n\n", b'{"c":3}'):
        split_lines(pending, chunk, fed.append)
    assert fed == [b'{"a":1}', b'{"b":2}', b""] and pending == b'{"c":3}'


def test_a_rerun_claims_the_held_id_a_resumed_program_asks_again(tmp_path: Path) -> None:
    """The first run asked one body twice (…-1 answered and used, …-2 unread); the rerun,
    resumed past the first, asks it once: it is …-2 it collects, not a new …-1 paid."""
    journal = BatchJournal(OutDir(str(tmp_path)))
    stem = CID.rsplit("-", 1)[0]
    record = BatchRecord(
        api="openai",
        key="k" * 16,
        run_id="r" * 16,
        round=1,
        batch_id="batch_1",
        custom_ids=[f"{stem}-1", f"{stem}-2"],
        settled=[f"{stem}-1"],
    )
    journal.write(record)
    ledger = PaidLedger(journal)
    ledger.load()
    assert ledger.claim(stem) == f"{stem}-2" and ledger.standing(f"{stem}-2") is Standing.HELD
    assert ledger.claim(stem) == f"{stem}-3"  # a further ask: a new request
    assert ledger.claim("other") == "other-1"
    assert ledger.finished() == []  # …-2 not yet answered to a segment: the record stays
