"""What the driver knows of a segment before any worker sees it: under --redact, a path
that holds what the rules mask is refused, and the hash is the masked text's."""

from __future__ import annotations

import hashlib
from pathlib import Path

from taguru_ray.engine.scan import scan
from taguru_ray.pipeline.read import read_segment, redact_segment
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.text.redact import builtin_rules, groups_from_setting
from tests.test_segment_run import settings

RULES = tuple(builtin_rules(groups_from_setting("both")))


def test_a_path_holding_what_redact_masks_is_refused_and_never_sent(tmp_path: Path) -> None:
    named = tmp_path / "taro.yamada@example.com-notes.md"
    named.write_text("Ray runs on Kubernetes.\n")
    masked = scan(settings(redact="both"), 0, str(named), False, set(), RunInputs(redaction=RULES))
    assert masked.data is None and masked.refusal is not None
    assert masked.refusal.startswith("its path holds what --redact masks (email) — rename")
    plain = scan(settings(), 0, str(named), False, set(), RunInputs())
    assert plain.refusal is None and plain.data is not None


def test_under_redact_the_manifest_hash_is_the_masked_texts(tmp_path: Path) -> None:
    path = tmp_path / "ops.md"
    text = "Mail ops@example.com for access.\n"
    path.write_text(text)
    inputs = RunInputs(redaction=RULES, redact_key=b"k" * 32)
    scanned = scan(settings(redact="both"), 0, str(path), False, set(), inputs)
    assert scanned.inputs is not None
    masked, _ = redact_segment(read_segment(str(path), text.encode()), RULES, b"k" * 32)
    assert "ops@example.com" not in masked.text
    assert scanned.inputs["sha256"] == hashlib.sha256(masked.text.encode()).hexdigest()
    assert scanned.inputs["sha256"] != hashlib.sha256(text.encode()).hexdigest()


def test_a_written_id_met_again_is_refused_however_the_ids_are_held(tmp_path: Path) -> None:
    """One folder writing its paths holds nothing; two arguments, or --source-id's
    stems, hold hashes and compare a repeated hash exactly (ADR 0042)."""
    from taguru_ray.engine.written_ids import WrittenIds
    from taguru_ray.store.inputs import expand

    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "a.txt", "b.md"):
        (docs / name).write_text(f"{name}\n")

    def refused(sources: list[str] | object, source_id: str | None) -> list[int]:
        paths = list(sources)  # type: ignore[call-overload]
        seen = WrittenIds.of(sources, source_id)  # type: ignore[arg-type]
        run = settings(source_id=source_id) if source_id else settings()
        return [
            index
            for index, source in enumerate(paths)
            if scan(run, index, source, len(paths) > 1, seen).refusal is not None
        ]

    assert refused(expand([str(docs)]), None) == []
    assert refused(expand([str(docs), str(docs / "b.md")]), None) == [3]
    assert refused(expand([str(docs)]), "ID") == [1]  # a.md and a.txt: both ID/a
    assert refused([str(docs / "b.md")] * 3, None) == [1, 2]


def test_a_hash_collision_never_refuses_a_segment() -> None:
    from taguru_ray.engine.written_ids import _IdTable

    ids = [f"id-{n}" for n in range(5000)]
    table = _IdTable(ids.__getitem__, 10)  # grows past its first size
    assert all(table.first(ident, index) for index, ident in enumerate(ids))
    assert not any(table.first(ident, 9999) for ident in ids[::7])

    class Colliding(str):
        def __hash__(self) -> int:
            return 42

    same = [Colliding("x"), Colliding("y"), Colliding("z")]
    table = _IdTable(same.__getitem__, 3)
    assert [table.first(ident, index) for index, ident in enumerate(same)] == [True] * 3
    assert not table.first(Colliding("y"), 3)


def test_the_repeats_do_not_depend_on_the_order_segments_are_scanned_in(
    tmp_path: Path,
) -> None:
    """Batches are scanned at once: the later of two segments with one id is the one
    refused, whichever is scanned first; one refused for its path writes no id."""
    from taguru_ray.engine.written_ids import WrittenIds

    ids = ["a", "b", "a", "c", "b", "a"]
    seen = WrittenIds(ids.__getitem__, len(ids))
    assert [seen.first(ids[i], i) for i in reversed(range(6))] == [
        False,
        False,
        True,
        False,
        True,
        True,
    ]
    refused_first = WrittenIds(ids.__getitem__, len(ids), lambda index: index == 0)
    assert [refused_first.first(ids[i], i) for i in (5, 2)] == [False, True]
    # The written id is ID/<stem>: the .md and the .txt write the same one, but the .md
    # is refused for its path (--redact), so the .txt is the first to write it.
    sources = ["docs/taro.yamada@example.com.md", "docs/taro.yamada@example.com.txt"]
    assert not WrittenIds.of(sources, "ID", RunInputs()).first("ID/taro", 1)
    assert WrittenIds.of(sources, "ID", RunInputs(redaction=RULES)).first("ID/taro", 1)


def test_the_entry_is_compute_inputs_own() -> None:
    from taguru_ray.engine.scan import segment_inputs
    from taguru_ray.pipeline.run_inputs import InputDigests
    from taguru_ray.settings import compute_inputs

    digests = InputDigests()
    for run in (settings(), settings(source_id="ID"), settings(questions=2, tags=("x",))):
        for digest, ident, output in (("a" * 64, "docs/a.md", "a.jsonl"), ("b", "ID/b", "b")):
            made = segment_inputs(run, digests, digest, ident, output)
            expected = compute_inputs(run, digests, digest, ident, output)
            assert made == expected and list(made) == list(expected)


def test_presence_holds_hashes_and_answers_for_every_listed_name(tmp_path: Path) -> None:
    from taguru_ray.store.outdir import OutDir

    names = [f"out-{n}.jsonl" for n in range(3000)] + ["日本.jsonl"]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    present = OutDir(str(tmp_path)).presence()
    assert all(name in present for name in names)
    assert "absent.jsonl" not in present and 7 not in present
