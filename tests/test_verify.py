"""`verify`: an out folder judged as one import stream, in name order."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from taguru_ray.tools.verify import verify_files
from tests.support import CONTEXT, REPO

OTHER_CONTEXT = "00000000-6c1a-4d8e-9a51-2f3c4b5d6e7f"


def source(
    ident: str,
    associations: list[tuple[str, str, str]],
    aliases: Sequence[tuple[str, str, str]] = (),
    *,
    context: str = CONTEXT,
    create: dict[str, str] | None = None,
) -> bytes:
    header: dict[str, object] = {
        "type": "source",
        "version": "2026-09-17",
        "id": ident,
        "context_id": context,
    }
    if create is not None:
        header["create"] = create
    lines = [header]
    lines += [{"subject": s, "label": lb, "object": o, "weight": 1.0} for s, lb, o in associations]
    lines += [{"alias": a, "canonical": c, "kind": k} for a, c, k in aliases]
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


def test_a_folder_whose_files_agree_imports_whole() -> None:
    files = {
        "a.md-1.jsonl": source("a.md", [("Alpha", "uses", "Beta")]),
        "b.md-2.jsonl": source(
            "b.md",
            [("Gamma", "uses", "Beta")],
            [("GM", "Gamma", "concept"), ("B", "Beta", "concept")],
        ),
    }
    result = verify_files(files)
    assert result.ok and result.files == 2 and result.refused == 0


def test_an_alias_rewiring_an_earlier_files_name_is_named_with_its_file_and_line() -> None:
    files = {
        "a.md-1.jsonl": source("a.md", [("Alpha", "uses", "Beta")]),
        "z.md-2.jsonl": source(
            "z.md", [("Gamma", "powers", "Zeta")], [("Beta", "Gamma", "concept")]
        ),
    }
    result = verify_files(files)
    [problem] = result.problems
    assert (problem.file, problem.line) == ("z.md-2.jsonl", 3)
    assert problem.item == 'alias "Beta" → "Gamma" (concept)'
    assert '"Beta" already names "Beta", settled by an earlier file' in problem.problem
    assert result.refused == 1


def test_the_same_mapping_again_and_an_alias_chained_to_an_alias_import() -> None:
    files = {
        "a.jsonl": source("a", [("Alpha", "uses", "Beta")], [("AL", "Alpha", "concept")]),
        # Same mapping again (a no-op), and a canonical that is an earlier file's alias.
        "b.jsonl": source(
            "b", [("Delta", "uses", "Alpha")], [("AL", "Alpha", "concept"), ("A", "AL", "concept")]
        ),
    }
    assert verify_files(files).ok


def test_a_canonical_nothing_interns_is_a_problem() -> None:
    files = {"a.jsonl": source("a", [("Alpha", "uses", "Beta")], [("X", "Nowhere", "concept")])}
    [problem] = verify_files(files).problems
    assert "names no concept this file or an earlier one interns" in problem.problem


def test_a_file_that_does_not_parse_is_named_and_left_out() -> None:
    broken = source("b", [("Beta", "uses", "Gamma")]) + b'{"subject": "x"}\n'
    files = {
        "a.jsonl": source("a", [("Alpha", "uses", "Beta")]),
        "b.jsonl": broken,
        # c's alias would rewire b's "Gamma" had b imported; b was refused, so it does not.
        "c.jsonl": source("c", [("Delta", "uses", "Epsilon")], [("Gamma", "Delta", "concept")]),
    }
    result = verify_files(files)
    [problem] = result.problems
    assert problem.file == "b.jsonl" and problem.line == 3 and problem.item == "file"


def test_ids_contexts_and_create_blocks_must_agree() -> None:
    files = {
        "a.jsonl": source("a", [("A", "uses", "B")], create={"name": "demo", "description": "x"}),
        "b.jsonl": source("a", [("C", "uses", "D")]),
        "c.jsonl": source("c", [("E", "uses", "F")], create={"name": "other"}),
        "d.jsonl": source("d", [("G", "uses", "H")], context=OTHER_CONTEXT),
    }
    problems = {(p.file, p.item): p.problem for p in verify_files(files).problems}
    assert "is also written by a.jsonl" in problems[("b.jsonl", "header")]
    assert "create block differs from a.jsonl's" in problems[("c.jsonl", "header")]
    assert f"targets context {OTHER_CONTEXT}" in problems[("d.jsonl", "header")]


def verify_cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "taguru_ray", "verify", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)


def test_the_cli_exits_0_or_1_with_one_line_per_problem_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.md-1.jsonl").write_bytes(source("a.md", [("Alpha", "uses", "Beta")]))
    (out / ".extract-trace").mkdir()  # records are never read as source files
    (out / ".extract-trace" / "a.md-1.jsonl").write_text("not a source file\n")
    ok = verify_cli(str(out))
    assert ok.returncode == 0 and ok.stdout == "verify: 1 source file(s), imports whole\n"
    (out / "z.md-2.jsonl").write_bytes(
        source("z.md", [("Gamma", "powers", "Zeta")], [("Beta", "Gamma", "concept")])
    )
    report = tmp_path / "report.json"
    bad = verify_cli(str(out), "--json", str(report))
    assert bad.returncode == 1
    first, summary = bad.stdout.splitlines()
    assert first.startswith('z.md-2.jsonl: line 3: alias "Beta" → "Gamma" (concept): ')
    assert summary == "verify: 2 source file(s), 1 problem(s)"
    data = json.loads(report.read_text())
    assert data["ok"] is False and data["problems"][0]["file"] == "z.md-2.jsonl"
    assert json.loads(verify_cli(str(out), "--json", "-").stdout)["refused"] == 1
    assert verify_cli(str(tmp_path / "absent")).returncode == 2
    (tmp_path / "empty").mkdir()
    assert verify_cli(str(tmp_path / "empty")).returncode == 1
