"""--vocabulary: reading an export (file, folder, extract --out, URL) and what it offers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import fsspec
import pytest

from taguru_ray.contract.items import Alias, Association
from taguru_ray.contract.source_file import (
    FORMAT_VERSION,
    Header,
    Passage,
    SourceFile,
    render_source_file,
)
from taguru_ray.pipeline.claims import ClaimLedger
from taguru_ray.pipeline.steer import LabelLedger
from taguru_ray.pipeline.vocabulary import (
    Vocabulary,
    allowlist,
    contribution,
    known_relations,
    label_counts,
    prompt_names,
    relations_digest,
    render_vocabulary_block,
    vocabulary_digest,
)
from taguru_ray.store.vocabulary import VocabularyError, load_vocabulary

UUID = "0f8e2b6c-3d4a-4e5f-9a1b-2c3d4e5f6a7b"


def header(source: str) -> dict[str, Any]:
    return {"type": "source", "version": FORMAT_VERSION, "id": source, "context_id": UUID}


def fact(subject: str, label: str, object_: str, weight: float = 1.0) -> dict[str, Any]:
    return {"subject": subject, "label": label, "object": object_, "weight": weight}


def alias(spelling: str, canonical: str, kind: str = "concept") -> dict[str, Any]:
    return {"alias": spelling, "canonical": canonical, "kind": kind}


def jsonl(*records: dict[str, Any] | str) -> bytes:
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    return ("\n".join(lines) + "\n").encode()


def write(path: Path, *records: dict[str, Any] | str) -> str:
    path.write_bytes(jsonl(*records))
    return str(path)


def refusal(path: str) -> VocabularyError:
    with pytest.raises(VocabularyError) as caught:
        load_vocabulary(path)
    return caught.value


EXPORT = (
    header("a.md"),
    {"passage": "青嶺酒造の杜氏は高瀬。"},
    fact("青嶺酒造", "杜氏", "高瀬"),
    fact("青嶺酒造", "schema:type", "Brewery"),
    {
        "taguru_schema": 1,
        "context": "sake",
        "mode": "warn",
        "closed_labels": False,
        "types": {},
        "relations": {},
    },
    header("b.md"),
    fact("高瀬", "出身", "広島"),
    alias("Seirei", "青嶺酒造"),
    alias("醸す人", "杜氏", "label"),
    {"taguru_group": 1, "name": "all"},
)


# ------------------------------------------------------------------ reading


def test_an_export_stream_yields_concepts_labels_and_never_alias_spellings(tmp_path: Path) -> None:
    vocabulary = load_vocabulary(write(tmp_path / "sake.jsonl", *EXPORT))
    assert vocabulary.concepts == {"青嶺酒造", "高瀬", "Brewery", "広島"}
    assert vocabulary.labels == {"杜氏", "schema:type", "出身"}
    assert vocabulary.concept_aliases == (("Seirei", "青嶺酒造"),)
    assert vocabulary.label_aliases == (("醸す人", "杜氏"),)


def test_an_alias_canonical_is_a_name_even_without_an_association(tmp_path: Path) -> None:
    path = write(tmp_path / "a.jsonl", header("a.md"), fact("x", "uses", "y"))
    write(tmp_path / "b.jsonl", header("b.md"), alias("Z", "z"), alias("employs", "hires", "label"))
    vocabulary = load_vocabulary(str(tmp_path))
    assert path.endswith("a.jsonl")
    assert vocabulary.concepts == {"x", "y", "z"}
    assert vocabulary.labels == {"uses", "hires"}


def test_the_older_taguru_batch_header_reads_too(tmp_path: Path) -> None:
    older = {"taguru_batch": 1, "context": "sake", "source": "a.md"}
    vocabulary = load_vocabulary(write(tmp_path / "old.jsonl", older, fact("a", "b", "c")))
    assert vocabulary.concepts == {"a", "c"}


def extract_out(tmp_path: Path) -> Path:
    """An extract --out: two source files, a manifest, checkpoints and a trace folder."""
    out = tmp_path / "out"
    (out / ".extract-checkpoints").mkdir(parents=True)
    (out / ".extract-trace").mkdir()
    for name, associations, aliases in (
        ("b-1111.jsonl", [Association("酵母", "用いる", "協会7号")], []),
        (
            "a-2222.jsonl",
            [Association("青嶺酒造", "杜氏", "高瀬")],
            [Alias("Seirei", "青嶺酒造", "concept")],
        ),
    ):
        source = SourceFile(Header(name, UUID), Passage("text"), [], associations, aliases)
        (out / name).write_bytes(render_source_file(source))
    (out / ".extract-manifest.json").write_text('{"documents": {}}')
    (out / ".extract-checkpoints" / "a-2222.json").write_text('{"units": {}}')
    (out / ".extract-trace" / "a-2222.jsonl").write_text('{"type":"segment","run_id":"x"}\n')
    (out / ".extract-trace" / "a-2222.attempts.jsonl").write_text("not json\n")
    (out / "notes.txt").write_text("ignored")
    (out / "nested").mkdir()
    (out / "nested" / "c.jsonl").write_text("not json\n")
    return out


def test_an_extract_out_folder_reads_only_its_own_jsonl_files(tmp_path: Path) -> None:
    vocabulary = load_vocabulary(str(extract_out(tmp_path)))
    assert vocabulary.concepts == {"酵母", "協会7号", "青嶺酒造", "高瀬"}
    assert vocabulary.labels == {"用いる", "杜氏"}


def test_files_are_read_in_sorted_order(tmp_path: Path) -> None:
    write(tmp_path / "b.jsonl", header("b.md"), fact("x", "later", "y", 0.5))
    write(tmp_path / "a.jsonl", header("a.md"), fact("x", "earlier", "z", 0.5))
    assert known_relations(load_vocabulary(str(tmp_path)), "x") == ["earlier → z", "later → y"]


def test_an_fsspec_url_reads_like_a_path() -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe("/vocab-test/export/s.jsonl", jsonl(header("a.md"), fact("a", "uses", "b")))
    fs.pipe("/vocab-test/export/.extract-manifest.json", b"{}")
    try:
        vocabulary = load_vocabulary("memory://vocab-test/export")
    finally:
        fs.rm("/vocab-test", recursive=True)
    assert vocabulary.concepts == {"a", "b"}


# ------------------------------------------------------------------ refusals


def test_a_line_that_is_not_json_names_the_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", header("a.md"), fact("a", "b", "c"), "{oops")
    error = refusal(path)
    assert (error.file, error.line) == (path, 3)
    assert str(error).startswith(f"{path}: line 3: not JSON: ")


def test_a_source_file_refusal_counts_lines_from_the_files_first(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        header("a.md"),
        fact("a", "b", "c"),
        "",
        header("b.md"),
        alias("A", "a"),
        {"subject": "a", "label": "b", "object": "c", "weight": "heavy"},
    )
    error = refusal(path)
    assert error.line == 6
    assert error.detail == 'weight: expected a number, got string "heavy"'


def test_a_bad_alias_line_is_refused(tmp_path: Path) -> None:
    error = refusal(write(tmp_path / "s.jsonl", header("a.md"), alias("A", "a", "synonym")))
    assert (error.line, error.detail) == (
        2,
        'kind: expected "concept" or "label", got string "synonym"',
    )
    error = refusal(write(tmp_path / "t.jsonl", header("a.md"), alias("a", "a")))
    assert error.detail == 'alias "a" equals its canonical'
    error = refusal(write(tmp_path / "u.jsonl", header("a.md"), alias("A", "a"), alias("A", "b")))
    assert (error.line, error.detail) == (3, 'concept alias "A" appears twice (first at line 2)')


def test_a_line_before_any_header_is_refused(tmp_path: Path) -> None:
    error = refusal(write(tmp_path / "s.jsonl", fact("a", "b", "c")))
    assert (error.line, error.detail) == (1, "a line before any source header")


def test_an_export_without_names_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "empty.jsonl", header("export:empty"))
    error = refusal(path)
    assert error.line is None
    assert error.detail.startswith("no names to offer")


def test_a_folder_without_jsonl_files_and_a_missing_path_are_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    assert refusal(str(tmp_path)).detail.startswith("holds no *.jsonl files")
    assert refusal(str(tmp_path / "absent")).detail == "no such file or folder"
    assert refusal("nope://bucket/export").detail.startswith("cannot be opened: ")


# ------------------------------------------------------------------- offers


def test_the_vocabulary_digest_is_the_contract_encoding() -> None:
    vocabulary = Vocabulary(frozenset({"高瀬", "Brewery", "a"}), frozenset({"杜氏", "b"}))
    by_hand = "Brewery\na\n高瀬\n\0b\n杜氏\n".encode()
    assert vocabulary_digest(vocabulary) == hashlib.sha256(by_hand).hexdigest()


def test_the_digest_ignores_file_layout(tmp_path: Path) -> None:
    one = load_vocabulary(write(tmp_path / "one.jsonl", *EXPORT))
    split = tmp_path / "split"
    split.mkdir()
    write(split / "1.jsonl", *EXPORT[:4])
    write(split / "2.jsonl", *EXPORT[5:])
    assert vocabulary_digest(load_vocabulary(str(split))) == vocabulary_digest(one)


def test_prompt_names_are_the_first_200_alphabetically() -> None:
    names = frozenset(f"n{i:03}" for i in range(250))
    assert prompt_names(Vocabulary(names, frozenset())) == sorted(names)[:200]


def test_the_allowlist_holds_every_concept_folded() -> None:
    names = frozenset(f"Name {i:03}" for i in range(250))
    folded = allowlist(Vocabulary(names, frozenset()))
    assert len(folded) == 250 and "name249" in folded


def test_label_counts_count_uses_and_alias_canonicals_but_not_schema_type(tmp_path: Path) -> None:
    vocabulary = load_vocabulary(write(tmp_path / "sake.jsonl", *EXPORT))
    assert label_counts(vocabulary) == [("出身", 1), ("杜氏", 2)]


def test_contribution_seeds_the_reuse_list_and_the_claimed_names(tmp_path: Path) -> None:
    seed = contribution(load_vocabulary(write(tmp_path / "sake.jsonl", *EXPORT)))
    ledger = LabelLedger()
    ledger.absorb(seed)
    assert [(use.label, use.count) for use in ledger.ranked()] == [("杜氏", 2), ("出身", 1)]
    claims = ClaimLedger()
    claims.absorb(-1, seed)
    assert claims.resolve("concept", "Seirei", upto=0) == "青嶺酒造"
    assert claims.resolve("label", "醸す人", upto=0) == "杜氏"


def test_known_relations_keep_the_strongest_five_export_order_among_equals(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        header("a.md"),
        fact("委員会", "開催", "定例会", 0.5),
        fact("委員会", "決定", "予算案", -2.0),
        fact("委員会", "決定", "予算案", -2.0),  # the same relation, exported twice
        fact("作業部会", "報告", "委員会", 1.0),
        fact("委員会", "設置", "作業部会", 1.0),
        fact("委員会", "承認", "議事録", 0.5),
        fact("委員会", "所在", "本庁舎", 0.25),
        fact("委員会", "委員", "高瀬", 0.5),
    )
    vocabulary = load_vocabulary(path)
    assert known_relations(vocabulary, "委員会") == [
        "決定 → 予算案",
        "作業部会 → 報告",
        "設置 → 作業部会",
        "開催 → 定例会",
        "承認 → 議事録",
    ]
    assert known_relations(vocabulary, "高瀬") == ["委員会 → 委員"]
    assert known_relations(vocabulary, "unknown") == []


def test_the_relations_digest_encodes_each_offered_relation(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl", header("a.md"), fact("b", "uses", "a", -0.5), fact("a", "x", "c")
    )
    lines = [  # name, label, other, outgoing, weight as Rust prints it; strongest first
        ("a", "x", "c", "1", "1"),
        ("a", "uses", "b", "0", "-0.5"),
        ("b", "uses", "a", "1", "-0.5"),
        ("c", "x", "a", "0", "1"),
    ]
    by_hand = "".join("\0".join(line) + "\n" for line in lines).encode()
    assert relations_digest(load_vocabulary(path)) == hashlib.sha256(by_hand).hexdigest()


def test_the_vocabulary_block_asks_for_the_contexts_exact_spelling() -> None:
    assert render_vocabulary_block([]) == ""
    block = render_vocabulary_block(["cargo-nextest", "青嶺酒造"])
    assert "exactly this spelling" in block
    assert block.endswith(": cargo-nextest, 青嶺酒造")
