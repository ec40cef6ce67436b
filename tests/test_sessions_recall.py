"""`taguru-ray sessions recall` (cli/sessions_use.py, sessions/recall.py): with no model a
turn's brief is ``pending`` and the handles search found are still there; once facts are
stored, each line's brief is one sentence built from its turn's fact. No model is asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taguru_ray.cli import main
from taguru_ray.sessions.events import Event, Origin, Session
from taguru_ray.sessions.index import SessionStore
from taguru_ray.sessions.memory import Fact, MemoryStore
from taguru_ray.sessions.recall import sentence

T0 = 1_777_977_120_000  # 2026-05-05T10:32:00Z


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], list[str]]:
    code = main(["sessions", *argv])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def put(store: Path, agent: str, session_id: str, *texts: str, cwd: str | None = None) -> None:
    events = tuple(
        Event(seq, "user" if seq % 2 == 0 else f"agent:{agent}", T0 + seq * 1000, True,
              "user_text" if seq % 2 == 0 else "assistant_text", text, Origin(seq + 1))
        for seq, text in enumerate(texts)
    )  # fmt: skip
    with SessionStore(store, create=True) as opened:
        opened.put(Session(agent, session_id, f"/s/{session_id}.jsonl", "d", events, T0, cwd=cwd))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    put(
        folder, "claude-code", "3f2a",
        "Please swap the deploy script for build-release.sh.",
        "I moved the Deploy Script to build-release.sh.",
        "The Raspberry Pi does not boot with the deploy script.",
        cwd="/home/wang/src/app",
    )  # fmt: skip
    put(folder, "codex", "019a", "release notes for the deploy", "ok")
    return folder


def test_with_no_model_every_brief_is_pending_and_the_handles_are_there(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    code, out, err = run(capsys, "recall", "deploy", "--store", str(store))
    assert code == 0
    assert handles(out) == searched(capsys, store, "deploy")  # search's order, all of it
    assert len(out) == 4 and all(line.endswith("  pending") for line in out)
    assert "cc:3f2a#0  2026-05-05T10:32:00Z  pending" in out
    assert "sessions extract" in err[-1]


def handles(lines: list[str]) -> list[str]:
    return [line.split("  ")[0] for line in lines]


def searched(capsys: pytest.CaptureFixture[str], store: Path, query: str) -> list[str]:
    _, out, _ = run(capsys, "search", query, "--store", str(store))
    return handles(out)


def test_a_line_feeds_expand(capsys: pytest.CaptureFixture[str], store: Path) -> None:
    _, out, _ = run(capsys, "recall", "Raspberry", "--store", str(store))
    code, shown, _ = run(capsys, "expand", out[0].split()[0], "-C", "0", "--store", str(store))
    assert code == 0 and shown[0].startswith("cc:3f2a#2  ") and shown[0].endswith("◀")


def test_stored_facts_give_one_sentence_briefs_first(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    with MemoryStore(store) as memory:
        quote = "I moved the Deploy Script to build-release.sh."
        assert memory.put_facts("claude-code", "3f2a", "project:app", [
            Fact(1, quote, "Deploy Script", "moved to", "build-release.sh")])  # fmt: skip
    code, out, _ = run(capsys, "recall", "deploy", "--store", str(store))
    assert code == 0
    order = searched(capsys, store, "deploy")
    assert out[:2] == [
        "cc:3f2a#1  2026-05-05T10:32:01Z  Deploy Script moved to build-release.sh.",  # a brief
        "cx:019a#0  2026-05-05T10:32:00Z  pending",  # codex: not extracted
    ]
    # Extracted, and they state no fact: last, in search's order.
    assert handles(out[2:]) == [h for h in order if h in ("cc:3f2a#0", "cc:3f2a#2")]
    assert all(line.endswith("  -") for line in out[2:])
    _, out, _ = run(capsys, "recall", "deploy", "--limit", "1", "--json", "--store", str(store))
    body = json.loads(out[0])
    assert [h["handle"] for h in body["hits"]] == ["cc:3f2a#1"]
    assert body["hits"][0]["state"] == "brief"
    assert body["hits"][0]["facts"] == [
        {
            "seq": 1,
            "quote": quote,
            "subject": "Deploy Script",
            "predicate": "moved to",
            "value": "build-release.sh",
        }
    ]


def test_a_reimport_that_changes_the_session_makes_its_facts_pending_again(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    with MemoryStore(store) as memory:
        memory.put_facts(
            "codex", "019a", None, [Fact(0, "release notes", "release", "has", "notes")]
        )
    _, out, _ = run(capsys, "recall", "release", "--agent", "codex", "--store", str(store))
    assert out == ["cx:019a#0  2026-05-05T10:32:00Z  release has notes."]
    put(store, "codex", "019a", "release notes for the deploy, revised", "ok")
    _, out, _ = run(capsys, "recall", "release", "--agent", "codex", "--store", str(store))
    assert out == ["cx:019a#0  2026-05-05T10:32:00Z  pending"]


def test_a_brief_is_one_sentence_on_one_line() -> None:
    assert sentence(Fact(0, "q", "a\nb", "is", "c.")) == "a b is c."
    assert (
        sentence(Fact(0, "q", "デプロイ", "は", "build-release.sh。"))
        == "デプロイ は build-release.sh。"
    )
    long = sentence(Fact(0, "q", "x" * 300, "is", "y"))
    assert len(long) == 240 and long.endswith("…")


def test_control_characters_in_a_brief_are_escaped(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    with MemoryStore(store) as memory:
        memory.put_facts("codex", "019a", None, [Fact(0, "release", "release\x1b[2J", "is", "x")])
    _, out, _ = run(capsys, "recall", "release", "--agent", "codex", "--store", str(store))
    assert out == ["cx:019a#0  2026-05-05T10:32:00Z  release\\u{1b}[2J is x."]


@pytest.mark.parametrize("argv", [["recall", "", "--store"], ["recall", "x", "--limit", "0",
                                                              "--store"]])  # fmt: skip
def test_bad_recall_flags_are_usage_errors(
    capsys: pytest.CaptureFixture[str], store: Path, argv: list[str]
) -> None:
    code, out, _ = run(capsys, *argv, str(store))
    assert (code, out) == (2, [])


def test_no_store_is_exit_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "recall", "deploy", "--store", str(tmp_path))
    assert code == 1 and "no session store here" in err[0]
