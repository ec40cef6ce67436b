import hashlib

from taguru_ray.contract.names import (
    attempts_name,
    checkpoint_name,
    flatten,
    output_name,
    written_id,
)


def test_output_name_flattens_the_path_and_appends_its_hash() -> None:
    digest = hashlib.sha256(b"docs/a.md").hexdigest()[:16]
    assert output_name("docs/a.md") == f"docs__a.md-{digest}.jsonl"
    assert checkpoint_name("docs/a.md") == f"docs__a.md-{digest}.json"
    assert attempts_name("docs/a.md") == f"docs__a.md-{digest}.attempts.jsonl"


def test_paths_that_flatten_alike_get_distinct_names() -> None:
    assert flatten("a/b.md") == flatten("a__b.md")
    assert output_name("a/b.md") != output_name("a__b.md")


def test_long_names_are_cut_to_96_bytes_at_a_character_boundary() -> None:
    long = "日" * 50 + ".md"
    assert len(flatten(long).encode()) <= 96
    assert flatten("s3://bucket/x.md") == "s3______bucket__x.md"


def test_source_id_expands_per_stem_for_several_segments() -> None:
    assert written_id("docs/a.md", None, True) == "docs/a.md"
    assert written_id("docs/a.md", "session:x", False) == "session:x"
    assert written_id("docs/a.tar.md", "session:x", True) == "session:x/a.tar"
