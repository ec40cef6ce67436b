"""What `sessions extract` counts (`cli/sessions_extract.py`): after a run, a session
written in passage parts counts the facts of all its parts, not the last's; before
one, ``--dry-run`` counts the turns, batches and asks the run would make."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from taguru_ray.cli import main as cli
from taguru_ray.cli.sessions_extract import _count_facts
from taguru_ray.contract.names import output_name
from taguru_ray.sessions.answer import Fact
from taguru_ray.sessions.checks import Draft
from taguru_ray.sessions.convert import convert
from taguru_ray.sessions.index import SessionStore
from taguru_ray.sessions.parts import plan
from taguru_ray.sessions.program import batches_of, stage, unstage
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


FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
CLAUDE = "session:claude-code:3f2a9c1e-7b4d-4e8a-9f21-5c6d7e8f9a0b"


@pytest.fixture
def imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", "m-1")
    store = tmp_path / "store"
    assert cli(["sessions", "import", str(FIXTURES), "--store", str(store), "--mask"]) == 1
    return store  # 1: the unknown-field fixture is refused, the rest stored


def _planned(
    store: Path, capsys: pytest.CaptureFixture[str], *args: str
) -> dict[str, tuple[int, int, int]]:
    """Per source: the turns, batches and asks the dry run's plan line counts."""
    capsys.readouterr()
    argv = ["sessions", "extract", "--store", str(store), "--out", str(store.parent / "out")]
    assert cli([*argv, "--context", CONTEXT, "--dry-run", *args]) == 0
    found = re.findall(
        r"^(\S+): (\d+) turn\(s\) to read in (\d+) batch\(es\), at most (\d+) ask",
        capsys.readouterr().out,
        re.M,
    )
    return {source: (int(t), int(b), int(a)) for source, t, b, a in found}


def test_the_dry_run_counts_the_candidates_the_run_would_ask_about(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = SessionStore(imported).session("claude-code", CLAUDE.rsplit(":", 1)[1])
    kinds = {"user_text", "assistant_text", "tool_result"}
    expected = [e for e in session.events if e.kind in kinds and e.text.strip()]
    plain = _planned(imported, capsys, "--stages", "fact")[CLAUDE]
    offered = _planned(imported, capsys, "--stages", "fact", "--candidates", "tool_result")
    assert offered[CLAUDE][0] == len(expected) > plain[0]
    run = unstage(stage(plan(session, "dialogue", ("tool_result",))[0], ("fact",)))
    assert offered[CLAUDE][1:] == (len(batches_of(run)[1]),) * 2  # one fact ask a batch


def test_the_dry_run_counts_no_time_ask_where_code_settles_it(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planned = _planned(imported, capsys, "--stages", "fact,time")
    chat = [counts for source, counts in planned.items() if ":openai-chat:" in source]
    assert chat and all(asks == batches for _, batches, asks in chat)  # no turn time: no L10
    assert planned[CLAUDE][2] == 2 * planned[CLAUDE][1]  # exact times: fact and time asked
