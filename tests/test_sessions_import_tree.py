"""``sessions import`` over what agents really leave on disk: a ``~/.claude/projects``
tree with subagents and files that are no session, OpenAI chat logs with ``--id`` and
``--started-at``, and the one-line refusals a folder import and a bad store give."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from taguru_ray.cli import main
from taguru_ray.sessions.index import SessionStore

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
CLAUDE = FIXTURES / "claude-code" / "3f2a9c1e-7b4d-4e8a-9f21-5c6d7e8f9a0b.jsonl"
OPENAI = FIXTURES / "openai-chat" / "release-support.json"
SESSION = "3f2a9c1e-7b4d-4e8a-9f21-5c6d7e8f9a0b"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], list[str]]:
    code = main(["sessions", *argv])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def _subagent_lines() -> str:
    """Two lines as Claude Code writes a subagent's own file: sidechain, one agentId."""
    base = {"isSidechain": True, "userType": "external", "cwd": "/home/wang/src/app",
            "sessionId": SESSION, "version": "2.0.46", "gitBranch": "main",
            "agentId": "a1b2"}  # fmt: skip
    ask = {"role": "user", "content": "Check the boot partition."}
    prompt = base | {"parentUuid": None, "uuid": "s1", "timestamp": "2025-10-05T01:40:00.000Z",
                     "type": "user", "message": ask}  # fmt: skip
    reply = base | {"parentUuid": "s1", "uuid": "s2", "timestamp": "2025-10-05T01:40:05.000Z",
                    "type": "assistant", "message": {"role": "assistant", "model": "claude-x",
                    "id": "msg_s2", "type": "message",
                    "content": [{"type": "text", "text": "config.txt is missing."}]}}  # fmt: skip
    return "".join(json.dumps(line) + "\n" for line in (prompt, reply))


def projects_tree(root: Path) -> Path:
    """~/.claude/projects as Claude Code lays it out, with the files it keeps there."""
    project = root / "projects" / "-home-wang-src-app"
    subagents = project / SESSION / "subagents"
    subagents.mkdir(parents=True)
    (project / f"{SESSION}.jsonl").write_bytes(CLAUDE.read_bytes())
    (subagents / "agent-a1b2.jsonl").write_text(_subagent_lines())
    (subagents / "agent-a1b2.meta.json").write_text('{"agentType":"general-purpose"}\n')
    snapshot = {"type": "file-history-snapshot", "messageId": "m1", "isSnapshotUpdate": False,
                "snapshot": {"messageId": "m1", "trackedFileBackups": {},
                             "timestamp": "2025-10-05T01:32:10.114Z"}}  # fmt: skip
    (project / "0badf00d-snapshots-only.jsonl").write_text(json.dumps(snapshot) + "\n")
    (project / "settings.local.json").write_text('{"permissions": {"allow": []}}\n')
    return root / "projects"


def test_a_claude_projects_tree_imports_with_one_note_per_file_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tree = projects_tree(tmp_path)
    code, out, err = run(capsys, "import", str(tree), "--store", str(tmp_path / "st"))
    assert code == 0, err
    project = f"{tree}/-home-wang-src-app"
    assert out == [
        f"{project}/{SESSION}.jsonl: added cc:{SESSION} (28 turns)",
        f"{project}/{SESSION}/subagents/agent-a1b2.jsonl: added cc:{SESSION}/agent-a1b2 (2 turns)",
    ]
    prefix = "taguru-ray: sessions import: "
    assert err == [
        f"{prefix}{project}/{SESSION}/subagents/agent-a1b2.meta.json: skipped — a subagent's "
        "metadata (*.meta.json), not a session",
        f"{prefix}{project}/0badf00d-snapshots-only.jsonl: skipped — not a session this "
        "reads (claude-code, codex, openai-chat) — pass --format to force one",
        f"{prefix}{project}/settings.local.json: skipped — not a session this reads "
        "(claude-code, codex, openai-chat) — pass --format to force one",
    ]


def test_a_file_that_is_no_session_named_on_its_own_is_still_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    junk = tmp_path / "settings.local.json"
    junk.write_text('{"permissions": {}}\n')
    code, _, err = run(capsys, "import", str(junk), "--store", str(tmp_path / "st"))
    assert code == 1
    assert err == [f"{junk}: not a session this reads (claude-code, codex, openai-chat) "
                   "— pass --format to force one"]  # fmt: skip


def test_an_openai_chat_log_takes_its_id_and_start_from_the_caller(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "st"
    flags = ["--id", "release-support", "--started-at", "2026-05-05T10:32:00Z"]
    code, out, _ = run(capsys, "import", str(OPENAI), "--store", str(store), *flags)
    assert code == 0
    assert out == [f"{OPENAI}: added oc:release-support (7 turns)"]
    with SessionStore(store) as opened:
        session = opened.session("openai-chat", "release-support")
    start = 1_777_977_120_000
    assert session.started_ms == start
    assert {(e.ts_ms, e.ts_exact) for e in session.events} == {(start, False)}
    from taguru_ray.contract.source_file import parse_source_file
    from taguru_ray.sessions.source import render

    data = render(session, "0b5f3c0e-8a1d-4b6e-9c2f-1d3e5a7b9c0d", session.events, [])
    assert parse_source_file(data).passage.date == start // 1000  # the source file's date


@pytest.mark.parametrize(
    ("flags", "why"),
    [
        (["--started-at", "last tuesday"], "is not an ISO 8601 time"),
        (["--id", " padded "], "give a session id"),
        (["FOLDER", "--id", "x"], "give one file, not a folder or several"),
    ],
)
def test_id_and_started_at_are_usage_errors_when_wrong(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flags: list[str], why: str
) -> None:
    argv = [str(tmp_path) if flag == "FOLDER" else flag for flag in flags]
    code, _, err = run(capsys, "import", str(OPENAI), *argv, "--store", str(tmp_path / "st"))
    assert code == 2
    assert len(err) == 1 and why in err[0]


def test_a_deeply_nested_file_in_a_folder_is_one_line_and_the_rest_import(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    depth = sys.getrecursionlimit() * 2
    (folder / "a-deep.jsonl").write_text("[" * depth + "]" * depth + "\n")
    (folder / "b.jsonl").write_bytes(CLAUDE.read_bytes())
    code, out, err = run(capsys, "import", str(folder), "--store", str(tmp_path / "st"))
    assert code == 1  # a session file that is broken, not one that is no session
    assert out == [f"{folder}/b.jsonl: added cc:{SESSION} (28 turns)"]
    assert len(err) == 1 and err[0].startswith(f"{folder}/a-deep.jsonl: ")
    assert "Traceback" not in err[0]


@pytest.mark.parametrize("kind", ["file", "corrupt"])
def test_a_store_that_is_a_file_or_corrupt_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    if kind == "file":
        store = tmp_path / "store-file"
        store.write_text("not a folder\n")
    else:
        store = tmp_path / "st"
        store.mkdir()
        (store / "taguru-sessions.sqlite3").write_bytes(b"this is no database" * 100)
    for verb in (["import", str(CLAUDE)], ["list"], ["search", "deploy"]):
        code, out, err = run(capsys, *verb, "--store", str(store))
        assert code != 0 and out == []
        assert len(err) == 1 and "Traceback" not in err[0], (verb, err)
