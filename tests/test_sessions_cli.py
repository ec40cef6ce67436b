"""`taguru-ray sessions import | list | search | show` (taguru_ray/cli/sessions.py): exit
codes, the lines a user reads (each about a turn starts with its handle) and the --json
shapes. The import tests that only need the CLI's own work (the walk, the lines, the exit
code) run over a stand-in converter; the fixture folder runs through the real one."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import fsspec
import pytest

from taguru_ray.cli import main
from taguru_ray.sessions import convert as convert_module
from taguru_ray.sessions.events import Event, Origin, Session
from taguru_ray.sessions.index import SessionStore

T0 = 1_777_977_120_000  # 2026-05-05T10:32:00Z
FIXTURES = Path(__file__).parent / "fixtures" / "sessions"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], list[str]]:
    code = main(["sessions", *argv])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def put(store: Path, agent: str, session_id: str, *texts: str) -> None:
    events = tuple(
        Event(seq, "user" if seq % 2 == 0 else f"agent:{agent}", T0 + seq * 1000, True,
              "user_text" if seq % 2 == 0 else "assistant_text", text, Origin(seq + 1))
        for seq, text in enumerate(texts)
    )  # fmt: skip
    with SessionStore(store, create=True) as opened:
        opened.put(Session(agent, session_id, f"/s/{session_id}.jsonl", "d", events, T0))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    put(
        folder, "claude-code", "3f2a",
        "デプロイスクリプトを build-release.sh に差し替えました。",
        "了解、build-release.sh を確認します。",
        "Raspberry Pi 側が起動しない。\n\nログを見てください。",
        "The deploy script runs on CI.",
    )  # fmt: skip
    put(folder, "codex", "019a", "release notes for the deploy", "ok")
    return folder


# ---------------------------------------------------------------- verbs and usage


def test_sessions_is_a_verb_of_the_console_script(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "  sessions   " in capsys.readouterr().out
    code, out, _ = run(capsys, "--help")
    assert code == 0 and out[0].startswith("usage: taguru-ray sessions <import|list|")


@pytest.mark.parametrize("argv", [[], ["extract", "--store", "x"], ["frobnicate"]])
def test_no_verb_or_an_unknown_verb_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == []
    assert err


def test_every_verb_needs_a_store(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "list")
    assert code == 2
    assert err == [
        "taguru-ray: sessions list: the following arguments are required: --store "
        "— try 'taguru-ray sessions list --help'"
    ]


def test_the_store_is_a_local_folder(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "list", "--store", "s3://bucket/store")
    assert code == 2 and "a local folder" in err[0]


@pytest.mark.parametrize("verb", [["list"], ["search", "deploy"], ["show", "cc:3f2a#0"]])
def test_a_folder_without_a_store_exits_1_naming_the_import(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, verb: list[str]
) -> None:
    code, out, err = run(capsys, *verb, "--store", str(tmp_path / "none"))
    assert (code, out) == (1, [])
    assert len(err) == 1 and "taguru-ray sessions import PATH… --store" in err[0]
    assert not (tmp_path / "none").exists()


# ---------------------------------------------------------------- list


def test_list_prints_one_line_per_session_starting_with_its_handle(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    code, out, _ = run(capsys, "list", "--store", str(store))
    assert code == 0
    assert out == [
        "cc:3f2a  2026-05-05T10:32:00Z  4 turns  facts -  /s/3f2a.jsonl",
        "cx:019a  2026-05-05T10:32:00Z  2 turns  facts -  /s/019a.jsonl",
    ]


def test_list_json(capsys: pytest.CaptureFixture[str], store: Path) -> None:
    with SessionStore(store) as opened:
        opened.set_facts("codex", "019a", 3)
    code, out, _ = run(capsys, "list", "--store", str(store), "--json")
    assert code == 0 and len(out) == 1
    assert json.loads(out[0]) == {
        "sessions": [
            {"agent": "claude-code", "session_id": "3f2a", "handle": "cc:3f2a",
             "started_ms": T0, "turns": 4, "file": "/s/3f2a.jsonl", "facts": None,
             "ledger": None},
            {"agent": "codex", "session_id": "019a", "handle": "cx:019a",
             "started_ms": T0, "turns": 2, "file": "/s/019a.jsonl", "facts": 3,
             "ledger": None},
        ]
    }  # fmt: skip


# ---------------------------------------------------------------- search


def test_search_prints_one_line_per_hit_starting_with_the_handle(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    code, out, err = run(capsys, "search", "build-release", "--store", str(store))
    assert (code, err) == (0, [])
    assert out == [
        "cc:3f2a#1  2026-05-05T10:32:01Z  agent:claude-code  了解、build-release.sh を確認します。",
        "cc:3f2a#0  2026-05-05T10:32:00Z  user  "
        "デプロイスクリプトを build-release.sh に差し替えました。",
    ]


def test_search_finds_japanese_and_english_by_substring(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    _, out, _ = run(capsys, "search", "スクリプトを", "--store", str(store))
    assert [line.split()[0] for line in out] == ["cc:3f2a#0"]
    _, out, _ = run(capsys, "search", "eploy scr", "--store", str(store))  # mid-word
    assert [line.split()[0] for line in out] == ["cc:3f2a#3"]


def test_a_hit_spanning_paragraphs_is_still_one_line(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    _, out, _ = run(capsys, "search", "ログを", "--store", str(store))
    assert out == [
        "cc:3f2a#2  2026-05-05T10:32:02Z  user  Raspberry Pi 側が起動しない。 ログを見てください。"
    ]


def test_search_json_and_agent(capsys: pytest.CaptureFixture[str], store: Path) -> None:
    code, out, _ = run(
        capsys, "search", "deploy", "--agent", "codex", "--json", "--store", str(store)
    )
    assert code == 0
    body = json.loads(out[0])
    assert body["query"] == "deploy" and body["ranked"] is True
    hit = body["hits"][0]
    score = hit.pop("score")
    assert isinstance(score, float)
    assert body["hits"] == [
        {"handle": "cx:019a#0", "agent": "codex", "session_id": "019a", "seq": 0, "ts_ms": T0,
         "speaker_id": "user", "kind": "user_text", "snippet": "release notes for the deploy"},
    ]  # fmt: skip


def test_a_short_query_scans_and_says_so(capsys: pytest.CaptureFixture[str], store: Path) -> None:
    code, out, err = run(capsys, "search", "起動", "--store", str(store))
    assert code == 0 and [line.split()[0] for line in out] == ["cc:3f2a#2"]
    assert err == [
        "taguru-ray: sessions search: every word is under 3 characters: every turn was scanned, "
        "and the hits are in session order, not ranked"
    ]
    _, out, _ = run(capsys, "search", "起動", "--json", "--store", str(store))
    body = json.loads(out[0])
    assert body["ranked"] is False and body["hits"][0]["score"] is None


def test_no_hit_is_exit_0_with_a_note_on_stderr(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    code, out, err = run(capsys, "search", "nowhere to be found", "--store", str(store))
    assert (code, out) == (0, [])
    assert err == ["taguru-ray: sessions search: no turn holds 'nowhere to be found'"]


@pytest.mark.parametrize("argv", [["--limit", "0"], ["--agent", "vim"], ["--limit", "x"]])
def test_bad_search_flags_are_usage_errors(
    capsys: pytest.CaptureFixture[str], store: Path, argv: list[str]
) -> None:
    code, out, _ = run(capsys, "search", "deploy", *argv, "--store", str(store))
    assert (code, out) == (2, [])


# ---------------------------------------------------------------- show


def test_show_prints_the_turns_verbatim_marking_the_handles(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    code, out, _ = run(capsys, "show", "cc:3f2a#2", "--context", "1", "--store", str(store))
    assert code == 0
    assert out == [
        "cc:3f2a#1  2026-05-05T10:32:01Z  agent:claude-code  assistant_text",
        "了解、build-release.sh を確認します。",
        "",
        "cc:3f2a#2  2026-05-05T10:32:02Z  user  user_text  ◀",
        "Raspberry Pi 側が起動しない。",
        "",
        "ログを見てください。",
        "",
        "cc:3f2a#3  2026-05-05T10:32:03Z  agent:claude-code  assistant_text",
        "The deploy script runs on CI.",
    ]


def test_show_json(capsys: pytest.CaptureFixture[str], store: Path) -> None:
    source = "session:codex:019a"
    code, out, _ = run(
        capsys, "show", "cx:019a#1", "--context", "5", "--json", "--store", str(store)
    )
    assert code == 0
    assert json.loads(out[0]) == {
        "handle": "cx:019a#1",
        "turns": [
            {"handle": "cx:019a#0", "seq": 0, "speaker_id": "user", "ts_ms": T0,
             "ts_exact": True, "kind": "user_text", "text": "release notes for the deploy",
             "origin": {"line": 1, "uuid": None, "parent": None, "block": None},
             "tool": None, "branch": None, "sidechain": False, "source": source, "mentions": [],
             "sha256": hashlib.sha256(b"release notes for the deploy").hexdigest()},
            {"handle": "cx:019a#1", "seq": 1, "speaker_id": "agent:codex", "ts_ms": T0 + 1000,
             "ts_exact": True, "kind": "assistant_text", "text": "ok",
             "origin": {"line": 2, "uuid": None, "parent": None, "block": None},
             "tool": None, "branch": None, "sidechain": False, "source": source, "mentions": [],
             "sha256": hashlib.sha256(b"ok").hexdigest()},
        ],
    }  # fmt: skip


def test_show_expands_an_abbreviated_session_id(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    _, out, _ = run(capsys, "show", "cc:3f#0", "--context", "0", "--store", str(store))
    assert out[0].startswith("cc:3f2a#0  ")


def test_a_search_line_feeds_show(capsys: pytest.CaptureFixture[str], store: Path) -> None:
    _, out, _ = run(capsys, "search", "Raspberry", "--store", str(store))
    code, shown, _ = run(capsys, "show", out[0].split()[0], "--context", "0", "--store", str(store))
    assert code == 0 and shown[0].startswith("cc:3f2a#2  ") and shown[0].endswith("◀")


@pytest.mark.parametrize(
    ("handle", "code", "says"),
    [
        ("cc:ffff#0", 1, "no such session in"),
        ("cc:3f2a#9", 1, "the session has 4 turns, #0 to #3"),
        ("nonsense", 2, "is not a handle"),
    ],
)
def test_show_of_a_missing_or_malformed_handle(
    capsys: pytest.CaptureFixture[str], store: Path, handle: str, code: int, says: str
) -> None:
    got, out, err = run(capsys, "show", handle, "--store", str(store))
    assert (got, out) == (code, [])
    assert len(err) == 1 and says in err[0]


# ---------------------------------------------------------------- import (stand-in converter)


class Refused(Exception):
    """The stand-in's SessionRefused."""


def fake_convert(
    data: bytes,
    *,
    file: str,
    format: str | None = None,
    mask: bool = False,
    rules: Any = None,
    key: bytes = b"",
) -> Session:
    """One turn per line; the file's stem is its session id; a line REFUSE refuses it."""
    lines = data.decode().splitlines()
    if "REFUSE" in lines:
        raise Refused(f"{file}: line {lines.index('REFUSE') + 1}: $.type: unknown field")
    FAKE_CALLS.append((file, format, mask, rules))
    events = tuple(
        Event(n, "user", None, False, "user_text", text, Origin(n + 1))
        for n, text in enumerate(lines)
    )
    stem = file.rsplit("/", 1)[-1].split(".")[0]
    digest = hashlib.sha256(data).hexdigest()
    return Session(format or "claude-code", stem, file, digest, events)


FAKE_CALLS: list[tuple[str, str | None, bool, Any]] = []


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | None, bool, Any]]:
    monkeypatch.setattr(convert_module, "convert", fake_convert, raising=False)
    monkeypatch.setattr(convert_module, "SessionRefused", Refused, raising=False)
    FAKE_CALLS.clear()
    return FAKE_CALLS


def sessions_folder(root: Path) -> Path:
    (root / "proj" / "s1" / "subagents").mkdir(parents=True)
    (root / "proj" / "b.jsonl").write_text("hello\nworld\n")
    (root / "proj" / "a.json").write_text("one turn\n")
    (root / "proj" / "s1" / "subagents" / "agent-7.jsonl").write_text("sub\n")
    (root / "proj" / "notes.txt").write_text("not a session\n")
    (root / "proj" / ".hidden").mkdir()
    (root / "proj" / ".hidden" / "x.jsonl").write_text("hidden\n")
    return root / "proj"


def test_import_walks_a_folder_in_name_order_one_line_per_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stand_in: list[Any]
) -> None:
    folder = sessions_folder(tmp_path)
    code, out, err = run(capsys, "import", str(folder), "--store", str(tmp_path / "st"))
    assert (code, err) == (0, [])
    assert out == [
        f"{folder}/a.json: added cc:a (1 turn)",
        f"{folder}/b.jsonl: added cc:b (2 turns)",
        f"{folder}/s1/subagents/agent-7.jsonl: added cc:agent-7 (1 turn)",
    ]
    code, out, _ = run(capsys, "import", str(folder), "--store", str(tmp_path / "st"))
    assert code == 0
    assert [line.split(": ")[1] for line in out] == [
        "unchanged cc:a (1 turn)",
        "unchanged cc:b (2 turns)",
        "unchanged cc:agent-7 (1 turn)",
    ]
    (folder / "b.jsonl").write_text("hello\nworld\nagain\n")
    code, out, _ = run(capsys, "import", str(folder / "b.jsonl"), "--store", str(tmp_path / "st"))
    assert (code, out) == (0, [f"{folder}/b.jsonl: replaced cc:b (3 turns)"])
    _, listed, _ = run(capsys, "list", "--store", str(tmp_path / "st"))
    assert [line.split()[0] for line in listed] == ["cc:a", "cc:agent-7", "cc:b"]


def test_a_refused_file_is_one_stderr_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stand_in: list[Any]
) -> None:
    folder = sessions_folder(tmp_path)
    (folder / "c.jsonl").write_text("fine\nREFUSE\n")
    code, out, err = run(capsys, "import", str(folder), "--store", str(tmp_path / "st"))
    assert code == 1
    assert err == [f"{folder}/c.jsonl: line 2: $.type: unknown field"]
    assert len(out) == 3  # the others are stored


def test_import_passes_format_mask_and_rules_to_the_converter(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stand_in: list[Any]
) -> None:
    (tmp_path / "s.jsonl").write_text("x\n")
    (tmp_path / "rules.tsv").write_text("# mine\nticket\tTKT-[0-9]+\n")
    code, out, _ = run(
        capsys, "import", str(tmp_path / "s.jsonl"), "--store", str(tmp_path / "st"),
        "--format", "codex", "--mask", "--redact-rules", str(tmp_path / "rules.tsv"),
    )  # fmt: skip
    assert code == 0 and out == [f"{tmp_path}/s.jsonl: added cx:s (1 turn)"]
    [(file, format_, mask, rules)] = stand_in
    assert (file, format_, mask) == (f"{tmp_path}/s.jsonl", "codex", True)
    assert [rule.name for rule in rules] == ["ticket"]


def test_import_reads_an_fsspec_url(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stand_in: list[Any]
) -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe({"/bucket/run/x.jsonl": b"from memory\n", "/bucket/run/y.txt": b"no"})
    try:
        code, out, _ = run(capsys, "import", "memory://bucket/run", "--store", str(tmp_path / "st"))
    finally:
        fs.rm("/bucket", recursive=True)
    assert (code, out) == (0, ["memory://bucket/run/x.jsonl: added cc:x (1 turn)"])


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["missing"], 2, "missing: no such file or folder"),
        (["empty"], 1, "empty: no session file (*.jsonl, *.json) in it"),
        (["s.jsonl", "--format", "vim"], 2, "invalid choice: 'vim'"),
        (["s.jsonl", "--redact-rules", "bad.tsv"], 2, "bad.tsv: line 1"),
    ],
)
def test_import_usage_and_empty_folders(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    stand_in: list[Any],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    code: int,
    says: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "s.jsonl").write_text("x\n")
    (tmp_path / "bad.tsv").write_text("no tab here\n")
    got, out, err = run(capsys, "import", *argv, "--store", "st")
    assert (got, out) == (code, [])
    assert len(err) == 1 and says in err[0]


# ---------------------------------------------------------------- import (the real converters)


AWS_KEY = "AKIAIOSFODNN7EXAMPLE"  # planted in claude-code/planted-aws-key.jsonl


def stored_bytes(store: Path) -> bytes:
    """Every byte the store folder holds (the database, its WAL and shared memory)."""
    return b"".join(path.read_bytes() for path in sorted(store.iterdir()) if path.is_file())


def test_import_of_the_fixture_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    files = sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".jsonl", ".json"))
    store = tmp_path / "st"
    code, out, err = run(capsys, "import", str(FIXTURES), "--store", str(store))
    assert code == 1  # two files are refused
    assert err == [
        f"{FIXTURES}/claude-code/planted-aws-key.jsonl: line 3: a secret (rule aws_access_key)"
        " — refused; --mask replaces it",
        f"{FIXTURES}/claude-code/unknown-field.jsonl: line 3: "
        "$.message.content[2].attribution: unknown field (claude-code allow-list v1)",
    ]
    assert len(out) == len(files) - 2 and all(" added " in line for line in out)
    assert AWS_KEY not in "".join(out) and AWS_KEY.encode() not in stored_bytes(store)
    _, listed, _ = run(capsys, "list", "--store", str(store))
    assert sorted(line.split()[0] for line in listed) == sorted(line.split()[2] for line in out)
    code, again, _ = run(capsys, "import", str(FIXTURES), "--store", str(store))
    assert code == 1 and len(again) == len(out)
    assert all(" unchanged " in line for line in again)


def test_the_fixtures_are_searchable_in_japanese_and_english_with_no_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run(capsys, "import", str(FIXTURES), "--store", str(tmp_path / "st"))
    for phrase in ("デプロイスクリプト", "boot partition"):
        code, out, _ = run(capsys, "search", phrase, "--store", str(tmp_path / "st"))
        assert code == 0 and out
        for line in out:
            handle = line.split()[0]
            _, shown, _ = run(capsys, "show", handle, "--context", "0", "--json",
                              "--store", str(tmp_path / "st"))  # fmt: skip
            [turn] = json.loads(shown[0])["turns"]
            assert phrase.casefold() in turn["text"].casefold()


def test_a_masked_key_is_in_no_output_and_not_in_the_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "st"
    planted = FIXTURES / "claude-code" / "planted-aws-key.jsonl"
    code, out, err = run(capsys, "import", str(planted), "--mask", "--store", str(store))
    assert (code, err) == (0, [])
    [line] = out
    assert re.fullmatch(
        rf"{re.escape(str(planted))}: added cc:\S+ \(\d+ turns, [1-9]\d* secrets? masked\)", line
    )
    _, hits, _ = run(capsys, "search", "redacted aws_access_key", "--store", str(store))
    assert len(hits) == 1
    _, none, _ = run(capsys, "search", "AKIA", "--store", str(store))
    assert none == []
    assert AWS_KEY.encode() not in stored_bytes(store)


def test_a_double_encoded_assignment_reaches_neither_the_store_nor_show_nor_search(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 37 item 4: a Codex call's arguments are JSON inside a JSON string, its output
    JSON inside one too; the assignment's value is masked at every level it is written."""
    value = "Zq81vXk-hunter2"
    [codex] = (FIXTURES / "codex").glob("rollout-*.jsonl")
    lines = codex.read_text(encoding="utf-8").splitlines()
    stamp = "2025-10-04T09:12:46.500Z"
    command = f'export API_KEY="{value}" && ./deploy.sh --target pi'
    call = {"command": ["bash", "-lc", command], "workdir": "/home/wang/src/app"}
    output = {"output": f'declare -x API_KEY="{value}"\n', "metadata": {"exit_code": 0}}
    planted = [
        {"timestamp": stamp, "type": "response_item",
         "payload": {"type": "function_call", "name": "shell", "arguments": json.dumps(call),
                     "call_id": "call_K3y"}},
        {"timestamp": stamp, "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "call_K3y",
                     "output": json.dumps(output)}},
    ]  # fmt: skip
    lines[10:10] = [json.dumps(record, separators=(",", ":")) for record in planted]
    session = tmp_path / "rollout-planted.jsonl"
    session.write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = tmp_path / "st"
    code, out, err = run(capsys, "import", str(session), "--mask", "--store", str(store))
    assert (code, err) == (0, [])
    assert re.search(r": added (cx:\S+) \(\d+ turns, 2 secrets masked\)", out[0])
    handle = out[0].split(" added ")[1].split()[0]
    _, shown, _ = run(capsys, "show", f"{handle}#0", "--context", "99", "--json",
                      "--store", str(store))  # fmt: skip
    turns = json.loads(shown[0])["turns"]
    texts = [turn["text"] for turn in turns]
    assert not any(value in text or "hunter2" in text for text in texts)
    [shown_call] = [text for text in texts if "API_KEY" in text and "deploy.sh" in text]
    assert json.loads(shown_call)["command"][2].startswith(
        'export API_KEY="«redacted credential_assignment '
    )
    for query in (value, "hunter2", "Zq81"):
        assert run(capsys, "search", query, "--store", str(store))[1] == []
    assert len(run(capsys, "search", "redacted credential_assignment",
                   "--store", str(store))[1]) == 2  # fmt: skip
    assert value.encode() not in stored_bytes(store)
    assert b"hunter2" not in stored_bytes(store)


def test_a_masked_placeholder_is_keyed_so_the_store_cannot_check_a_guess(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store holds the file's digest, so an unkeyed sha256(digest ‖ secret) would let
    anyone holding it check a guess; under --mask the hex is an HMAC under extract's
    --redact key, which stays outside the store (TAGURU_EXTRACT_REDACT_KEY or its file)."""
    planted = FIXTURES / "claude-code" / "planted-aws-key.jsonl"
    digest = hashlib.sha256(planted.read_bytes()).hexdigest()
    unkeyed = hashlib.sha256(digest.encode() + AWS_KEY.encode()).hexdigest()
    shown: list[str] = []
    for phrase in ("one phrase", "another phrase"):
        monkeypatch.setenv("TAGURU_EXTRACT_REDACT_KEY", phrase)
        store = tmp_path / phrase.replace(" ", "-")
        assert run(capsys, "import", str(planted), "--mask", "--store", str(store))[0] == 0
        _, hits, _ = run(capsys, "search", "redacted aws_access_key", "--store", str(store))
        [hex_] = set(re.findall(r"«redacted aws_access_key ([0-9a-f]+)»", hits[0]))
        assert not unkeyed.startswith(hex_)
        shown.append(hex_)
    assert shown[0] != shown[1]


def test_a_new_rule_on_the_same_file_replaces_what_it_masks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store, chat = str(tmp_path / "st"), str(FIXTURES / "openai-chat" / "boot-steps.jsonl")
    (tmp_path / "rules.tsv").write_text("release_script\tbuild-release\n")
    assert " added " in run(capsys, "import", chat, "--store", store)[1][0]
    assert " unchanged " in run(capsys, "import", chat, "--store", store)[1][0]
    code, out, _ = run(capsys, "import", chat, "--store", store, "--mask",
                       "--redact-rules", str(tmp_path / "rules.tsv"))  # fmt: skip
    assert code == 0 and " replaced " in out[0]
    assert run(capsys, "search", "build-release", "--store", store)[1] == []


def test_a_file_imported_the_same_way_before_is_not_converted_again(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stand_in: list[Any]
) -> None:
    (tmp_path / "s.jsonl").write_text("x\n")
    argv = ["import", str(tmp_path / "s.jsonl"), "--store", str(tmp_path / "st")]
    run(capsys, *argv)
    assert run(capsys, *argv)[1] == [f"{tmp_path}/s.jsonl: unchanged cc:s (1 turn)"]
    assert len(stand_in) == 1  # the second import read the store, not the converter
    assert run(capsys, *argv, "--mask")[1] == [f"{tmp_path}/s.jsonl: unchanged cc:s (1 turn)"]
    assert len(stand_in) == 2  # another flag: converted again (to the same session)
