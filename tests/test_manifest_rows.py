"""The manifest held compactly (ADR 0042): the same entries, the same bytes written.

The single file is read without a JSON decode per entry when its entries share
their middle lines, its paths are kept front-coded in sorted blocks, and it is
written as it is rendered. Each of those must be invisible: what a whole-file
`json.loads` reads, and what `json.dumps(..., indent=2)` writes, is the answer.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.contract.manifest_entry import ENTRY_DEFAULTS, MANIFEST_FIELDS
from taguru_ray.contract.names import MANIFEST, output_name
from taguru_ray.store import manifest as manifest_module
from taguru_ray.store import manifest_rows
from taguru_ray.store.manifest import Manifest, PackedEntries
from taguru_ray.store.outdir import OutDir
from tests.test_store import entry


def reference_bytes(documents: dict[str, dict[str, Any]]) -> bytes:
    """The single file as the whole-file writer wrote it (and the reference reads it)."""
    ordered = {
        path: {key: e[key] for key in MANIFEST_FIELDS if key in e}
        for path, e in sorted(documents.items())
    }
    return (json.dumps({"documents": ordered}, ensure_ascii=False, indent=2) + "\n").encode()


def normalised(documents: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for path, e in documents.items():
        merged = {**ENTRY_DEFAULTS, **e}
        out[path] = {key: merged[key] for key in MANIFEST_FIELDS if key in merged}
    return out


def corpus(count: int, seed: int = 7) -> dict[str, dict[str, Any]]:
    """Mostly usual entries, with every kind of unusual one among them."""
    rng = random.Random(seed)
    folders = ["docs", "docs/日本語", 'odd "quoted"', "a\\b", "z"]
    documents: dict[str, dict[str, Any]] = {}
    for index in range(count):
        source = f"{rng.choice(folders)}/seg-{index:05d}.md"
        e = entry(sha256=f"{rng.getrandbits(256):064x}", output=output_name(source))
        kind = rng.randrange(40)
        if kind == 0:
            e["source_id"] = f"ID/seg-{index}"
        elif kind == 1:
            e["model"] = "another"
        elif kind == 2:
            e["tags"] = ["t", "ü"]
        elif kind == 3:
            e["output"] = "renamed.jsonl"
        elif kind == 4:
            e["sha256"] = "NOT-HEX"
        elif kind == 5:
            e["sha256"] = e["sha256"].upper()
        elif kind == 6:
            del e["date"]
        elif kind == 7:
            e["description"] = 'two\nlines, a "quote" and\n    } a brace'
        elif kind == 8:
            e["carryover"] = 3
        elif kind == 9:
            e["output"] = "with \\ backslash.jsonl"
        documents[source] = e
    return documents


def test_the_written_bytes_are_the_whole_file_writers(tmp_path: Path) -> None:
    documents = corpus(600)
    manifest = Manifest(OutDir(str(tmp_path)), documents)
    assert manifest.render() == reference_bytes(documents)
    assert Manifest(OutDir(str(tmp_path)), {}).render() == reference_bytes({})


@pytest.mark.parametrize("chunk", [7, 333, 1 << 20])
def test_the_pretty_file_reads_back_as_a_json_parse_reads_it(
    tmp_path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manifest_module, "STREAM_CHUNK_CHARS", chunk)
    documents = corpus(400)
    (tmp_path / MANIFEST).write_bytes(reference_bytes(documents))
    loaded, note = Manifest.load(OutDir(str(tmp_path)))
    assert note is None
    assert dict(loaded.entries.items()) == normalised(documents)
    assert loaded.render() == reference_bytes(normalised(documents))


def test_an_entry_whose_middle_repeats_a_key_is_read_as_json_reads_it(tmp_path: Path) -> None:
    """A middle that names the digest or output again (JSON: the last one wins) is never
    learned: the fast read would take the first line's digest."""
    text = reference_bytes({"a.md": entry(sha256="1" * 64, output="a.jsonl")}).decode()
    twice = text.replace('"model": "m",', f'"sha256": "{"2" * 64}",\n      "model": "m",')
    (tmp_path / MANIFEST).write_text(twice, encoding="utf-8")
    loaded, _ = Manifest.load(OutDir(str(tmp_path)))
    assert loaded.entries["a.md"]["sha256"] == "2" * 64
    # The same digest twice agrees with itself, but a later entry with that middle and
    # another first line must still read the middle's digest, as json does.
    documents = {
        "a.md": entry(sha256="3" * 64, output="a.jsonl"),
        "b.md": entry(sha256="4" * 64, output="b.jsonl"),
    }
    text = reference_bytes(documents).decode()
    again = text.replace('"model": "m",', f'"sha256": "{"3" * 64}",\n      "model": "m",')
    (tmp_path / MANIFEST).write_text(again, encoding="utf-8")
    loaded, _ = Manifest.load(OutDir(str(tmp_path)))
    assert dict(loaded.entries.items()) == normalised(json.loads(again)["documents"])


def test_a_file_in_another_layout_reads_the_same(tmp_path: Path) -> None:
    documents = corpus(120)
    for indent in (None, 4):
        text = json.dumps({"documents": documents}, ensure_ascii=False, indent=indent)
        (tmp_path / MANIFEST).write_text(text, encoding="utf-8")
        loaded, note = Manifest.load(OutDir(str(tmp_path)))
        assert note is None and dict(loaded.entries.items()) == normalised(documents)


def test_rows_set_in_any_order_deleted_and_folded_read_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(manifest_rows, "FOLD_AT", 16)  # fold often
    documents = normalised(corpus(500))
    items = list(documents.items())
    random.Random(3).shuffle(items)
    packed = PackedEntries()
    for source, e in items:
        packed[source] = e
    assert dict(packed.items()) == documents and len(packed) == len(documents)
    for source, _ in items[:60]:
        del packed[source]
        del documents[source]
    packed[items[0][0]] = items[0][1]  # set again after its delete
    documents[items[0][0]] = items[0][1]
    assert dict(packed.items()) == documents and len(packed) == len(documents)
    assert [source for source, _ in packed.sorted_rows()] == sorted(documents)
    assert items[1][0] not in packed and items[0][0] in packed
    with pytest.raises(KeyError):
        del packed[items[1][0]]


def test_a_sorted_block_is_found_in_and_out_of_order() -> None:
    paths = sorted(f"docs/{i:04d}-{'é' * (i % 5)}.md" for i in range(300))
    packed = PackedEntries()
    for index, path in enumerate(paths):
        packed[path] = entry(sha256=f"{index:064x}", output=output_name(path))
    assert list(packed) == paths  # appended in order: none held apart
    for path in [*paths, *reversed(paths), *random.Random(1).sample(paths, 100)]:
        assert packed[path]["output"] == output_name(path)
    assert "docs/0000-.mdx" not in packed and "a" not in packed and "zzz" not in packed


def test_a_million_usual_rows_cost_tens_of_bytes_each() -> None:
    """The memory the table holds per usual entry, measured without a million entries."""
    packed = PackedEntries()
    for index in range(20_000):
        path = f"/some/long/folder/of/the/corpus/seg-{index:06d}.md"
        packed[path] = entry(sha256=f"{index:064x}", output=output_name(path))
    table = packed._sorted
    held = table.keys.nbytes() + len(table.digests)
    held += sum(len(first) + 49 for first in table.firsts)
    assert not table.odd and not packed._apart
    assert held / len(packed) < 48


def test_matching_in_place_agrees_with_comparing_every_field() -> None:
    """`matches` compares a run's entries against the shared fields of the one it took
    last; every kind of difference must still be one."""
    base = entry(sha256="a" * 64, output=output_name("docs/a.md"))
    packed = PackedEntries({"docs/a.md": base, "docs/b.md": {**base, "carryover": 2}})
    variants = [
        base,
        {**base, "model": "other"},
        {**base, "carryover": 2},
        {key: value for key, value in base.items() if key != "date"},
        {**base, "tags": ["x"]},
        {**base, "tags": []},
        {**base, "unknown": 1},
        {**base, "sha256": "A" * 64},
        {**base, "source_id": "ID"},
    ]

    def compared(source: str, given: dict[str, Any]) -> bool:  # every field, as it was
        sha256, source_id, output, shared = packed.unpack(packed.row(source))
        output = output_name(source) if output is manifest_rows.DERIVED else output
        return (
            manifest_rows.packed_sha(given.get("sha256", manifest_rows.ABSENT)) == sha256
            and given.get("output", manifest_rows.ABSENT) == output
            and given.get("source_id", manifest_rows.ABSENT) == source_id
            and manifest_rows.shared_values(given) == shared
        )

    expected = {
        source: [compared(source, variant) for variant in variants]
        for source in ("docs/a.md", "docs/b.md")
    }
    assert expected["docs/a.md"][0] and expected["docs/b.md"][2]
    for _ in range(2):  # the second pass compares in place
        for source in ("docs/a.md", "docs/b.md"):
            for variant, want in zip(variants, expected[source], strict=True):
                assert packed.matches(source, variant) == want, (source, variant)
                assert packed.matches(source, base) == (source == "docs/a.md")


# --- the index beside the single file (store/manifest_index.py) --------------------------


def written(tmp_path: Path, documents: dict[str, dict[str, Any]]) -> OutDir:
    """An --out whose single file and index taguru-ray wrote, as its compaction does."""
    out = OutDir(str(tmp_path))
    Manifest(out, documents).write_single()
    return out


def test_the_index_reads_back_every_kind_of_entry_without_the_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    documents = normalised(corpus(700))
    documents["docs/nested.md"] = entry(sha256="9" * 64, description={"a": [1, 2]})
    documents["docs/listed.md"] = entry(sha256="8" * 64, context=["x", "y"])
    out = written(tmp_path, documents)
    assert (tmp_path / MANIFEST).read_bytes() == reference_bytes(documents)
    assert (tmp_path / manifest_module.MANIFEST_INDEX).exists()

    def no_json(handle: Any) -> None:
        raise AssertionError("the index describes the file: no JSON decode")

    monkeypatch.setattr(manifest_module, "_parse_single", no_json)
    loaded, note = Manifest.load(out)
    assert note is None and dict(loaded.entries.items()) == documents
    assert loaded.render() == reference_bytes(documents)
    for source, e in documents.items():
        assert loaded.entries.matches(source, e)
    # Held as before: rows appended and set after it read back as well.
    loaded.entries["zzz/new.md"] = entry(sha256="7" * 64)
    loaded.entries["docs/seg-00003.md"] = entry(sha256="6" * 64)
    assert loaded.entries["zzz/new.md"]["sha256"] == "7" * 64
    assert loaded.entries["docs/seg-00003.md"]["sha256"] == "6" * 64


@pytest.mark.parametrize("damage", ["rewritten", "same-size", "torn-index", "other-version"])
def test_an_index_not_made_from_the_files_bytes_is_passed_over(tmp_path: Path, damage: str) -> None:
    documents = normalised(corpus(300))
    out = written(tmp_path, documents)
    single, index = tmp_path / MANIFEST, tmp_path / manifest_module.MANIFEST_INDEX
    expected = dict(documents)
    if damage == "rewritten":  # the reference ran and rewrote the file, knowing no index
        first = sorted(documents)[0]
        expected[first] = {**documents[first], "model": "reference"}
        single.write_text(json.dumps({"documents": expected}), encoding="utf-8")
    elif damage == "same-size":  # one digest changed in place: same length, other bytes
        first = sorted(documents)[0]
        old = documents[first]["sha256"]
        new = "f" * 64 if old != "f" * 64 else "e" * 64
        single.write_bytes(single.read_bytes().replace(old.encode(), new.encode(), 1))
        expected[first] = {**documents[first], "sha256": new}
    elif damage == "torn-index":
        index.write_bytes(index.read_bytes()[:-100])
    else:
        index.write_bytes(index.read_bytes().replace(b"index 1", b"index 9", 1))
    loaded, note = Manifest.load(out)
    assert note is None and dict(loaded.entries.items()) == expected


def test_a_torn_single_file_is_unreadable_even_beside_its_index(tmp_path: Path) -> None:
    out = written(tmp_path, normalised(corpus(50)))
    (tmp_path / MANIFEST).write_text("{ torn", encoding="utf-8")
    loaded, note = Manifest.load(out)
    assert loaded.entries == {} and note is not None and "every segment re-extracts" in note


def test_compaction_writes_the_index_of_what_it_wrote(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    first, _ = Manifest.load(out)
    first.record("docs/b.md", entry(sha256="1" * 64, output=output_name("docs/b.md")))
    first.compact()
    second, _ = Manifest.load(out)
    second.record("docs/a.md", entry(sha256="2" * 64, output="renamed.jsonl"))
    second.compact()
    again, _ = Manifest.load(out)
    assert sorted(again.entries) == ["docs/a.md", "docs/b.md"]
    assert again.entries["docs/a.md"]["output"] == "renamed.jsonl"
    assert manifest_module.read_index(out) is not None  # it describes the file as it is
