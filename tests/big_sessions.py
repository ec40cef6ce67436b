"""A big Claude Code session, built as Claude Code writes one: a user's question, then
turn after turn of ``cat`` tool output, one turn of it over a part's cap, and a few
lines of dialogue — what a real session with a log in it looks like."""

from __future__ import annotations

import json
from typing import Any

SESSION_ID = "7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
MiB = 1 << 20


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.parent: str | None = None

    def add(self, type_: str, message: dict[str, Any]) -> None:
        n = len(self.lines)
        uuid = f"{n:08d}-0000-4000-8000-000000000000"
        record = {
            "parentUuid": self.parent, "isSidechain": False, "userType": "external",
            "cwd": "/home/wang/src/app", "sessionId": SESSION_ID, "version": "2.0.46",
            "gitBranch": "main", "uuid": uuid,
            "timestamp": f"2025-10-05T01:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
            "type": type_, "message": message,
        }  # fmt: skip
        self.lines.append(json.dumps(record, ensure_ascii=False))
        self.parent = uuid

    def say(self, text: str) -> None:
        content = [{"type": "text", "text": text}]
        message_id = f"m{len(self.lines)}"
        self.add("assistant", {"role": "assistant", "model": "claude-x", "id": message_id,
                               "type": "message", "content": content})  # fmt: skip

    def run(self, call_id: str, command: str, output: str) -> None:
        use = {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}
        self.add("assistant", {"role": "assistant", "model": "claude-x", "id": f"m{call_id}",
                               "type": "message", "content": [use]})  # fmt: skip
        result = {"type": "tool_result", "tool_use_id": call_id, "content": output}
        self.add("user", {"role": "user", "content": [result]})


def big_session(logs: int = 55, log_bytes: int = 200 * 1024, huge_bytes: int = 9 * MiB) -> bytes:
    """About ``logs × log_bytes + huge_bytes`` of tool output around a little dialogue."""
    writer = _Writer()
    ask = "ビルドログを見て、build-release.sh が失敗する原因を調べて。"
    writer.add("user", {"role": "user", "content": ask})
    for n in range(logs):
        lines = range(log_bytes // 36)
        log = "\n".join(f"[{n:03d}:{k:06d}] ok: compiled module_{k}.o" for k in lines)
        writer.run(f"toolu_{n:04d}", f"cat logs/build-{n}.log", log)
        writer.say(f"Log {n} shows every module compiled; the failure is elsewhere.")
    huge = "\n".join(f"kernel: boot line {k}, nothing to see" for k in range(huge_bytes // 36))
    writer.run("toolu_boot", "cat /var/log/boot.log", huge)
    writer.say("The boot log shows config.txt is missing: build-release.sh no longer copies it.")
    return ("\n".join(writer.lines) + "\n").encode()
