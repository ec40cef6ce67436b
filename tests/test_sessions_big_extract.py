"""A 22 MiB Claude Code session, almost all ``cat`` output, through ``sessions import``
and ``sessions extract`` against the simulator, on Ray: the dialogue passage is small,
``--passage full`` is written in parts that each import whole, every fact carries its
provenance, and ``sessions list`` shows the run's ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taguru_ray.cli import main as cli_main
from taguru_ray.contract.names import TRACE, output_name
from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.sessions.memory import Fact, MemoryStore
from tests.big_sessions import SESSION_ID, big_session
from tests.support import Cli, assert_imports_whole
from tests.test_sessions_extract_cli import extract

SOURCE = f"session:claude-code:{SESSION_ID}"


@pytest.fixture
def big_store(tmp_path: Path) -> Path:
    file = tmp_path / f"{SESSION_ID}.jsonl"
    file.write_bytes(big_session())
    store = tmp_path / "store"
    assert cli_main(["sessions", "import", str(file), "--store", str(store)]) == 0
    return store


def _fact(line: dict[str, object]) -> Fact:
    return Fact(int(str(line["seq"])), str(line["quote"]), str(line["subject"]),
                str(line["predicate"]), str(line["value"]))  # fmt: skip


def _facts(out: Path, source: str) -> list[dict[str, object]]:
    lines = (out / TRACE / output_name(source)).read_text(encoding="utf-8").splitlines()
    return [line for line in map(json.loads, lines) if line["type"] == "fact"]


def test_a_20_mib_session_extracts_whole_or_in_parts_that_import_whole(
    cli: Cli, big_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dialogue, full = tmp_path / "dialogue", tmp_path / "full"
    done = extract(cli, big_store, dialogue)
    assert done.returncode == 0, done.stderr
    data = (dialogue / output_name(SOURCE)).read_bytes()
    assert len(data) < 256 * 1024  # the dialogue of 22 MiB of session
    assert_imports_whole(str(dialogue))
    facts = _facts(dialogue, SOURCE)
    assert facts
    for fact in facts:  # P14: every written fact says where it came from
        assert fact["source"] == SOURCE and fact["speaker_id"] and fact["turn_sha256"]
        assert fact["span"] is not None and fact["prompt_sha256"] and fact["model"]

    done = extract(cli, big_store, full, "--passage", "full")
    assert done.returncode == 0, done.stderr
    parts = sorted(p.name for p in full.glob("*.jsonl"))
    assert len(parts) >= 3
    ids = []
    for name in parts:
        parsed = parse_source_file((full / name).read_bytes(), name=name)
        assert parsed.header.id.startswith(f"{SOURCE}/part-")
        ids.append(parsed.header.id)
    assert_imports_whole(str(full))
    # Issue 49 item 13: the session's memory holds every part's facts, in part order —
    # each part's remember() used to replace the last, leaving the last part's alone.
    by_part = [[_fact(line) for line in _facts(full, source)] for source in sorted(ids)]
    assert sum(1 for facts in by_part if facts) >= 2, by_part
    with MemoryStore(big_store) as memory:
        remembered = memory.facts("claude-code", SESSION_ID)
    assert remembered == [fact for facts in by_part for fact in facts]

    capsys.readouterr()
    assert cli_main(["sessions", "list", "--store", str(big_store), "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)["sessions"]
    assert listed["ledger"]["outcome"] == "written"
    assert "fact" in listed["ledger"]["stages"]
