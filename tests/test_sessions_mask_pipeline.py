"""The mask test set (issue 38, acceptance): secrets at every quoting level — bare,
"quoted", JSON-escaped, JSON inside JSON, key=value, a URL with a token — in every
format the converters read (a Claude Code session, a Codex rollout with the secret in
``function_call.arguments``, an OpenAI chat log with it in ``tool_calls``), imported with
``sessions import --mask``, then extracted with the default stages against the
simulator, on Ray, and used: recall, show, search, brief, replay, expand, list. No run
of four characters of any secret's body is in the store (the SQLite files, the
.ledger, every file under it), in the --out folder (every file, .extract-trace and any
sidecar included), in the Ray session's logs, or on any command's stdout or stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from taguru_ray.cli import main
from tests.support import CONTEXT, REPO, Cli

# The secret's body (what must never show), then the text it is written in; a body
# is mixed case so no four of its characters can be a placeholder's hex digest.
SECRETS = {
    "bare": ("QWRTZPLMNBVX7K3H", "the release key AKIA{} leaked into the Deploy Script"),
    "github": ("Hb7Kq2Wz9Lm4Xr8Tn3Vp6Ys1Jd5Gc0Fa2Qe7Ru", "the Deploy Script uses ghp_{} now"),
    "quoted": ("Vq7Lm2Xr9Tz4Kp8Wn3Yd", 'export API_KEY="{}" && ./deploy.sh'),
    "json": ("Hj5Rt8Qw2Zx6Mn9Pk4Lb", '{{"password": "{}", "user": "deploy"}}'),
    "json_in_json": ("Gf3Xc7Vb1Nm5Qa8Ws2Ej", "nested"),
    "key_value": ("Tk6Yh2Ug9Ij4Ol7Pz3Rx", "DB_PASSWORD={} ./migrate.sh"),
    "url_query": ("Zq8vR2mK4tW9xB7nC3pL", 'curl "https://api.example.com/v1/items?token={}&page=2"'),
    "url_userinfo": ("Wm4Kd8Hs2Fr6Jt9Lq3Nv", "git clone https://x-access-token:{}@github.com/o/r.git"),
}  # fmt: skip


def spelled(name: str) -> str:
    body, template = SECRETS[name]
    if name == "json_in_json":
        return json.dumps({"env": json.dumps({"token": body})})
    return template.format(body)


def runs(body: str) -> list[bytes]:
    return [body[i : i + 4].encode() for i in range(len(body) - 3)]


RUNS = {name: runs(body) for name, (body, _) in SECRETS.items()}


def leaks(data: bytes) -> list[str]:
    return [name for name, parts in RUNS.items() if any(part in data for part in parts)]


def texts() -> list[str]:
    return [f"The Deploy Script step {i} reads it: {spelled(name)}"
            for i, name in enumerate(SECRETS)]  # fmt: skip


def claude_code(folder: Path) -> Path:
    lines: list[dict[str, Any]] = []

    def add(kind: str, content: Any, **extra: Any) -> None:
        index = len(lines)
        message: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            message |= {"id": f"msg_{index}", "type": "message", "model": "claude-sonnet-4-5"}
        lines.append({
            "parentUuid": None if index == 0 else f"u{index - 1}", "isSidechain": False,
            "userType": "external", "cwd": "/home/wang/src/app", "sessionId": "cc5ec7e7",
            "version": "2.0.46", "type": kind, "message": message, "uuid": f"u{index}",
            "timestamp": f"2025-10-06T08:{index // 60:02d}:{index % 60:02d}.000Z", **extra,
        })  # fmt: skip

    for i, text in enumerate(texts()):
        add("user", f"デプロイの件: {text}")
        add("assistant", [{"type": "text", "text": f"I moved it. {text}"}])
        call = {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": text}}
        add("assistant", [call])
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": text}
        add("user", [result], toolUseResult={"stdout": text, "stderr": "", "interrupted": False,
                                             "isImage": False})  # fmt: skip
    path = folder / "cc5ec7e7.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def codex(folder: Path) -> Path:
    def line(second: int, kind: str, payload: dict[str, Any]) -> str:
        return (
            json.dumps(
                {
                    "timestamp": f"2025-10-04T09:12:{second:02d}.000Z",
                    "type": kind,
                    "payload": payload,
                }
            )
            + "\n"
        )

    out = [
        line(
            0,
            "session_meta",
            {
                "id": "0199c0de-5ec7-7e5f-8a6b-1c2d3e4f5a6b",
                "timestamp": "2025-10-04T09:12:00.000Z",
                "cwd": "/home/wang/src/app",
                "originator": "codex_cli_rs",
                "cli_version": "0.44.0",
                "source": "cli",
            },
        )
    ]
    for i, text in enumerate(texts()):
        s = 1 + i * 5
        said = f"デプロイの件: {text}"
        out.append(line(s, "event_msg", {"type": "user_message", "message": said, "images": []}))
        out.append(
            line(
                s,
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": said}],
                },
            )
        )
        arguments = json.dumps({"command": ["bash", "-lc", text], "workdir": "/home/wang/src/app"})
        out.append(
            line(
                s + 1,
                "response_item",
                {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": arguments,
                    "call_id": f"call_{i}",
                },
            )
        )
        output = json.dumps({"output": text, "metadata": {"exit_code": 0}})
        out.append(
            line(
                s + 2,
                "response_item",
                {"type": "function_call_output", "call_id": f"call_{i}", "output": output},
            )
        )
        answer = f"I moved it. {text}"
        out.append(line(s + 3, "event_msg", {"type": "agent_message", "message": answer}))
        out.append(
            line(
                s + 3,
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": answer}],
                },
            )
        )
    path = folder / "rollout-2025-10-04T09-12-00-0199c0de-5ec7-7e5f-8a6b-1c2d3e4f5a6b.jsonl"
    path.write_text("".join(out), encoding="utf-8")
    return path


def openai_chat(folder: Path) -> Path:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You help with releases."}]
    for i, text in enumerate(texts()):
        messages.append({"role": "user", "content": f"デプロイの件: {text}"})
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "run", "arguments": json.dumps({"command": text})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": text})
        messages.append({"role": "assistant", "content": f"I moved it. {text}"})
    path = folder / "chat.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def sessions(cli_: Cli, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "taguru_ray", "sessions", *argv]
    return subprocess.run(command, env=cli_.env(), cwd=REPO, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def files_under(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()]


def test_no_part_of_a_masked_secret_reaches_a_store_a_file_a_log_or_a_stream(
    cli: Cli, tmp_path: Path
) -> None:
    for name, (body, _) in SECRETS.items():  # the set is what it says it is
        assert all(any(c not in "0123456789abcdef" for c in run.decode()) for run in RUNS[name])
        assert body in spelled(name)
    raw = tmp_path / "raw"
    raw.mkdir()
    written = [claude_code(raw), codex(raw), openai_chat(raw)]
    assert all(leaks(path.read_bytes()) == list(SECRETS) for path in written)
    store, out = tmp_path / "store", tmp_path / "out"

    streams: list[tuple[str, str]] = []

    def run(*argv: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        done = sessions(cli, *argv)
        assert done.returncode == code, (argv, done.stdout, done.stderr)
        streams.append((" ".join(argv), done.stdout + done.stderr))
        return done

    run("import", *map(str, written), "--mask", "--store", str(store))
    assert main(["sessions", "list", "--store", str(store), "--json"]) == 0
    run("extract", "--store", str(store), "--out", str(out), "--context", CONTEXT,
        "--address", cli.address)  # fmt: skip
    # Tool calls, their output and thinking in the passage and asked about, too.
    full = tmp_path / "full"
    run("extract", "--store", str(store), "--out", str(full), "--context", CONTEXT,
        "--address", cli.address, "--passage", "full",
        "--candidates", "tool_call,tool_result,thinking")  # fmt: skip
    listed = json.loads(run("list", "--store", str(store), "--json").stdout)["sessions"]
    handles = [row["handle"] for row in listed]
    assert len(handles) == 3 and all(row["facts"] for row in listed), listed
    for query in ("Deploy Script", "token", "export", "curl", "デプロイ"):
        run("search", query, "--store", str(store))
        run("recall", query, "--store", str(store))
        run("recall", query, "--json", "--store", str(store))
    run("brief", "--store", str(store))
    run("brief", "--json", "--store", str(store))
    for handle in handles:
        run("show", handle, "--store", str(store))
        run("show", f"{handle}#2", "--json", "--store", str(store))
        run("replay", handle, "--from", "0", "--to", "40", "--store", str(store))
        run("expand", f"{handle}#3", "-C", "3", "--store", str(store))

    assert any("redacted" in text for _, text in streams)  # the turns were shown, masked
    found = [(argv, leaks(text.encode())) for argv, text in streams if leaks(text.encode())]
    assert not found, found
    stored = files_under(store)
    assert any(path.suffix == ".sqlite3" for path in stored)
    assert any(".ledger" in path.parts for path in stored)
    out_files = files_under(out) + files_under(full)
    assert any(".extract-trace" in str(path) for path in out_files)
    assert any(b"redacted" in path.read_bytes() for path in out.glob("*.jsonl"))
    for path in [*stored, *out_files, *ray_logs()]:
        assert not leaks(path.read_bytes()), (path, leaks(path.read_bytes()))


def ray_logs() -> list[Path]:
    """The files of this test session's Ray logs folder (workers, raylet, the driver)."""
    import ray

    node = getattr(ray._private.worker, "_global_node", None)
    if node is None:
        return []
    return files_under(Path(node.get_session_dir_path()) / "logs")
