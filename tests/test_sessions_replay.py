"""`taguru-ray sessions replay HANDLE --from N --to M` and `sessions expand HANDLE#SEQ -C K`
(cli/sessions_use.py): turns verbatim, each headed by its handle, time, speaker and kind,
control characters escaped; no model, exit 0 / 1 no such turn / 2 usage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taguru_ray.cli import main
from taguru_ray.sessions.events import Event, Origin, Session
from taguru_ray.sessions.index import SessionStore

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
CC = "cc:3f2a9c1e-7b4d-4e8a-9f21-5c6d7e8f9a0b"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], list[str]]:
    code = main(["sessions", *argv])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    folder = tmp_path / "store"
    main(["sessions", "import", str(FIXTURES / "claude-code" / f"{CC[3:]}.jsonl"),
          "--store", str(folder)])  # fmt: skip
    capsys.readouterr()
    return folder


def test_replay_prints_the_turns_from_to_verbatim(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    code, out, err = run(capsys, "replay", "cc:3f2a", "--from", "3", "--to", "4",
                         "--store", str(store))  # fmt: skip
    assert (code, err) == (0, [])
    assert out == [
        f"{CC}#3  2025-10-05T01:32:45Z  agent:claude-code  thinking",
        "The user renamed the deploy script. I should find every reference to deploy.sh first.",
        "",
        f"{CC}#4  2025-10-05T01:32:46Z  agent:claude-code  assistant_text",
        "README と CI の設定で deploy.sh を参照している箇所を探します。",
    ]


def test_replay_is_the_stored_text_and_clips_to_the_session(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    code, out, _ = run(capsys, "replay", CC, "--from", "0", "--to", "999", "--json",
                       "--store", str(store))  # fmt: skip
    assert code == 0
    body = json.loads(out[0])
    with SessionStore(store) as opened:
        events = opened.events("claude-code", CC[3:])
    assert [t["handle"] for t in body["turns"]] == [f"{CC}#{e.seq}" for e in events]
    assert [t["text"] for t in body["turns"]] == [e.text for e in events]


def test_expand_prints_the_turn_and_k_either_side_marking_it(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    code, out, _ = run(capsys, "expand", "cc:3f2a#4", "-C", "1", "--store", str(store))
    assert code == 0
    heads = [line for line in out if line.startswith(CC)]
    assert [h.split("  ")[0] for h in heads] == [f"{CC}#3", f"{CC}#4", f"{CC}#5"]
    assert heads[1].endswith("  ◀") and not heads[0].endswith("◀")
    _, same, _ = run(capsys, "show", "cc:3f2a#4", "--context", "1", "--store", str(store))
    assert out == same  # expand is show's turns, by the seed's name


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["expand", "cc:3f2a"], 2, "expand needs a turn"),
        (["expand", "cc:3f2a#99"], 1, "the session has 28 turns"),
        (["expand", "cc:3f2a#1", "-C", "-1"], 2, "give 0 or more turns"),
        (["replay", "cc:3f2a", "--from", "40", "--to", "41"], 1, "the session has 28 turns"),
        (["replay", "cc:3f2a", "--from", "5", "--to", "2"], 2, "give 0 ≤ FROM ≤ TO"),
        (["replay", "cc:ffff", "--from", "0", "--to", "1"], 1, "no such session"),
        (["replay", "cc:3f2a", "--from", "0"], 2, "--to"),
    ],
)
def test_bad_handles_and_ranges(
    capsys: pytest.CaptureFixture[str], store: Path, argv: list[str], code: int, says: str
) -> None:
    got, out, err = run(capsys, *argv, "--store", str(store))
    assert (got, out) == (code, [])
    assert says in err[0]


def test_control_characters_in_a_turn_are_escaped_tabs_kept(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = "before\x1b[2Jafter\tcolumn\nline two\x07"
    event = Event(0, "user", None, False, "user_text", text, Origin(1))
    with SessionStore(tmp_path, create=True) as opened:
        opened.put(Session("openai-chat", "ab12", "/s/a.json", "d", (event,)))
    code, out, _ = run(capsys, "replay", "oc:ab12", "--from", "0", "--to", "0",
                       "--store", str(tmp_path))  # fmt: skip
    assert code == 0
    assert out == ["oc:ab12#0  -  user  user_text", "before\\u{1b}[2Jafter\tcolumn",
                   "line two\\u{7}"]  # fmt: skip


@pytest.mark.parametrize(
    "argv",
    [
        ("replay", "cc:3f2a", "--from", "0", "--to", "99999999999999999999"),
        ("replay", "cc:3f2a", "--from", "99999999999999999999", "--to", "99999999999999999999"),
        ("expand", "cc:3f2a#1", "-C", "99999999999999999999"),
        ("show", "cc:3f2a#1", "--context", "99999999999999999999"),
        ("search", "deploy", "--limit", "99999999999999999999"),
        ("recall", "deploy", "--limit", "99999999999999999999"),
    ],
)
def test_a_number_past_what_the_store_holds_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], store: Path, argv: tuple[str, ...]
) -> None:
    """Issue 49 item 11: SQLite's OverflowError ("this is a bug") became a usage error."""
    code, out, err = run(capsys, *argv, "--store", str(store))
    assert (code, out) == (2, [])
    assert "past the largest number a store holds" in err[0] and "bug" not in err[0]
