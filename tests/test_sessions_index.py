"""The session store (`taguru_ray/sessions/index.py`): put, list, search and show with no
model, on sessions built here as literals (the converters are tested on their own)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from taguru_ray.errors import EXIT_FAILED, EXIT_USAGE
from taguru_ray.sessions.events import Event, Origin, Session, Tool
from taguru_ray.sessions.index import SessionStore
from taguru_ray.sessions.index_query import query_words, snippet
from taguru_ray.sessions.index_records import (
    BadHandle,
    BadQuery,
    Handle,
    HandleNotFound,
    SessionRow,
    StoreNotFound,
    parse_handle,
)
from taguru_ray.sessions.index_schema import FILE_NAME

T0 = 1_777_977_120_000  # 2026-05-05T10:32:00Z


def event(seq: int, text: str, speaker: str = "user", **fields: object) -> Event:
    kind = "user_text" if speaker == "user" else "assistant_text"
    base = Event(seq, speaker, T0 + seq * 1000, True, kind, text, Origin(line=seq + 1))
    return replace(base, **fields)  # type: ignore[arg-type]


def session(
    session_id: str, *texts: str, digest: str = "d1", agent: str = "claude-code"
) -> Session:
    events = tuple(
        event(seq, text, "user" if seq % 2 == 0 else "agent:claude-code")
        for seq, text in enumerate(texts)
    )
    return Session(agent, session_id, f"/s/{session_id}.jsonl", digest, events, started_ms=T0)


DEPLOY = session(
    "3f2a",
    "デプロイスクリプトを build-release.sh に差し替えました。",
    "Raspberry Pi 側が起動しないので確認します。",
    "The deploy script now runs build-release.sh on CI.",
    "了解です。",
    "Swapped the release script; the Pi side will not come up.",
)


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "store", create=True)


# ---------------------------------------------------------------- put


def test_put_adds_then_an_unchanged_digest_changes_nothing(store: SessionStore) -> None:
    assert store.put(DEPLOY) == "added"
    store.set_facts("claude-code", "3f2a", 4)
    assert store.put(DEPLOY) == "unchanged"
    assert store.sessions()[0].facts == 4  # nothing was rewritten


def test_a_changed_digest_replaces_turns_and_index_and_clears_facts(store: SessionStore) -> None:
    store.put(DEPLOY)
    store.set_facts("claude-code", "3f2a", 4)
    changed = session("3f2a", "まったく別の話題です。", "Totally new words here.", digest="d2")
    assert store.put(changed) == "replaced"
    assert [e.text for e in store.events("claude-code", "3f2a")] == [
        "まったく別の話題です。",
        "Totally new words here.",
    ]
    assert store.search("build-release") == []  # the old turns left the index
    assert [h.handle for h in store.search("別の話題")] == ["cc:3f2a#0"]
    row = store.sessions()[0]
    assert (row.turns, row.facts) == (2, None)


def test_the_same_bytes_masked_differently_replace_the_turns(store: SessionStore) -> None:
    store.put(DEPLOY)
    masked = replace(
        DEPLOY,
        events=(replace(DEPLOY.events[0], text="«redacted ticket 1a2b»"), *DEPLOY.events[1:]),
        masked=("line 1: ticket",),
    )
    assert masked.digest == DEPLOY.digest
    assert store.put(masked) == "replaced"
    assert store.search("デプロイスクリプト") == []


def test_the_same_session_read_from_another_path_is_unchanged(store: SessionStore) -> None:
    store.put(DEPLOY)
    assert store.put(replace(DEPLOY, file="/elsewhere/3f2a.jsonl")) == "unchanged"
    assert store.sessions()[0].file == "/s/3f2a.jsonl"


def test_a_stored_session_reads_back_as_it_was_put(store: SessionStore) -> None:
    tool = event(
        2,
        '{"command":"./build-release.sh"}',
        "agent:claude-code",
        kind="tool_call",
        tool=Tool("Bash", "toolu_01", None),
        origin=Origin(7, "b7e2", "a1f4", 1),
        branch="abandoned",
        sidechain=True,
        ts_ms=None,
        ts_exact=False,
    )
    result = event(3, "ok", "tool:Bash", kind="tool_result", tool=Tool("Bash", "toolu_01", False))
    full = Session(
        "codex", "019a", "s3://b/rollout.jsonl", "d", (*DEPLOY.events[:2], tool, result),
        started_ms=T0, cwd="/repo", branch="main", model="gpt-5",
        masked=("line 3: aws_access_key",), allowlist="codex allow-list v1",
    )  # fmt: skip
    store.put(full)
    assert store.session("codex", "019a") == full
    assert store.events("codex", "019a") == full.events


def test_sessions_are_keyed_by_agent_and_id(store: SessionStore) -> None:
    store.put(DEPLOY)
    assert store.put(replace(DEPLOY, agent="codex")) == "added"
    assert [r.handle for r in store.sessions()] == ["cc:3f2a", "cx:3f2a"]


def test_the_store_persists_in_one_file_of_the_folder(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s", create=True) as store:
        store.put(DEPLOY)
    assert (tmp_path / "s" / FILE_NAME).is_file()
    with SessionStore(tmp_path / "s") as again:
        assert [r.session_id for r in again.sessions()] == ["3f2a"]


def test_opening_a_folder_without_a_store_names_the_import(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFound, match="sessions import PATH… --store") as caught:
        SessionStore(tmp_path / "none")
    assert caught.value.exit_code == EXIT_FAILED
    assert not (tmp_path / "none").exists()


# ---------------------------------------------------------------- list


def test_list_rows_earliest_first_unknown_start_last(store: SessionStore) -> None:
    store.put(replace(session("b", "later"), started_ms=T0 + 5))
    store.put(replace(session("a", "no time"), started_ms=None))
    store.put(DEPLOY)
    store.set_facts("claude-code", "b", 0)
    assert store.sessions() == [
        SessionRow("claude-code", "3f2a", "cc:3f2a", T0, 5, "/s/3f2a.jsonl", None),
        SessionRow("claude-code", "b", "cc:b", T0 + 5, 1, "/s/b.jsonl", 0),
        SessionRow("claude-code", "a", "cc:a", None, 1, "/s/a.jsonl", None),
    ]


def test_set_facts_of_an_unknown_session_is_not_found(store: SessionStore) -> None:
    with pytest.raises(HandleNotFound, match="sessions list --store"):
        store.set_facts("claude-code", "nope", 1)


# ---------------------------------------------------------------- search


def test_search_finds_a_japanese_phrase_by_substring(store: SessionStore) -> None:
    store.put(DEPLOY)
    hits = store.search("スクリプトを")  # inside デプロイスクリプトを…, no segmentation
    assert [(h.handle, h.agent, h.session_id, h.seq) for h in hits] == [
        ("cc:3f2a#0", "claude-code", "3f2a", 0)
    ]
    assert (hits[0].ts_ms, hits[0].speaker_id, hits[0].kind) == (T0, "user", "user_text")
    assert hits[0].snippet == "デプロイスクリプトを build-release.sh に差し替えました。"
    assert hits[0].score is not None


def test_search_finds_an_english_phrase_by_substring_case_blind(store: SessionStore) -> None:
    store.put(DEPLOY)
    assert [h.seq for h in store.search('"DEPLOY SCR"')] == [2]
    assert [h.seq for h in store.search("release")] == [0, 2, 4]  # shorter turns rank first


def test_every_word_must_occur_in_any_order(store: SessionStore) -> None:
    store.put(DEPLOY)
    assert [h.seq for h in store.search("build-release.sh deploy")] == [2]
    assert [h.seq for h in store.search('"script now" Raspberry')] == []


def test_a_two_character_query_is_found_by_a_scan(store: SessionStore) -> None:
    store.put(DEPLOY)
    hits = store.search("起動")
    assert [h.handle for h in hits] == ["cc:3f2a#1"]
    assert hits[0].score is None  # unranked
    assert [h.seq for h in store.search("Pi")] == [1, 4]  # session then seq order
    assert [h.seq for h in store.search("ci")] == [2]  # LIKE is case-blind for ASCII


def test_a_short_word_beside_a_long_one_filters_the_ranked_hits(store: SessionStore) -> None:
    store.put(DEPLOY)
    assert [h.seq for h in store.search("script Pi")] == [4]
    assert [h.seq for h in store.search("release CI")] == [2]


def test_like_wildcards_in_a_short_word_are_literal(store: SessionStore) -> None:
    store.put(session("x", "100% sure", "50 percent", "a_b", "ab"))
    assert [h.seq for h in store.search("%")] == [0]
    assert [h.seq for h in store.search("_")] == [2]


def test_fts_syntax_in_a_query_is_read_as_text(store: SessionStore) -> None:
    store.put(session("x", 'say "NEAR(a b)" OR AND', "plain"))
    assert [h.seq for h in store.search("NEAR(a")] == [0]
    assert [h.seq for h in store.search('"OR AND"')] == [0]


def test_ranking_is_bm25_then_session_then_seq(store: SessionStore) -> None:
    store.put(session("b", "deploy", "deploy"))
    store.put(session("a", "deploy", "unrelated words", "deploy deploy and more"))
    hits = store.search("deploy")
    # The one-word turns tie on bm25 (session a before b, then seq); the longer turn,
    # though it says "deploy" twice, ranks below them.
    assert [h.handle for h in hits] == ["cc:a#0", "cc:b#0", "cc:b#1", "cc:a#2"]
    assert hits[0].score == hits[1].score == hits[2].score
    assert hits[2].score > hits[3].score  # type: ignore[operator]


def test_ties_order_by_session_then_seq(store: SessionStore) -> None:
    for name in ("c", "a", "b"):
        store.put(session(name, "same words", "same words"))
    assert [h.handle for h in store.search("same words")] == [
        "cc:a#0", "cc:a#1", "cc:b#0", "cc:b#1", "cc:c#0", "cc:c#1",
    ]  # fmt: skip


def test_search_limit_and_agent(store: SessionStore) -> None:
    store.put(DEPLOY)
    store.put(replace(DEPLOY, agent="codex"))
    assert len(store.search("release", limit=2)) == 2
    assert {h.agent for h in store.search("release", agent="codex")} == {"codex"}
    assert {h.handle for h in store.search("起動", agent="codex")} == {"cx:3f2a#1"}


def test_an_empty_query_or_limit_is_a_usage_error(store: SessionStore) -> None:
    with pytest.raises(BadQuery) as caught:
        store.search('  "" ')
    assert caught.value.exit_code == EXIT_USAGE
    with pytest.raises(BadQuery, match="--limit 0"):
        store.search("deploy", limit=0)


def test_query_words_keep_quoted_phrases_whole() -> None:
    assert query_words('build  "deploy script" 起動 build') == ["build", "deploy script", "起動"]
    assert query_words('"unterminated phrase') == ["unterminated phrase"]


def test_snippet_is_one_line_around_the_first_match() -> None:
    text = "x" * 100 + "\n\nthe deploy\tscript" + "y" * 200
    shown = snippet(text, ["DEPLOY"])
    assert shown.startswith("…" + "x" * 34 + " the deploy script")
    assert shown.endswith("…") and "\n" not in shown
    assert snippet("short text", ["absent"]) == "short text"


def test_a_snippet_begins_at_a_word_when_a_space_is_near() -> None:
    text = "The Raspberry Pi would not start because build-release.sh no longer copies it"
    assert (
        snippet(text, ["build-release"])
        == "…Raspberry Pi would not start because build-release.sh no longer copies it"
    )
    assert snippet("あ" * 60 + "起動しない", ["起動"]) == "…" + "あ" * 40 + "起動しない"


# ---------------------------------------------------------------- show


def test_show_gives_the_turn_and_its_context_verbatim(store: SessionStore) -> None:
    store.put(DEPLOY)
    assert store.show("cc:3f2a#2", context=1) == list(DEPLOY.events[1:4])


def test_show_context_stops_at_both_ends(store: SessionStore) -> None:
    store.put(DEPLOY)
    assert [e.seq for e in store.show("cc:3f2a#0", context=2)] == [0, 1, 2]
    assert [e.seq for e in store.show("cc:3f2a#4", context=2)] == [2, 3, 4]
    assert [e.seq for e in store.show("cc:3f2a#4", context=0)] == [4]
    assert [e.seq for e in store.show("cc:3f2a#2", context=99)] == [0, 1, 2, 3, 4]


def test_show_without_a_seq_gives_the_whole_session(store: SessionStore) -> None:
    store.put(DEPLOY)
    assert store.show("claude-code:3f2a") == list(DEPLOY.events)


def test_show_accepts_a_unique_prefix_of_the_session_id(store: SessionStore) -> None:
    store.put(session("3f2a9c", "one"))
    store.put(session("3f2b00", "two"))
    assert store.resolve("cc:3f2a#0") == Handle("claude-code", "3f2a9c", 0)
    assert [e.text for e in store.show("cc:3f2a#0")] == ["one"]
    with pytest.raises(HandleNotFound, match="begins several"):
        store.show("cc:3f2#0")


def test_show_of_a_missing_session_or_turn_says_what_is_there(store: SessionStore) -> None:
    store.put(DEPLOY)
    with pytest.raises(HandleNotFound, match="no such session") as caught:
        store.show("cc:ffff#1")
    assert caught.value.exit_code == EXIT_FAILED
    with pytest.raises(HandleNotFound, match="has 5 turns, #0 to #4"):
        store.show("cc:3f2a#5")
    with pytest.raises(HandleNotFound):
        store.show("cx:3f2a#0")  # another agent's session of the same id


@pytest.mark.parametrize("text", ["3f2a#1", "zz:3f2a#1", "cc:#1", "cc:3f2a#x", "cc:3f2a#-1"])
def test_a_malformed_handle_is_a_usage_error(text: str) -> None:
    with pytest.raises(BadHandle) as caught:
        parse_handle(text)
    assert caught.value.exit_code == EXIT_USAGE


def test_handles_parse_with_the_prefix_or_the_agent_name() -> None:
    assert parse_handle("cc:3f2a#12") == Handle("claude-code", "3f2a", 12)
    assert parse_handle("codex:019a") == Handle("codex", "019a", None)
    assert str(parse_handle("openai-chat:ab#0")) == "oc:ab#0"
