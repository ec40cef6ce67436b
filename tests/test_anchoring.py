"""``taguru-ray anchoring``: strict and alias-group anchoring, locator validity, the listing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from taguru_ray.tools.anchoring import AliasGroups, judge_file, judge_files, render_text

RECORDS = Path(__file__).parent / "fixtures" / "records"
REPO = Path(__file__).resolve().parents[1]
CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
PASSAGE = "Tokyo Tower stands in Minato.\n\nThe tower was built in 1958.\n\nご飯を食べる。"


def lines(*records: dict) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def fact(subject: str, label: str, object_: str, paragraph: int | None = None) -> dict:
    line = {"subject": subject, "label": label, "object": object_, "weight": 1.0}
    return line if paragraph is None else {**line, "paragraph": paragraph}


# Lines 3-7 are the associations; a paragraph past the passage's end (9) is
# what import tolerates and extract never writes.
TOWER = lines(
    {"type": "source", "version": "2026-09-17", "id": "docs/tower.md", "context_id": CONTEXT},
    {"passage": PASSAGE},
    fact("Tokyo Tower", "stands in", "Minato", 0),  # strict
    fact("Tokyo Tower", "built in", "1958", 1),  # "the tower" only through the alias
    fact("Nagoya", "near", "Sapporo", 0),  # nowhere: unanchored, and so is its locator
    fact("Minato", "hosts", "Tokyo Tower"),  # no citation: the whole passage
    fact("Tokyo Tower", "opened", "1958", 9),  # anchored, but paragraph 9 does not exist
    {"alias": "The Tower", "canonical": "Tokyo Tower", "kind": "concept"},
)


def test_recorded_runs_anchor_every_association_strictly() -> None:
    files = {p.name: p.read_bytes() for p in sorted((RECORDS / "run-a").glob("*.jsonl"))}
    report = judge_files(files)
    [alpha] = report.segments.values()
    assert alpha.source == "docs/alpha.md" and alpha.context == CONTEXT
    assert (alpha.counts.associations, alpha.counts.anchored_strict) == (7, 7)
    assert alpha.counts.rates() == {
        "rate_strict": 1.0,
        "rate_with_aliases": 1.0,
        "locator_validity": 1.0,
    }
    assert alpha.unanchored == [] and not report.failed


def test_each_association_gets_three_judgments_and_a_reason() -> None:
    segment = judge_file("tower.jsonl", TOWER)
    assert segment is not None
    counts = segment.counts
    assert (counts.associations, counts.anchored_strict, counts.anchored_with_aliases) == (5, 3, 4)
    assert (counts.cited, counts.locator_valid) == (4, 2)
    listed = [judged.to_json() for judged in segment.unanchored]
    assert listed == [
        {
            "line": 4,
            "subject": "Tokyo Tower",
            "label": "built in",
            "object": "1958",
            "paragraph": 1,
            "reason": "alias-only",
            "strict": False,
            "with_aliases": True,
            "locator_valid": True,
        },
        {
            "line": 5,
            "subject": "Nagoya",
            "label": "near",
            "object": "Sapporo",
            "paragraph": 0,
            "reason": "unanchored, invalid locator",
            "strict": False,
            "with_aliases": False,
            "locator_valid": False,
        },
        {
            "line": 7,
            "subject": "Tokyo Tower",
            "label": "opened",
            "object": "1958",
            "paragraph": 9,
            "reason": "invalid locator",
            "strict": True,
            "with_aliases": True,
            "locator_valid": False,
        },
    ]


def test_names_fold_as_the_occurrence_check_folds_them() -> None:
    source = lines(
        {"type": "source", "version": "2026-09-17", "id": "a.md", "context_id": CONTEXT},
        {"passage": "PostgreSQL 16 replaces PostgreSQL 15."},
        fact("postgresql16", "replaces", "POSTGRESQL 15", 0),
    )
    segment = judge_file("a.jsonl", source)
    assert segment is not None and segment.counts.anchored_strict == 1


def test_alias_groups_join_transitively_in_either_direction() -> None:
    groups = AliasGroups([("A", "B"), ("C", "B"), ("D", "E")])
    assert groups.group("a") == ["a", "b", "c"]
    assert groups.group("e") == ["e", "d"]
    assert groups.group("z") == ["z"]


def test_a_refused_file_is_named_counted_under_failed_and_the_rest_judged() -> None:
    broken = TOWER.replace(b'"weight": 1.0', b'"weight": 0', 1)
    no_passage = lines(
        {"type": "source", "version": "2026-09-17", "id": "b.md", "context_id": CONTEXT},
        fact("X", "is", "Y"),
    )
    report = judge_files({"out/a.jsonl": broken, "out/b.jsonl": no_passage, "out/t.jsonl": TOWER})
    assert list(report.failed) == ["out/a.jsonl"]
    assert "line 3: weight 0 must be non-zero" in report.failed["out/a.jsonl"]
    assert report.skipped == ["out/b.jsonl"] and list(report.segments) == ["docs/tower.md"]
    data = report.to_json()
    assert data["failed"][0]["file"] == "out/a.jsonl"
    assert data["totals"]["associations"] == 5 and data["totals"]["rate_strict"] == 0.6


def test_the_listing_prints_the_first_n_per_segment() -> None:
    report = judge_files({"out/t.jsonl": TOWER})
    text = render_text(report, 1)
    assert "  docs/tower.md       5   0.600         0.800             0.500\n" in text
    assert "docs/tower.md: 3 association(s) not strictly anchored or mislocated\n" in text
    assert "  line 4: Tokyo Tower | built in | 1958 (paragraph 1): alias-only\n" in text
    assert "  … and 2 more (all in --json)\n" in text
    assert "not strictly anchored" not in render_text(report, 0)


def anchoring_cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "taguru_ray", "anchoring", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)


def test_the_verb_writes_the_report_intact_and_exits_1_on_a_refused_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / ".extract-trace").mkdir(parents=True)
    (out / "tower.jsonl").write_bytes(TOWER)
    (out / "broken.jsonl").write_bytes(b"not json\n")
    (out / ".extract-trace" / "tower.jsonl").write_text("never read\n")
    report = tmp_path / "report.json"
    result = anchoring_cli(str(out), "--json", str(report), "--list", "2")
    assert result.returncode == 1
    assert f"{out}/broken.jsonl: line 1: not JSON" in result.stderr
    assert "counted under failed, skipped" in result.stderr
    assert "source files: 1 judged, 1 failed" in result.stdout
    assert "  line 5: Nagoya | near | Sapporo (paragraph 0): unanchored, invalid locator" in (
        result.stdout
    )
    data = json.loads(report.read_text())
    assert len(data["segments"]["docs/tower.md"]["unanchored"]) == 3
    assert [f["file"] for f in data["failed"]] == [f"{out}/broken.jsonl"]

    clean = anchoring_cli(str(RECORDS / "run-a"))
    assert clean.returncode == 0 and "TOTAL" in clean.stdout
    missing = anchoring_cli(str(tmp_path / "absent"))
    assert missing.returncode == 2 and "absent: no such folder or file" in missing.stderr
