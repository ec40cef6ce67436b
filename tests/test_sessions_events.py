"""The unified event's code-made fields (SESSIONS.md §3, seed 004 P8): ``mentions``,
``sha256`` of the verbatim text and ``source``, on every event of every agent format,
whether converted, read back from the store or staged for extraction."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from taguru_ray.sessions.convert import convert
from taguru_ray.sessions.events import Session
from taguru_ray.sessions.index import SessionStore
from taguru_ray.sessions.mentions import MAX_MENTIONS, mentions

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
CLAUDE = FIXTURES / "claude-code" / "3f2a9c1e-7b4d-4e8a-9f21-5c6d7e8f9a0b.jsonl"
CODEX = next((FIXTURES / "codex").glob("rollout-*.jsonl"))
OPENAI = FIXTURES / "openai-chat" / "release-support.json"


def _session(path: Path) -> Session:
    return convert(path.read_bytes(), file=str(path))


@pytest.mark.parametrize("path", [CLAUDE, CODEX, OPENAI], ids=lambda p: p.parent.name)
def test_every_event_carries_its_source_and_the_sha256_of_its_text(path: Path) -> None:
    session = _session(path)
    for event in session.events:
        assert event.source == session.source
        assert event.sha256 == hashlib.sha256(event.text.encode()).hexdigest()


def test_mentions_are_paths_file_names_and_identifiers_in_first_occurrence_order() -> None:
    text = (
        "I moved `git push` into build-release.sh under src/app/main.py; see "
        "SessionStore.put, MY_TOKEN, fooBar, --force, @alice and #38."
    )
    assert mentions(text) == (
        "git push",
        "build-release.sh",
        "src/app/main.py",
        "SessionStore.put",
        "MY_TOKEN",
        "fooBar",
        "--force",
        "@alice",
        "#38",
    )


def test_plain_words_numbers_and_abbreviations_are_not_mentions() -> None:
    assert mentions("We fixed it in version 1.2.3, e.g. by restarting the Pi.") == ()


def test_a_name_an_earlier_dialogue_turn_marked_is_carried_into_later_turns() -> None:
    assert mentions("deploy again", frozenset({"deploy"})) == ("deploy",)
    assert mentions("deploy again") == ()


def test_mentions_are_bounded_per_turn() -> None:
    text = " ".join(f"file{i}.txt" for i in range(MAX_MENTIONS * 2))
    assert len(mentions(text)) == MAX_MENTIONS


def test_mentions_in_a_real_claude_code_session_cover_japanese_turns() -> None:
    session = _session(CLAUDE)
    user = [e for e in session.events if e.kind == "user_text"]
    assert "build-release.sh" in user[0].mentions  # a Japanese turn naming a script
    assert "cmdline.txt" in user[-2].mentions


def test_the_store_and_the_staged_form_give_the_same_annotated_events(tmp_path: Path) -> None:
    from taguru_ray.sessions.program import stage, unstage

    session = _session(OPENAI)
    with SessionStore(tmp_path, create=True) as store:
        store.put(session)
        assert store.session(session.agent, session.session_id).events == session.events
        shown = store.show(f"oc:{session.session_id}#5", context=1)
    assert shown == list(session.events[4:7])
    assert unstage(stage(session)).events == session.events
