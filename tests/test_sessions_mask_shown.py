"""What `sessions import` shows and keeps of a secret (issue 49 items 9 and 10): a
secret-shaped path is masked under ``--mask`` and refused without it, the way extract's
``--redact`` refuses such a path — never stored, printed by ``sessions list`` or written
under ``--out/.extract-trace/``; and a masked value ends where its reading ends, never
swallowing the line break and the next word after it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.cli import main
from taguru_ray.sessions.convert import convert
from tests.support import Cli
from tests.test_sessions_extract_cli import extract, trace_of

SESSION_ID = "5ec7e7aa-1b2c-4d3e-8f4a-5b6c7d8e9f00"
# A folder name Claude Code would make of a working directory holding a token.
TOKEN = "ghp_Hb7Kq2Wz9Lm4Xr8Tn3Vp6Ys1Jd5Gc0Fa2Qe7Ru"
BODY = TOKEN.removeprefix("ghp_")


def _line(index: int, kind: str, content: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message |= {"id": f"msg_{index}", "type": "message", "model": "claude-sonnet-4-5"}
    return {
        "parentUuid": None if index == 0 else f"u{index - 1}", "isSidechain": False,
        "userType": "external", "cwd": "/home/wang/src/app", "sessionId": SESSION_ID,
        "version": "2.0.46", "type": kind, "message": message, "uuid": f"u{index}",
        "timestamp": f"2025-10-06T08:00:{index:02d}.000Z",
    }  # fmt: skip


def _session(folder: Path, *texts: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [_line(0, "user", texts[0])]
    lines += [_line(i, "assistant", [{"type": "text", "text": t}]) for i, t in
              enumerate(texts[1:], start=1)]  # fmt: skip
    path = folder / f"{SESSION_ID}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_masked_password_keeps_the_line_break_and_the_word_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`password: x\\nThe Deploy…` lost `\\nThe` to the mask: the raw line reads the
    escaped line break as part of the bare value, its decoded reading does not."""
    file = _session(tmp_path / "in", "password: x\nThe Deploy Script runs first.", "Done.")
    store = tmp_path / "store"
    code, out, err = _cli(capsys, "sessions", "import", str(file), "--store", str(store), "--mask")
    assert code == 0, err
    code, out, _ = _cli(capsys, "sessions", "show", f"cc:{SESSION_ID}#0", "--store", str(store))
    assert code == 0
    assert "password: «redacted credential_assignment" in out
    assert "The Deploy Script runs first." in out.splitlines()  # its own line, whole


def test_a_masked_value_read_two_strings_deep_ends_where_the_deepest_reading_ends() -> None:
    """The same in a Codex call's arguments (JSON inside a JSON string): the line, the
    arguments and the command each read the value; the deepest reading decides."""
    arguments = json.dumps({"command": ["bash", "-lc", "echo password: x\nThe Deploy"]})
    line = {"timestamp": "2025-10-04T09:50:00.000Z", "type": "response_item",
            "payload": {"type": "function_call", "name": "shell", "arguments": arguments,
                        "call_id": "c1"}}  # fmt: skip
    meta = {"timestamp": "2025-10-04T09:49:00.000Z", "type": "session_meta",
            "payload": {"id": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
                        "timestamp": "2025-10-04T09:49:00.000Z", "cwd": "/w",
                        "originator": "codex_cli_rs", "cli_version": "0.44.0",
                        "source": "cli"}}  # fmt: skip
    data = (json.dumps(meta) + "\n" + json.dumps(line) + "\n").encode()
    session = convert(data, file="rollout.jsonl", mask=True)
    (call,) = [event for event in session.events if event.kind == "tool_call"]
    assert "«redacted credential_assignment" in call.text
    assert "The Deploy" in call.text.replace("\\n", "\n")


@pytest.fixture
def secret_folder(tmp_path: Path) -> Path:
    return _session(tmp_path / "projects" / f"-home-wang-{TOKEN}", "Run the Deploy Script.",
                    "The Deploy Script ran.")  # fmt: skip


def test_a_secret_in_a_session_files_path_refuses_it_without_mask(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], secret_folder: Path
) -> None:
    store = tmp_path / "store"
    code, out, err = _cli(capsys, "sessions", "import", str(tmp_path / "projects"),
                          "--store", str(store))  # fmt: skip
    assert code == 1
    assert "its path holds a secret (github_token)" in err and "--mask" in err
    assert BODY[:8] not in out + err
    code, out, err = _cli(capsys, "sessions", "list", "--store", str(store))
    assert BODY[:8] not in out + err


def test_a_secret_in_a_session_files_path_is_masked_everywhere_with_mask(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], secret_folder: Path, cli: Cli
) -> None:
    store, out_dir = tmp_path / "store", tmp_path / "out"
    code, out, err = _cli(capsys, "sessions", "import", str(tmp_path / "projects"),
                          "--store", str(store), "--mask")  # fmt: skip
    assert code == 0, err
    assert "«redacted github_token" in out and BODY[:8] not in out + err
    code, out, err = _cli(capsys, "sessions", "list", "--store", str(store), "--json")
    (listed,) = json.loads(out)["sessions"]
    assert "«redacted github_token" in listed["file"] and BODY[:8] not in out + err
    done = extract(cli, store, out_dir)
    assert done.returncode == 0, done.stderr
    assert BODY[:8] not in done.stdout + done.stderr
    (head,) = [line for line in trace_of(out_dir, f"session:claude-code:{SESSION_ID}")
               if line["type"] == "session"]  # fmt: skip
    assert "«redacted github_token" in head["file"]
    for folder in (store, out_dir):
        for written in folder.rglob("*"):
            if written.is_file():
                assert BODY[:8].encode() not in written.read_bytes(), written
