"""The single-file manifest read a chunk at a time: same entries as a whole-file parse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taguru_ray.contract.names import MANIFEST
from taguru_ray.store import manifest as manifest_module
from taguru_ray.store.manifest import Manifest
from taguru_ray.store.outdir import OutDir
from tests.test_store import entry


@pytest.fixture(params=[7, 64, 1 << 20], ids=["7-chars", "64-chars", "1-MiB"])
def chunk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Chunks that cut names, numbers, escapes and brackets at every kind of place."""
    monkeypatch.setattr(manifest_module, "STREAM_CHUNK_CHARS", request.param)
    return int(request.param)


def load(tmp_path: Path, text: str) -> tuple[Manifest, str | None]:
    (tmp_path / MANIFEST).write_text(text, encoding="utf-8")
    return Manifest.load(OutDir(str(tmp_path)))


def test_every_entry_is_read_whatever_the_chunk_size(tmp_path: Path, chunk: int) -> None:
    documents = {
        f'docs/{i:03d} "quoted" 日本語.md': entry(
            sha256=f"{i:064x}", prompt_version=123456789, date=1700000000 + i, tags=["a", "ü"]
        )
        for i in range(40)
    }
    documents["docs/no-sha.md"] = {"model": "m"}  # not an entry: left out, as before
    text = json.dumps({"version": [1, {"x": "}"}], "documents": documents}, ensure_ascii=False)
    manifest, note = load(tmp_path, text)
    assert note is None
    assert sorted(manifest.entries) == sorted(k for k in documents if "no-sha" not in k)
    for source in manifest.entries:
        assert manifest.entries[source] == documents[source]
    # The pretty layout Manifest writes reads back the same.
    again, _ = load(tmp_path, manifest.render().decode("utf-8"))
    assert dict(again.entries.items()) == dict(manifest.entries.items())


@pytest.mark.parametrize(
    "text",
    [
        '{"documents": {"a.md": {"sha256": "s"',  # cut off mid-entry
        '{"documents": {"a.md": {"sha256": "s"}}} trailing',
        '{"documents": ["a.md"]}',
        '{"other": {}}',
        '{"documents": {"a.md" {"sha256": "s"}}}',
        "",
    ],
    ids=["truncated", "trailing", "not-an-object", "no-documents", "no-colon", "empty"],
)
def test_a_malformed_manifest_is_one_note_and_every_segment_re_extracts(
    tmp_path: Path, chunk: int, text: str
) -> None:
    manifest, note = load(tmp_path, text)
    assert manifest.entries == {}
    assert note is not None and "every segment re-extracts" in note


def test_an_empty_documents_object_is_an_empty_manifest(tmp_path: Path, chunk: int) -> None:
    manifest, note = load(tmp_path, '{\n  "documents": {}\n}\n')
    assert note is None and manifest.entries == {}


def test_an_output_named_as_its_source_always_is_recomputed_not_kept(tmp_path: Path) -> None:
    from taguru_ray.contract.names import output_name

    out = OutDir(str(tmp_path))
    manifest, _ = Manifest.load(out)
    usual = entry(output=output_name("docs/a.md"))
    manifest.record("docs/a.md", usual)
    manifest.record("docs/b.md", entry(output="renamed.jsonl"))
    manifest.compact()
    again, _ = Manifest.load(out)
    assert again.entries["docs/a.md"] == usual
    assert again.entries["docs/b.md"]["output"] == "renamed.jsonl"
    names = {usual["output"], "renamed.jsonl"}
    assert again.unchanged("docs/a.md", usual, names)
    assert not again.unchanged("docs/a.md", {**usual, "output": "renamed.jsonl"}, names)
    assert again.unchanged("docs/b.md", entry(output="renamed.jsonl"), names)


def test_usual_and_unusual_rows_read_back_and_match_alike(tmp_path: Path) -> None:
    """A bare-digest row (the usual entry) and full rows beside it give the same answers."""
    from taguru_ray.contract.names import output_name
    from taguru_ray.store.manifest import PackedEntries

    def usual(name: str, **fields: object) -> dict:
        base: dict[str, object] = {"sha256": f"{ord(name[5]):064x}", "output": output_name(name)}
        return entry(**{**base, **fields})

    entries = {
        "docs/a.md": usual("docs/a.md"),
        "docs/b.md": usual("docs/b.md", source_id="ID/b"),
        "docs/c.md": usual("docs/c.md", model="other"),
        "docs/d.md": usual("docs/d.md", sha256="NOT-HEX"),
        "docs/e.md": usual("docs/e.md"),
    }
    packed = PackedEntries(entries)
    assert {source: packed[source] for source in packed} == entries
    names = {e["output"] for e in entries.values()}
    for source, row in entries.items():
        assert packed.matches(source, row)
        assert not packed.matches(source, {**row, "model": "changed"})
        assert Manifest(OutDir(str(tmp_path)), packed).unchanged(source, row, names)
