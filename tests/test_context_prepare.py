"""An import's CPU half in worker processes, and a group of files in one transaction
(ADR 0067): the same store as one file per transaction, a refused file alone rolled back."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context import source_file_bytes
from taguru_ray.context.importer import ImportRefusal, Stream, read_stream
from taguru_ray.context.prepare import prepare_paragraphs, prepared_streams
from taguru_ray.context.store import SqliteStore
from tests.test_context_kill import content_dump

BROKEN = b'{"taguru_batch":1,"context":"bench","source":"x"}\n{"passage": 7}\n'


def _files() -> list[tuple[str, bytes]]:
    files = [(f"f{i:02d}.jsonl", source_file_bytes(i, 4, 8)) for i in range(12)]
    files[5] = ("f05.jsonl", BROKEN)  # refused by the parser
    files[8] = ("f08.jsonl", source_file_bytes(3, 4, 8))  # source 3 again: a re-import
    return files


def test_workers_prepare_what_one_process_prepares() -> None:
    files = _files()
    pool = list(prepared_streams(files, None, workers=2))
    assert [name for name, _ in pool] == [name for name, _ in files]
    for (name, data), (_, pooled) in zip(files, pool, strict=True):
        if data is BROKEN:  # a refusal crosses the process boundary as a value
            assert isinstance(pooled, ImportRefusal) and pooled.path == "passage"
            continue
        assert isinstance(pooled, Stream)
        here = read_stream(data, name=name).batches
        assert [b.prepared for b in pooled.batches] == [prepare_paragraphs(b) for b in here]


def test_a_group_equals_one_transaction_per_file(tmp_path: Path) -> None:
    grouped, single = SqliteStore(tmp_path / "grouped"), SqliteStore(tmp_path / "single")
    streams = [s for _, s in prepared_streams(_files(), None, workers=1)]
    good = [s for s in streams if isinstance(s, Stream)]
    refused = read_stream(source_file_bytes(20, 4, 8)).batches
    refused[0].source.aliases[0] = type(refused[0].source.aliases[0])(
        "略999", "存在しない", "concept"
    )  # its canonical is interned nowhere: the store refuses it after writing its passage
    files = [s.batches for s in good[:6]] + [refused] + [s.batches for s in good[6:]]
    answers = grouped.import_group(files, create_missing=True)
    assert [isinstance(a, ImportRefusal) for a in answers] == [False] * 6 + [True] + [False] * 5
    for stream in good:
        single.import_batches(stream.batches, create_missing=True)
    grouped.close()
    single.close()
    assert content_dump(tmp_path / "grouped") == content_dump(tmp_path / "single")
