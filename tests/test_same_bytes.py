"""One file under two source ids (ADR 0061): the decision, the digest indexes, the CLI."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from taguru_ray.engine.same_bytes import RunDigests, SameBytes, renamed_line, same_bytes_line
from taguru_ray.store.manifest_digests import ManifestDigests
from taguru_ray.store.manifest_rows import PackedEntries
from tests.support import CONTEXT, REPO, Cli

A = hashlib.sha256(b"a").hexdigest()
B = hashlib.sha256(b"b").hexdigest()


def entry(sha256: str, **more: object) -> dict[str, object]:
    return {"sha256": sha256, "model": "m", "prompt_version": 6, **more}


def decide(
    sources: list[str],
    digests: list[str],
    manifest: dict[str, list[tuple[str, str]]] | None = None,
    cap: int = 10,
    ids: list[str] | None = None,
) -> list[str]:
    said: list[str] = []
    held = manifest or {}
    same = SameBytes(
        lambda i: (sources[i], (ids or sources)[i]), lambda d: held.get(d, []), said.append, cap
    )
    for index, digest in enumerate(digests):
        same.check(index, digest)
    same.close()
    return said


def test_a_file_under_two_paths_in_one_run_is_named_once() -> None:
    said = decide(["/home/me/a.md", "a.md", "b.md"], [A, A, B])
    assert said == [same_bytes_line("a.md", "/home/me/a.md", True, A)]
    assert said[0].startswith("taguru: extract: a.md: the same bytes as /home/me/a.md, earlier")


def test_bytes_another_path_wrote_into_the_manifest_are_named() -> None:
    said = decide(["a.md"], [A], {A: [("/home/me/a.md", "/home/me/a.md")]})
    assert said == [same_bytes_line("a.md", "/home/me/a.md", False, A)]
    assert "already extracted into this --out" in said[0]


def test_bytes_a_path_the_inputs_no_longer_hold_wrote_are_a_rename() -> None:
    # ADR 0083: the manifest's holder is an orphan of the run — the file was renamed.
    said: list[str] = []
    same = SameBytes(
        lambda i: ("docs/new.md", "docs/new.md"),
        lambda d: [("docs/old.md", "docs/old.md")],
        said.append,
        renamed=lambda path: path == "docs/old.md",
        prune=True,
    )
    same.check(0, A)
    assert said == [renamed_line("docs/new.md", "docs/old.md", A, prune=True)]
    assert "renamed segment is extracted afresh" in said[0] and "(--prune)" in said[0]
    assert "--prune retires the old one" in renamed_line("n.md", "o.md", A, prune=False)


def test_the_segments_own_entry_is_not_a_pair() -> None:
    assert decide(["a.md"], [A], {A: [("a.md", "a.md")]}) == []


def test_the_same_written_source_id_under_another_path_is_not_a_pair() -> None:
    # --source-id: both paths write the id `notes`, one source in the context.
    assert decide(["a.md"], [A], {A: [("/x/a.md", "notes")]}, ids=["notes"]) == []


def test_a_pair_met_from_both_sides_is_one_line() -> None:
    # Both were extracted before under their own paths; this run extracts both again.
    manifest = {A: [("/home/me/a.md", "/home/me/a.md"), ("a.md", "a.md")]}
    said = decide(["/home/me/a.md", "a.md"], [A, A], manifest)
    assert said == [same_bytes_line("/home/me/a.md", "a.md", False, A)]


def test_lines_past_the_cap_are_counted_in_one_line() -> None:
    sources = [f"/abs/{n}.md" for n in range(4)] + [f"{n}.md" for n in range(4)]
    digests = [hashlib.sha256(bytes([n])).hexdigest() for n in range(4)] * 2
    said = decide(sources, digests, cap=2)
    assert said[:2] == [
        same_bytes_line("0.md", "/abs/0.md", True, digests[0]),
        same_bytes_line("1.md", "/abs/1.md", True, digests[1]),
    ]
    assert said[2:] == [
        "taguru: extract: 2 more segment(s) with the same bytes as another source id "
        "(the first 2 are named above)"
    ]


def test_run_digests_remember_the_first_segment_through_growth() -> None:
    table = RunDigests()
    digests = [hashlib.sha256(str(n).encode()).hexdigest() for n in range(100)]
    assert [table.first(d, n) for n, d in enumerate(digests)] == [None] * 100
    assert [table.first(d, 100 + n) for n, d in enumerate(digests)] == list(range(100))


def test_the_manifest_index_finds_every_kind_of_row_and_no_prefix_twin() -> None:
    twin = A[:8] + "0" * 56  # the same first 4 bytes, other bytes
    entries = PackedEntries(
        {
            "a.md": entry(A),  # a bare digest
            "b.md": entry(B),
            "c.md": entry(A, source_id="notes/c"),  # an unusual row
            "d.md": entry(twin),
            "e.md": entry(A),
        }
    )
    del entries["e.md"]  # a deleted row
    entries["0.md"] = entry(A)  # sorts before the rest: held apart
    index = ManifestDigests(*entries.held())
    assert sorted(index.holders(A)) == [("0.md", "0.md"), ("a.md", "a.md"), ("c.md", "notes/c")]
    assert list(index.holders(twin)) == [("d.md", "d.md")]
    assert list(index.holders(hashlib.sha256(b"z").hexdigest())) == []
    assert list(ManifestDigests(*PackedEntries().held()).holders(A)) == []


@pytest.mark.slow
def test_cli_warns_of_one_file_under_an_absolute_and_a_relative_path(
    cli: Cli, tmp_path: Path
) -> None:
    note = tmp_path / "note.md"
    note.write_text("Ray schedules tasks on a cluster.\n\nSake is brewed from rice.\n")
    relative = os.path.relpath(note, REPO)  # the CLI runs in REPO
    digest = hashlib.sha256(note.read_bytes()).hexdigest()
    args = ["--context", CONTEXT, "--out", str(tmp_path / "out")]
    first = cli.extract(*args, str(note), relative)
    assert first.returncode == 0, first.stderr
    assert warnings(first.stderr) == [same_bytes_line(relative, str(note), True, digest)]
    # A copy extracted later into the same --out meets both in the manifest: one line.
    copy = tmp_path / "copy.md"
    copy.write_bytes(note.read_bytes())
    again = cli.extract(*args, str(copy))
    assert again.returncode == 0, again.stderr
    [line] = warnings(again.stderr)
    assert line.startswith(f"taguru: extract: {copy}: the same bytes as ")
    assert "already extracted into this --out" in line


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "the same bytes as" in line]


def test_dry_run_warns_before_anything_is_paid(tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("Hello.\n\nWorld.\n")
    relative = os.path.relpath(note, REPO)
    env = {**os.environ, "PYTHONPATH": str(REPO), "TAGURU_EXTRACT_MODEL": "m"}
    env["TAGURU_EXTRACT_URL"] = "http://127.0.0.1:9/v1"
    command = [sys.executable, "-m", "taguru_ray", "extract", "--dry-run", "--context", CONTEXT]
    result = subprocess.run(
        [*command, "--out", str(tmp_path / "out"), relative, str(note)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    digest = hashlib.sha256(note.read_bytes()).hexdigest()
    assert warnings(result.stderr) == [same_bytes_line(str(note), relative, True, digest)]


def test_the_manifest_index_holds_8_bytes_an_entry() -> None:
    # What keeps the check cheap at a million entries (ADR 0061): 8 MB, not a dict's 100+.
    entries = PackedEntries(
        {f"{n:05d}.md": entry(hashlib.sha256(str(n).encode()).hexdigest()) for n in range(1000)}
    )
    assert ManifestDigests(*entries.held()).nbytes == 8 * 1000


def test_two_rows_of_one_text_are_named_as_rows_not_as_one_file_under_two_paths() -> None:
    line = same_bytes_line("d/p.parquet#b", "d/p.parquet#a", True, "ab" * 32)
    assert line == (
        "taguru: extract: d/p.parquet#b: the same text as d/p.parquet#a, earlier in this run "
        "(sha256 abababababab…) — both are paid for and written as two sources; drop the "
        "repeated row to pay once"
    )
