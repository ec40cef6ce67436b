"""``sessions import --mask`` masks a credential in a URL and keeps the URL: the host,
the path and the other query parameters are no secret (`convert/secrets.py`,
`url_aware`). Each case is written as the agents write it — a Codex call's arguments
(JSON inside a JSON string) and a Claude Code ``Bash`` call's input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taguru_ray.sessions.convert import convert
from taguru_ray.sessions.convert.secrets import secret_rules
from taguru_ray.text.redact import builtin_rules, groups_from_setting

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
CODEX = next((FIXTURES / "codex").glob("rollout-*.jsonl"))
CLAUDE = FIXTURES / "claude-code" / "3f2a9c1e-7b4d-4e8a-9f21-5c6d7e8f9a0b.jsonl"
TOKEN = "Zq8vR2mK4tW9xB7nC3pL"

# (command, what must stay) — the token is never kept.
CASES = [
    (f"git remote add origin https://x-access-token:{TOKEN}@github.com/org/repo.git",
     "@github.com/org/repo.git"),
    (f"git clone https://token:{TOKEN}@gitlab.example.com/group/app.git",
     "@gitlab.example.com/group/app.git"),
    (f'curl "https://api.example.com/v1/items?token={TOKEN}&page=2"',
     "https://api.example.com/v1/items?token=«redacted"),
    (f"open https://api.example.com/cb?code=1&access_token={TOKEN}#top", "#top"),
    (f"wscat -c wss://stream.example.com/ws?apikey={TOKEN}&symbols=AAPL", "&symbols=AAPL"),
]  # fmt: skip


def _codex_with(command: str) -> bytes:
    arguments = json.dumps({"command": ["bash", "-lc", command], "workdir": "/w"})
    call = {"timestamp": "2025-10-04T09:50:00.000Z", "type": "response_item",
            "payload": {"type": "function_call", "name": "shell", "arguments": arguments,
                        "call_id": "call_url"}}  # fmt: skip
    return CODEX.read_bytes() + json.dumps(call).encode() + b"\n"


def _claude_with(command: str) -> bytes:
    lines = [json.loads(raw) for raw in CLAUDE.read_bytes().splitlines()]
    last = [line for line in lines if line.get("type") == "assistant"][-1]
    use = {"type": "tool_use", "id": "toolu_url", "name": "Bash", "input": {"command": command}}
    line = {**last, "uuid": "url-1", "parentUuid": last.get("uuid"), "type": "assistant",
            "message": {"role": "assistant", "model": "claude-x", "id": "msg_url",
                        "type": "message", "content": [use]}}  # fmt: skip
    return CLAUDE.read_bytes() + json.dumps(line).encode() + b"\n"


@pytest.mark.parametrize(("command", "kept"), CASES)
@pytest.mark.parametrize("build", [_codex_with, _claude_with], ids=["codex", "claude-code"])
def test_a_url_keeps_its_host_path_and_other_parameters(command, kept, build) -> None:  # type: ignore[no-untyped-def]
    session = convert(build(command), file="s.jsonl", mask=True)
    (call,) = [e for e in session.events if e.tool and e.tool.call_id in ("call_url", "toolu_url")]
    assert TOKEN not in call.text
    assert "«redacted credential_assignment" in call.text
    assert kept in call.text
    assert session.masked


def test_extracts_own_redaction_rules_are_not_changed() -> None:
    """`--redact` reads as the reference does; only the session scan reads URLs so."""
    builtins = builtin_rules(groups_from_setting("secrets"))
    changed = [a.name for a, b in zip(builtins, secret_rules(), strict=False) if a != b]
    assert changed == ["credential_assignment"]
