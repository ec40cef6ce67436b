"""What `sessions extract` tells the store after a run (`cli/sessions_extract.py`): a
session written in passage parts counts the facts of all its parts, not the last's."""

from __future__ import annotations

from pathlib import Path

from taguru_ray.cli.sessions_extract import _count_facts
from taguru_ray.contract.names import output_name
from taguru_ray.sessions.answer import Fact
from taguru_ray.sessions.checks import Draft
from taguru_ray.sessions.convert import convert
from taguru_ray.sessions.index import SessionStore
from taguru_ray.sessions.parts import plan
from taguru_ray.sessions.source import render

CONTEXT = "0b5f3c0e-8a1d-4b6e-9c2f-1d3e5a7b9c0d"
CODEX = next((Path(__file__).parent / "fixtures" / "sessions" / "codex").glob("rollout-*.jsonl"))


def test_a_session_in_parts_counts_the_facts_of_every_part(tmp_path: Path) -> None:
    store_dir, out = tmp_path / "store", tmp_path / "out"
    out.mkdir()
    session = convert(CODEX.read_bytes(), file=str(CODEX))
    with SessionStore(store_dir, create=True) as store:
        store.put(session)
        # A small part budget: the cut `plan` makes at 8 MiB, on a fixture that is small.
        parts = plan(session, "full", budget=2048)
        assert len(parts) >= 3
        for n, part in enumerate(parts, start=1):
            first = part.events[0]
            quote = first.text.split("\n")[0][:40]
            drafts = [Draft(first.seq, quote, Fact(f"s{i}", "p", "v"), 0) for i in range(n)]
            (out / output_name(part.source)).write_bytes(render(part, CONTEXT, part.events, drafts))
        _count_facts(store, str(out), parts)
        (row,) = store.sessions()
    assert row.facts == sum(range(1, len(parts) + 1))  # 1 + 2 + …, not the last part's
