"""`extract --prune`'s writes on the store (ADR 0083): plan, moves, the manifest without the
retired entries, records — and a kill at every one of those writes, on a local folder and
on S3 (moto's server), leaves a folder `verify` passes, that `import` reads as the old
state or the new, and that the next run completes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from taguru_ray.context.importer import read_stream, stream_sources
from taguru_ray.contract.items import Association
from taguru_ray.contract.names import (
    MANIFEST,
    RETIRED,
    TRACE,
    attempts_name,
    output_name,
)
from taguru_ray.contract.records.retired import RetiredRecord
from taguru_ray.contract.source_file import Header, Passage, SourceFile, render_source_file
from taguru_ray.pipeline.parts import part_id, part_name
from taguru_ray.store.manifest import ENTRY_DEFAULTS, Manifest
from taguru_ray.store.outdir import OutDir
from taguru_ray.store.retire import (
    Retirement,
    complete_pending,
    pending,
    plan_retirement,
    read_retired,
    segments,
    to_retract,
)
from taguru_ray.tools.records import source_files
from taguru_ray.tools.verify import judge_retired, verify_files
from tests import s3 as server
from tests.s3 import S3
from tests.support import CONTEXT

s3, s3_env = server.s3, server.s3_env  # the fixtures, registered here by name

RUN, LATER = "0123456789abcdef", "fedcba9876543210"
SOURCES = ("docs/a.md", "docs/b.md", "docs/c.md")
GONE = "docs/c.md"


class Killed(BaseException):
    """What a SIGKILL at this write does to the writer: nothing after it happens."""


class KilledAt(OutDir):
    """--out whose `at`-th write (a whole file, a move or a delete) is never done: the
    process died there. A move on an object store dies between its copy and its delete."""

    def __init__(self, url: str, at: int | None) -> None:
        super().__init__(url)
        self.at, self.writes = at, 0

    def _dies(self) -> bool:
        self.writes += 1
        return self.writes == self.at

    def write_chunks(self, name: str, chunks: Any) -> None:
        if self._dies():
            raise Killed
        super().write_chunks(name, chunks)

    def move(self, name: str, to: str) -> bool:
        if self._dies():
            if not self.local and self.fs.exists(self.path(name)):
                self.fs.copy(self.path(name), self.path(to))  # copied, never deleted
            raise Killed
        return super().move(name, to)

    def delete(self, name: str) -> None:
        if self._dies():
            raise Killed
        super().delete(name)

    def delete_many(self, names: list[str]) -> None:
        if self._dies():
            raise Killed
        super().delete_many(names)


@pytest.fixture(params=["local", "s3"])
def url(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[str]:
    if request.param == "local":
        yield str(tmp_path / "out")
        return
    s3_server: S3 = request.getfixturevalue("s3_env")
    yield s3_server.prefix("prune")


def seed(url: str) -> None:
    """Three extracted segments: source files, traces, attempts logs, a compacted manifest
    (and a journal entry the compaction has not folded yet)."""
    out = OutDir(url)
    out.ensure()
    for source in SOURCES:
        output = output_name(source)
        text = f"{source} says Zephyr{source[5]} runs on Kafka."
        file = SourceFile(
            header=Header(id=source, context_id=CONTEXT, name="sake"),
            passage=Passage(text=text),
            associations=[Association(f"Zephyr{source[5]}", "runs on", "Kafka", 1.0, 0)],
        )
        out.write(output, render_source_file(file))
        out.write(f"{TRACE}/{output}", b'{"type":"segment"}\n')
        out.write(f"{TRACE}/{attempts_name(source)}", b'{"type":"segment"}\n')
        manifest = Manifest(out, {})  # a run each: the last one killed before compacting
        manifest.record(source, entry(source))
        manifest._writer.close()
        if source != SOURCES[-1]:
            manifest.compact()


def entry(source: str) -> dict[str, Any]:
    sha = f"{ord(source[5]):064x}"
    base = {"sha256": sha, "model": "m", "prompt_version": 6, "output": output_name(source)}
    return {**ENTRY_DEFAULTS, "context": CONTEXT, **base}


def prune(out: OutDir, run_id: str) -> list[RetiredRecord]:
    manifest, _ = Manifest.load(out)
    records = plan_retirement(out, manifest.entries, [GONE], run_id)
    Retirement(out, run_id, records).apply(manifest)
    return records


def test_a_prune_moves_the_files_drops_the_entry_and_records_it(url: str) -> None:
    seed(url)
    out = OutDir(url)
    [record] = prune(out, RUN)
    assert record.model_dump() == {
        "run_id": RUN, "source": GONE, "id": GONE, "context_id": CONTEXT, "name": "sake",
        "sha256": entry(GONE)["sha256"], "output": output_name(GONE),
        "retired_at": record.retired_at,
    }  # fmt: skip
    assert_new_state(url, [RUN])
    # The Taguru stream: header-only batches, each a pure retraction there.
    stream = read_stream(out.read(f"{RETIRED}/{RUN}.retract.jsonl") or b"")
    [batch] = stream.batches
    assert (batch.source_id, batch.context_id, batch.create) == (GONE, CONTEXT, None)
    assert batch.source.passage is None and not batch.source.associations


def test_a_kill_at_any_write_leaves_the_old_state_or_the_new_and_the_next_run_completes(
    url: str,
) -> None:
    seed(url)
    counting = KilledAt(url, None)
    prune(counting, RUN)
    writes = counting.writes
    assert writes >= 8  # plan, stream, four moves, the manifest and its index, records, …
    # Every write on a local folder; on S3 (a round trip each) the first move (dying
    # between its copy and its delete), the manifest's write, and the records'.
    points = range(1, writes + 1) if counting.local else (3, 7, writes - 1)
    for at in points:
        where = f"{url}/kill-{at}"
        seed(where)
        with pytest.raises(Killed):
            prune(KilledAt(where, at), RUN)
        out = OutDir(where)
        assert_verify_passes(where)
        retired = read_retired(out)
        if retired.records:  # the new state: the records come last
            assert not out.exists(output_name(GONE))
        else:  # the old state: what import reads has not changed, or the file just left
            assert not retired.unreadable
        finished = complete_pending(out)  # what the next run does first, under the lock
        if not read_retired(out).records:  # killed before the plan: the rerun prunes anew
            assert finished == [] and pending(out) == []
            assert GONE in Manifest.load(out)[0].entries
            prune(out, LATER)
            assert_new_state(where, [LATER])
        else:
            assert [r.run_id for r in finished] in ([RUN], [])
            assert_new_state(where, [RUN])


def assert_verify_passes(url: str) -> None:
    files = source_files(url)
    result = verify_files(files)
    judge_retired(result, files, read_retired(OutDir(url)))
    assert result.ok, result.problems


def assert_new_state(url: str, runs: list[str]) -> None:
    out = OutDir(url)
    manifest, note = Manifest.load(out)
    assert note is None and sorted(manifest.entries) == ["docs/a.md", "docs/b.md"]
    assert json.loads(out.read(MANIFEST) or b"")["documents"].keys() == {"docs/a.md", "docs/b.md"}
    assert sorted(source_files(url)) == sorted(map(output_name, SOURCES[:2]))
    for name in (f"{TRACE}/{output_name(GONE)}", f"{TRACE}/{attempts_name(GONE)}"):
        assert not out.exists(name)
    [run] = runs
    folder = f"{RETIRED}/{run}"
    assert out.exists(f"{folder}/{output_name(GONE)}")
    assert out.exists(f"{folder}/{TRACE}/{output_name(GONE)}")
    assert out.exists(f"{folder}/{TRACE}/{attempts_name(GONE)}")
    assert not out.exists(f"{RETIRED}/{run}.plan.jsonl") and pending(out) == []
    retired = read_retired(out)
    assert [(r.run_id, r.source) for r in retired.records] == [(run, GONE)]
    assert not retired.unreadable and not retired.unfinished
    assert_verify_passes(url)


def record(source: str, run_id: str, when: int, name: str | None = None) -> RetiredRecord:
    return RetiredRecord(
        run_id=run_id, source=source, id=source, context_id=CONTEXT, name=name,
        sha256="0" * 64, output=output_name(source), retired_at=when,
    )  # fmt: skip


def test_import_retracts_each_source_once_and_never_one_written_again() -> None:
    records = [
        record("a.md", RUN, 1, "sake"),
        record("a.md", LATER, 5, "sake"),  # retired again later: one retraction
        record("b.md", RUN, 1, "sake"),  # written again since, by a file of this import
        record("c.md", RUN, 1),  # no create name: its context is its context_id
    ]
    written = {("sake", "b.md")}
    chosen = to_retract(records, written, None)
    assert [(context, r.id, r.run_id) for context, r in chosen] == [
        (CONTEXT, "c.md", RUN),
        ("sake", "a.md", LATER),
    ]
    # --context names every file's context, and so every record's.
    assert [r.id for _, r in to_retract(records, {("ctx", "b.md")}, "ctx")] == ["a.md", "c.md"]


def test_the_sources_a_stream_writes_are_read_from_its_headers() -> None:
    a = render_source_file(SourceFile(Header("a.md", CONTEXT, name="sake"), Passage('"type"')))
    b = render_source_file(SourceFile(Header("b.md", CONTEXT), Passage("b")))
    assert stream_sources(a + b) == [("sake", "a.md"), (CONTEXT, "b.md")]
    assert stream_sources(a, "ctx") == [("ctx", "a.md")]
    assert stream_sources(b"not json\n{}\n") == []


def test_a_document_written_in_parts_retires_and_retracts_whole(tmp_path: Any) -> None:
    # A document over the passage cap is one segment written as parts (ADR 0078): the
    # first file keeps the segment's name, the others are named from <source>/part-NNN;
    # each is a source of its own in the context.
    url, document = str(tmp_path / "out"), "docs/big.pdf"
    seed(url)
    out = OutDir(url)
    names = [output_name(document)] + [part_name(document, number) for number in (2, 3)]
    for number, name in enumerate(names, start=1):
        header = Header(id=part_id(document, number), context_id=CONTEXT, name="sake")
        out.write(name, render_source_file(SourceFile(header, Passage(f"part {number}"))))
    out.write(f"{TRACE}/{names[0]}", b'{"type":"segment"}\n')
    manifest = Manifest(out, {})
    manifest.record(document, {**entry(document), "output": names[0]})
    manifest.compact()
    manifest, _ = Manifest.load(out)
    records = plan_retirement(out, manifest.entries, [document], RUN)
    Retirement(out, RUN, records).apply(manifest)
    assert [(r.source, r.id, r.output) for r in records] == [
        (document, part_id(document, number), name) for number, name in enumerate(names, 1)
    ]
    assert segments(records) == 1
    assert sorted(source_files(url)) == sorted(map(output_name, SOURCES))  # none of it left
    for name in [*names, f"{TRACE}/{names[0]}"]:
        assert out.exists(f"{RETIRED}/{RUN}/{name}")
    chosen = to_retract(read_retired(out).records, (), None)
    assert [r.id for _, r in chosen] == [part_id(document, number) for number in (1, 2, 3)]
    assert_verify_passes(url)
