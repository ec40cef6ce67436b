"""Memory cards, the always-on brief and recall's briefs after `taguru-ray sessions extract`
against the simulator, on Ray: they exist and cite seqs; a card the model could not write
stays pending and a later run fills it, asking nothing else; a --mask'ed secret reaches
no card, brief or recall line."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.cli import main
from taguru_ray.sessions.index import SessionStore
from taguru_ray.sessions.memory import MemoryStore
from tests.support import CONTEXT, REPO, Cli

FIXTURES = REPO / "tests" / "fixtures" / "sessions"
SECRET = "AKIAIOSFODNN7EXAMPLE"
CC = "cc:3f2a9c1e-7b4d-4e8a-9f21-5c6d7e8f9a0b"


def extract(cli_: Cli, store: Path, out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "taguru_ray", "sessions", "extract", "--store", str(store),
               "--out", str(out), "--context", CONTEXT, "--address", cli_.address]  # fmt: skip
    return subprocess.run(command, env=cli_.env(**env), cwd=REPO, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(["sessions", *argv])
    return code, capsys.readouterr().out.splitlines()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    assert main(["sessions", "import", str(FIXTURES / "claude-code" / f"{CC[3:]}.jsonl"),
                 str(FIXTURES / "codex"), "--store", str(folder)]) == 0  # fmt: skip
    return folder


def test_after_extract_cards_briefs_and_recall_cite_seqs(
    cli: Cli, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = extract(cli, store, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "memory: 2 card(s) and 1 brief(s) written; 0 card(s) and 0 brief(s) pending" in (
        done.stderr
    )
    with SessionStore(store) as sessions, MemoryStore(store) as memory:
        rows = sessions.sessions()
        cited: set[str] = set()
        for row in rows:
            facts = memory.facts(row.agent, row.session_id)
            card = memory.card(row.agent, row.session_id)
            assert facts and card is not None and card.lines, row.handle
            assert {line.seq for line in card.lines} <= {fact.seq for fact in facts}
            cited |= {f"{row.handle}#{line.seq}" for line in card.lines}
        brief = memory.brief("project:app")
    assert brief.lines and {line.handle for line in brief.lines} <= cited
    # show prints the card first, each line starting with the handle of its turn.
    code, out = run(capsys, "show", CC, "--store", str(store))
    assert code == 0 and out[0].startswith(f"card {CC}  ")
    card_lines = out[1 : out.index("")]
    assert card_lines and all(line.startswith(f"{CC}#") for line in card_lines)
    _, out = run(capsys, "show", f"{CC}#0", "--json", "--store", str(store))
    assert json.loads(out[0])["card"]["pending"] is False
    # brief: one line per standing item, each starting with a handle.
    _, out = run(capsys, "brief", "--store", str(store))
    assert out[0].startswith("brief project:app  ")
    assert [line.split("  ")[0] for line in out[1:]] == [line.handle for line in brief.lines]
    # recall: briefs first, each built from a fact of its own turn.
    _, out = run(capsys, "recall", "build-release.sh", "--json", "--store", str(store))
    hits = json.loads(out[0])["hits"]
    assert hits and hits[0]["state"] == "brief"
    for hit in hits:
        assert hit["state"] != "pending"
        assert all(hit["handle"].endswith(f"#{fact['seq']}") for fact in hit["facts"])


def test_a_card_the_model_could_not_write_is_filled_by_a_later_run(
    cli: Cli, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    # 1. The endpoint is down: nothing is extracted, everything is pending, nothing is lost.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    down = extract(cli, store, out, TAGURU_EXTRACT_URL=f"http://127.0.0.1:{port}/v1")
    assert down.returncode != 0
    assert all(line.endswith("  pending") for line in recall(capsys, store))
    code, shown = run(capsys, "show", f"{CC}#0", "--store", str(store))
    assert code == 0 and shown[0].startswith(f"{CC}#0  ")  # the turns, no card
    # 2. The model answers the facts but not the card asks: facts stored, cards pending.
    cli.simulator.set_script([{"match": "Session c", "answer": "I would rather not."}])
    half = extract(cli, store, out)
    assert half.returncode == 0, half.stderr
    assert "card pending — the answer was unreadable" in half.stderr
    assert any(not line.endswith("  pending") for line in recall(capsys, store))
    with MemoryStore(store) as memory:
        assert len(memory.pending_cards()) == 2
        assert memory.brief("project:app").lines is None
    # 3. A later run: the extraction is unchanged and asks nothing; the cards and the brief
    #    are asked for, once each, and written.
    cli.simulator.set_script([])
    cli.simulator.reset()
    later = extract(cli, store, out)
    assert later.returncode == 0, later.stderr
    assert cli.simulator.stats()["requests"] == 3  # two cards, one brief
    with MemoryStore(store) as memory:
        assert memory.pending_cards() == []
        assert memory.brief("project:app").lines
    _, shown = run(capsys, "show", f"{CC}#0", "--store", str(store))
    assert shown[0].startswith(f"card {CC}  ")


def recall(capsys: pytest.CaptureFixture[str], store: Path) -> list[str]:
    code, out = run(capsys, "recall", "deploy", "--store", str(store))
    assert code == 0 and out
    return out


def test_a_masked_secret_reaches_no_card_brief_or_recall_line(
    cli: Cli, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = tmp_path / "3f2a.jsonl"  # a Claude Code session, so it has a project
    lines = [
        ("user", f"The Deploy Script reads AWS_ACCESS_KEY_ID={SECRET} from the Vault."),
        ("assistant", f"I moved the Deploy Script key {SECRET} into the Vault Store."),
        ("user", "The Deploy Script now runs on the Build Server."),
    ]
    chat.write_text("".join(json.dumps(claude_line(i, role, text)) + "\n"
                            for i, (role, text) in enumerate(lines)), encoding="utf-8")  # fmt: skip
    store = tmp_path / "store"
    assert main(["sessions", "import", str(chat), "--mask", "--store", str(store)]) == 0
    done = extract(cli, store, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr
    printed = []
    for argv in (["recall", "Deploy Script"], ["recall", "Deploy Script", "--json"],
                 ["brief"], ["brief", "--json"], ["show", "cc:aaaa"],
                 ["show", "cc:aaaa#1", "--json"]):  # fmt: skip
        code, out = run(capsys, *argv, "--store", str(store))
        assert code == 0
        printed += out
    text = "\n".join(printed)
    assert "card cc:aaaa" in text and "brief project:app" in text and "redacted" in text
    assert SECRET not in text
    with MemoryStore(store) as memory:
        card = memory.card("claude-code", "aaaa")
        brief = memory.brief("project:app")
    assert card is not None and card.lines and brief.lines
    assert SECRET not in repr((card, brief))
    assert SECRET.encode() not in (store / "taguru-sessions.sqlite3").read_bytes()


def claude_line(index: int, role: str, text: str) -> dict[str, Any]:
    content: Any = text if role == "user" else [{"type": "text", "text": text}]
    message: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant":
        message |= {"id": f"msg_{index}", "type": "message", "model": "claude-sonnet-4-5"}
    return {
        "parentUuid": None if index == 0 else f"u{index - 1}", "isSidechain": False,
        "userType": "external", "cwd": "/home/wang/src/app", "sessionId": "aaaa",
        "version": "2.0.46", "type": role, "message": message, "uuid": f"u{index}",
        "timestamp": f"2025-10-06T08:00:0{index}.000Z",
    }  # fmt: skip
