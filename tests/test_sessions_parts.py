"""What a session's source file holds (`sessions/parts.py`, `sessions/source.py`): the
``dialogue`` passage profile by default, ``full`` on request, and parts of at most the
import cap, cut at turn boundaries, each importing whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from taguru_ray.contract.items import MAX_LINE_BYTES, MAX_PASSAGE_BYTES
from taguru_ray.contract.names import output_name
from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.sessions.convert import convert
from taguru_ray.sessions.events import Session
from taguru_ray.sessions.parts import OPTIONAL_KINDS, parse_kinds, passage_events, plan
from taguru_ray.sessions.program import stage
from taguru_ray.sessions.source import passage_of, render
from tests.big_sessions import big_session
from tests.support import assert_imports_whole

CONTEXT = "0b5f3c0e-8a1d-4b6e-9c2f-1d3e5a7b9c0d"
FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
CLAUDE = FIXTURES / "claude-code" / "3f2a9c1e-7b4d-4e8a-9f21-5c6d7e8f9a0b.jsonl"


@pytest.fixture(scope="module")
def big() -> Session:
    """A 22 MiB Claude Code session, almost all of it ``cat`` output."""
    data = big_session()
    assert len(data) > 20 << 20
    return convert(data, file="big.jsonl")


def _passage(session: Session) -> str:
    return passage_of(session, session.events)[0]


def test_the_dialogue_passage_leaves_tool_output_and_thinking_in_the_store() -> None:
    session = convert(CLAUDE.read_bytes(), file=str(CLAUDE))
    dialogue, full = plan(session)[0], plan(session, "full")[0]
    kinds = {e.kind for e in passage_events(dialogue, dialogue.events)}
    assert kinds == {"user_text", "assistant_text"}
    assert len(_passage(dialogue).encode()) < len(_passage(full).encode())
    assert "Found 2 files" in _passage(full)  # a tool result
    assert "Found 2 files" not in _passage(dialogue)


def test_a_kind_offered_to_the_model_is_in_the_dialogue_passage_too() -> None:
    session = convert(CLAUDE.read_bytes(), file=str(CLAUDE))
    offered = plan(session, kinds=parse_kinds("tool_result"))[0]
    assert "Found 2 files" in _passage(offered)
    assert "compaction" not in OPTIONAL_KINDS


def test_candidates_names_only_optional_kinds() -> None:
    assert parse_kinds("thinking, tool_result,thinking") == ("thinking", "tool_result")
    for wrong in ("compaction", "", "user_text"):
        with pytest.raises(ValueError, match="--candidates"):
            parse_kinds(wrong)


def test_a_session_that_fits_is_written_whole_under_its_own_source_id() -> None:
    session = convert(CLAUDE.read_bytes(), file=str(CLAUDE))
    (whole,) = plan(session, "full")
    assert whole.part is None
    assert whole.source == session.source


def test_a_big_session_of_tool_output_writes_a_small_dialogue_passage(big: Session) -> None:
    (whole,) = plan(big)
    assert len(stage(whole)) < 256 * 1024  # extraction stages only what was said
    data = render(whole, CONTEXT, whole.events, [])
    assert len(data) < 64 * 1024  # 22 MiB of session, a few KiB of what was said
    assert "config.txt is missing" in parse_source_file(data).passage.text


def test_a_full_passage_over_the_cap_is_written_in_parts_that_import_whole(
    big: Session, tmp_path: Path
) -> None:
    parts = plan(big, "full")
    assert len(parts) >= 3
    assert [p.part for p in parts] == list(range(1, len(parts) + 1))
    assert parts[0].source == f"{big.source}/part-001"
    # Cut at turn boundaries: the parts' turns are the session's, in order, each once.
    assert [e.seq for p in parts for e in p.events] == [e.seq for e in big.events]
    out = tmp_path / "out"
    out.mkdir()
    for part in parts:
        assert len(stage(part)) <= MAX_PASSAGE_BYTES  # extract's segment cap
        data = render(part, CONTEXT, part.events, [])
        parsed = parse_source_file(data, name=part.source)
        assert parsed.header.id == part.source
        assert len(parsed.passage.text.encode()) <= MAX_PASSAGE_BYTES
        assert all(len(line) <= MAX_LINE_BYTES for line in data.split(b"\n"))
        (out / output_name(part.source)).write_bytes(data)
    assert_imports_whole(str(out))


def test_one_turn_over_a_part_is_cut_at_a_line_and_says_where_to_read_it_whole(
    big: Session,
) -> None:
    parts = plan(big, "full")
    huge = max(big.events, key=lambda e: len(e.text))
    holder = next(p for p in parts if any(e.seq == huge.seq for e in p.events))
    text = _passage(holder)
    assert f"bytes cut here — 'sessions show {big.handle}#{huge.seq}' has them⟧" in text
    assert "kernel: boot line 0, nothing to see" in text
