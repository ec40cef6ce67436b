"""benchmark compare's loading and metric catalog (BENCHMARK.md §2.1–2.5), on small results
directories built by hand. `Results` is the builder the other compare test files share."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.benchmark.compare import CompareError, Computed, compute
from taguru_ray.benchmark.compare.batch import analyze_batch
from taguru_ray.benchmark.compare.load import AttemptRow, DocRow
from taguru_ray.benchmark.compare.metrics import (
    attempt_distributions,
    attempt_rates,
    chunk_seconds,
    outcome_rates,
    wall_seconds,
)
from taguru_ray.measure import Count, Distribution, Ratio

RUN_ID = "20260726T091422Z-3f7a1c"


# ---------------------------------------------------------------- the builder


def start(segment: str, ts: float = 100.0, **extra: Any) -> dict[str, Any]:
    return {"kind": "segment", "phase": "start", "segment_id": segment, "ts": ts, **extra}


def end(
    segment: str,
    ts: float = 110.0,
    outcome: str = "written",
    associations: int | None = 1,
    batch_path: str | None = None,
    **counts: Any,
) -> dict[str, Any]:
    line = {"kind": "segment", "phase": "end", "segment_id": segment, "ts": ts}
    line |= {"outcome": outcome, "associations": associations, "batch_path": batch_path}
    for name in ("concepts", "labels", "questions", "duplicates", "dropped"):
        line[name] = counts.get(name, 0 if outcome == "written" else None)
    return line


def attempt(segment: str, elapsed: float = 1.0, **extra: Any) -> dict[str, Any]:
    line = {
        "kind": "attempt",
        "segment_id": segment,
        "stage": "item",
        "chunk_index": 0,
        "attempt": 1,
        "state": "stop_valid",
        "length_limited": False,
        "elapsed_seconds": elapsed,
        "provider_metadata": {
            "finish_reason": "stop",
            "input_tokens": 100,
            "output_tokens": 20,
            "total_tokens": 120,
        },
        "parse_error": None,
        "validation_issues": None,
    }
    return line | extra


def assoc(s: str, label: str, o: str, weight: float = 1.0, paragraph: int | None = None) -> dict:
    line: dict[str, Any] = {"subject": s, "label": label, "object": o, "weight": weight}
    if paragraph is not None:
        line["paragraph"] = paragraph
    return line


def alias(name: str, canonical: str, kind: str = "concept") -> dict[str, Any]:
    return {"alias": name, "canonical": canonical, "kind": kind}


class Results:
    """A results directory under construction: segments, models, cells, batches."""

    def __init__(self, root: Path, run_id: str = RUN_ID) -> None:
        self.root = root
        self.run_id = run_id
        self.segments: list[dict[str, Any]] = []
        self.models: list[dict[str, Any]] = []
        self.cells: list[dict[str, Any]] = []
        self.segment_key = "segments"
        root.mkdir(parents=True, exist_ok=True)

    def segment(self, segment_id: str, paragraph_count: int = 10, **extra: Any) -> Results:
        entry = {
            "segment_id": segment_id,
            "path": f"corpus/{segment_id}.md",
            "bytes": 100,
            "sha256": f"sha-{segment_id}",
            "paragraph_count": paragraph_count,
            "chunk_total": 1,
            "chunks": [],
        }
        self.segments.append(entry | extra)
        return self

    def model(self, model_id: str, **extra: Any) -> Results:
        entry = {"model_id": model_id, "model_name": model_id, "endpoint": "http://h/v1"}
        entry |= {"gpu": None, "gpu_count": None, "price_per_gpu_hour": None}
        self.models.append(entry | extra)
        return self

    def batch(self, model: str, run: int, name: str, lines: list[Any]) -> str:
        """Write a batch file; its path relative to the results directory."""
        relative = f"cells/{model}/run{run:02d}/{name}.jsonl"
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        header = {"taguru_batch": 1, "context": "c"}
        body = [line if isinstance(line, str) else json.dumps(line) for line in [header, *lines]]
        path.write_text("\n".join(body) + "\n", encoding="utf-8")
        return relative

    def cell(
        self,
        model: str,
        run: int,
        lines: list[dict[str, Any]],
        outcome: str = "complete",
        **extra: Any,
    ) -> Results:
        cell_id = f"{model}.run{run:02d}"
        runs_file = f"runs/{cell_id}.jsonl"
        path = self.root / runs_file
        path.parent.mkdir(parents=True, exist_ok=True)
        header = {"kind": "header", "taguru_benchmark_runs": 1, "cell_id": cell_id}
        path.write_text(
            "".join(json.dumps(line, sort_keys=True) + "\n" for line in [header, *lines]),
            encoding="utf-8",
        )
        entry = {
            "cell_id": cell_id,
            "model_id": model,
            "run_index": run,
            "runs_file": runs_file,
            "cell_dir": f"cells/{model}/run{run:02d}",
            "structured_output_resolved": "json_schema",
            "started_at": "2026-07-26T09:14:22Z",
            "finished_at": "2026-07-26T09:20:00Z",
            "outcome": outcome,
            "saturation": None,
        }
        self.cells.append(entry | extra)
        return self

    def write(self) -> Path:
        manifest = {
            "taguru_benchmark_manifest": 1,
            "run_id": self.run_id,
            "started_at": "2026-07-26T09:14:22Z",
            "finished_at": "2026-07-26T09:30:00Z",
            "taguru_version": "0.1.0",
            "sdk_versions": {},
            "harness": {"execution": "subprocess", "runs_per_model": 1},
            "extraction_settings": {"prompt_version": 3},
            self.segment_key: self.segments,
            "models": self.models,
            "cells": self.cells,
        }
        (self.root / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        return self.root

    def compute(self, **kwargs: Any) -> Computed:
        self.write()
        return compute(str(self.root), generated_at="2026-07-26T10:00:00Z", **kwargs)


def smoke(root: Path) -> Results:
    """One model, one run: brewery written (2 associations, one subject), sake failed."""
    results = Results(root).model("m").segment("brewery").segment("sake")
    batch = results.batch(
        "m", 1, "brewery", [assoc("Brewery", "brews", "ale"), assoc("Brewery", "sells", "lager")]
    )
    results.cell(
        "m",
        1,
        [
            start("brewery", 100.0),
            attempt("brewery", 2.0),
            end("brewery", 110.0, associations=2, batch_path=batch),
            start("sake", 100.0),
            attempt("sake", 3.0, state="timeout", provider_metadata=None),
            end("sake", 120.0, outcome="failed", associations=None),
        ],
    )
    return results


def two_runs(root: Path) -> Results:
    """One model, two runs: brewery completed twice (case variants, a sign flip, a paragraph
    move, a run-only key, an alias resolved differently), sake completed in run 1 only."""
    results = Results(root).model("m").segment("brewery").segment("sake")
    aliases_1 = [
        alias("BrewCo Group", "beer co"),
        alias("Brewery Inc", "brewery"),
        alias("makes", "brews", "label"),
        alias("ale", "Ale"),
    ]
    aliases_2 = [*aliases_1[1:], alias("brewco group", "Brewer")]
    run1 = results.batch(
        "m",
        1,
        "brewery",
        [
            assoc("Brewery", "brews", "Ale", 1.0, 1),
            assoc("brewery", "sells", "lager", 1.0, 1),
            *aliases_1,
        ],
    )
    run2 = results.batch(
        "m",
        2,
        "brewery",
        [
            assoc("brewery", "brews", "ale", -1.0, 1),
            assoc("brewery", "sells", "lager", 1.0, 2),
            assoc("brewery", "hosts", "tours", 1.0, 3),
            *aliases_2,
        ],
    )
    sake = results.batch(
        "m", 1, "sake", [assoc("kura", "brews", "sake"), assoc("kura", "sells", "sake")]
    )
    results.cell(
        "m",
        1,
        [
            start("brewery"),
            attempt("brewery", 4.0),
            end("brewery", associations=2, batch_path=run1),
            start("sake"),
            attempt("sake", 5.0),
            end("sake", associations=2, batch_path=sake),
        ],
    )
    results.cell(
        "m",
        2,
        [
            start("brewery"),
            attempt("brewery", 6.0),
            end("brewery", associations=3, batch_path=run2),
            start("sake"),
            attempt("sake", 7.0),
            end("sake", outcome="failed", associations=None),
        ],
    )
    return results


# ---------------------------------------------------------------- batches


def test_a_batch_is_classified_line_by_line() -> None:
    lines = [
        {"taguru_batch": 1},
        {"passage": "text", "paragraph": 0},
        {"question": "who?", "paragraph": 1},
        assoc("alice", "knows", "bob", 1.0, 0),
        assoc("bob", "knows", "carol", -1.0, 99),
        assoc("alice", "knows", "carol", 0.5),
        alias("Bob", "bob"),
        alias("nope", "ghost"),
        "not json",
        {"unexpected": "shape"},
    ]
    text = "\n".join(json.dumps(x) if isinstance(x, dict) else x for x in lines) + "\n\n"
    stats = analyze_batch(text, 5)
    assert stats.assoc_lines == 3
    assert (stats.weight_positive, stats.weight_negative) == (2, 1)
    assert stats.paragraph_attributed == 2
    assert stats.subjects == {"alice", "bob"}
    assert stats.relations == {"knows"}
    assert stats.alias_orphans == 1
    assert stats.paragraph_out_of_range == 1
    assert stats.invalid_lines == 2


def test_a_paragraph_of_two_to_the_32_is_out_of_range_not_wrapped() -> None:
    stats = analyze_batch(json.dumps(assoc("a", "b", "c", 1.0, 4294967296)), 5)
    assert stats.paragraph_out_of_range == 1


def test_a_segment_without_a_manifest_entry_has_no_range_to_leave() -> None:
    assert (
        analyze_batch(json.dumps(assoc("a", "b", "c", 1.0, 99)), None).paragraph_out_of_range == 0
    )


def test_a_zero_weight_counts_as_neither_sign_and_nan_is_invalid() -> None:
    text = (
        json.dumps(assoc("a", "b", "c", 0.0))
        + '\n{"subject":"a","label":"b","object":"c","weight":NaN}\n'
    )
    stats = analyze_batch(text, 5)
    assert (stats.weight_positive, stats.weight_negative, stats.invalid_lines) == (0, 0, 1)


def test_a_label_alias_orphans_against_labels_and_unknown_kinds_never_do() -> None:
    text = "\n".join(
        json.dumps(x)
        for x in [
            assoc("a", "knows", "b"),
            alias("meets", "knows", "label"),
            alias("x", "a", "label"),
            alias("q", "zzz", "mystery"),
        ]
    )
    stats = analyze_batch(text, 5)
    assert stats.alias_orphans == 1
    assert [line.kind for line in stats.aliases] == ["label", "label"]


# ---------------------------------------------------------------- attempts


def row(**fields: Any) -> AttemptRow:
    base: dict[str, Any] = {
        "cell_id": "m.run01",
        "model_id": "m",
        "document_id": "doc",
        "chunk_index": 0,
        "stage": "item",
        "state": "stop_valid",
        "attempt": 1,
        "length_limited": False,
        "elapsed_seconds": 1.0,
        "finish_reason": "stop",
        "input_tokens": None,
        "output_tokens": None,
        "total_tokens": None,
        "provider_metadata_present": True,
        "parse_error_present": False,
        "validation_rejected": False,
    }
    return AttemptRow(**(base | fields))


def test_chunk_seconds_sums_retries_and_leaves_out_cross_chunk() -> None:
    rows = [
        row(elapsed_seconds=2.0, state="stop_malformed", parse_error_present=True),
        row(elapsed_seconds=3.0, attempt=2),
        row(elapsed_seconds=100.0, stage="cross_chunk"),
    ]
    d = chunk_seconds(rows)
    assert (d.n, d.sum) == (1, 5.0)
    assert attempt_rates(rows)["attempt.retry_rate"].numerator == 1


def test_a_timeout_has_no_tokens_but_counts_as_missing_metadata() -> None:
    rows = [
        row(input_tokens=100, output_tokens=10, total_tokens=110, elapsed_seconds=2.0),
        row(state="timeout", finish_reason=None, provider_metadata_present=False),
    ]
    metrics = attempt_distributions(rows)
    tokens = metrics["tokens.input_per_attempt"]
    assert isinstance(tokens, Distribution)
    assert (tokens.n, tokens.sum) == (1, 100.0)
    assert metrics["throughput.output_tokens_per_second"].to_json()["sum"] == 5.0
    missing = attempt_rates(rows)["attempt.provider_metadata_missing_rate"]
    assert (missing.numerator, missing.n) == (1, 2)


def doc(**fields: Any) -> DocRow:
    base: dict[str, Any] = {
        "cell_id": "m.run01",
        "model_id": "m",
        "run_index": 1,
        "document_id": "doc",
        "start_ts": None,
        "end_ts": None,
        "outcome": None,
        "counts": {},
        "elapsed_seconds_sum": 0.0,
        "input_tokens_sum": None,
        "batch": None,
    }
    return DocRow(**(base | fields))


def test_wall_seconds_needs_a_start_and_an_end_in_order() -> None:
    assert wall_seconds(doc(start_ts=10.0)) is None
    assert wall_seconds(doc(start_ts=10.0, end_ts=25.0)) == 15.0
    assert wall_seconds(doc(start_ts=10.0, end_ts=9.0)) is None
    assert wall_seconds(doc(start_ts=10.0, end_ts=10.0)) == 0.0


def test_a_start_only_segment_is_in_the_denominator_only() -> None:
    rates = outcome_rates([doc(outcome="written"), doc(outcome="failed"), doc()])
    assert rates["document.written_rate"] == Ratio(1 / 3, 3, 1)
    assert rates["document.failed_rate"] == Ratio(1 / 3, 3, 1)


# ---------------------------------------------------------------- whole directories


def test_smoke_directory(tmp_path: Path) -> None:
    m = smoke(tmp_path).compute().measurements
    assert m.runs == ["runs/m.run01.jsonl"]
    cell = m.cells["m.run01"].metrics
    assert cell["latency.attempt_seconds"].n == 2
    assert cell["document.written_rate"] == Ratio(0.5, 2, 1)
    assert m.models["m"]["cell.complete_rate"] == Ratio(1.0, 1, 1)
    brewery = m.documents["m"]["brewery"]["run01"]
    assert brewery["extraction.associations"] == Count(2.0, 1)
    assert brewery["extraction.subjects_distinct"] == Count(1.0, 1)
    assert m.documents["m"]["sake"]["run01"]["extraction.associations"] == Count(None, 0)
    assert m.documents["m"]["sake"]["run01"]["extraction.subjects_distinct"] == Count(None, 0)
    assert brewery["latency.document_wall_seconds"].to_json()["sum"] == 10.0


def test_a_later_end_record_wins(tmp_path: Path) -> None:
    results = smoke(tmp_path)
    path = tmp_path / "runs/m.run01.jsonl"
    batch = "cells/m/run01/brewery.jsonl"
    later = end("brewery", 130.0, associations=5, batch_path=batch)
    path.write_text(path.read_text() + json.dumps(later) + "\n")
    m = results.compute().measurements
    assert m.documents["m"]["brewery"]["run01"]["extraction.associations"] == Count(5.0, 1)


def test_the_earliest_start_is_kept(tmp_path: Path) -> None:
    results = smoke(tmp_path)
    path = tmp_path / "runs/m.run01.jsonl"
    path.write_text(path.read_text() + json.dumps(start("brewery", 90.0)) + "\n")
    wall = results.compute().measurements.documents["m"]["brewery"]["run01"]
    assert wall["latency.document_wall_seconds"].to_json()["sum"] == 20.0


def test_ref_2608_document_names_read_alike(tmp_path: Path) -> None:
    new = smoke(tmp_path / "new").compute().measurements.to_json()
    old_dir = smoke(tmp_path / "old")
    old_dir.segment_key = "documents"
    for entry in old_dir.segments:
        entry["document_id"] = entry.pop("segment_id")
    runs = old_dir.root / "runs/m.run01.jsonl"
    renamed = []
    for line in runs.read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "segment":
            record["kind"] = "document"
        if "segment_id" in record:
            record["document_id"] = record.pop("segment_id")
        renamed.append(json.dumps(record))
    runs.write_text("\n".join(renamed) + "\n")
    assert old_dir.compute().measurements.to_json() == new


def test_two_run_stability(tmp_path: Path) -> None:
    model = two_runs(tmp_path).compute().measurements.models["m"]
    jaccard = model["stability.run_pair_jaccard"]
    assert (jaccard.n, jaccard.min) == (1, 2 / 3)
    assert model["stability.keys_distinct"] == Count(5.0, 3)
    assert model["stability.keys_in_all_runs_ratio"] == Ratio(2 / 3, 3, 2)
    assert model["stability.keys_in_single_run_ratio"] == Ratio(1 / 3, 3, 1)
    presence = model["stability.key_presence_ratio"]
    assert (presence.min, presence.max, presence.sum) == (0.5, 1.0, 2.5)
    for name in ("polarity", "weight", "attribution"):
        assert model[f"stability.{name}_variation_ratio"] == Ratio(0.5, 2, 1)
    assert model["stability.alias_canonical_variation_ratio"] == Ratio(0.25, 4, 1)
    totals = model["run.associations_total"]
    assert (totals.n, totals.min, totals.max) == (2, 3.0, 4.0)
    written = model["run.documents_written"]
    assert (written.min, written.max) == (1.0, 2.0)
    elapsed = model["run.elapsed_seconds_total"]
    assert (elapsed.min, elapsed.max) == (9.0, 13.0)


def test_a_single_run_has_no_stability_but_one_sample_per_run(tmp_path: Path) -> None:
    model = smoke(tmp_path).compute().measurements.models["m"]
    for name, value in model.items():
        if name.startswith("stability.") and isinstance(value, Ratio):
            assert value == Ratio(None, 0, None), name
    assert model["stability.run_pair_jaccard"].n == 0
    assert model["stability.keys_distinct"] == Count(2.0, 1)
    for name in ("run.associations_total", "run.elapsed_seconds_total", "run.documents_written"):
        assert model[name].n == 1


def test_a_run_with_nothing_still_gives_a_zero_sample(tmp_path: Path) -> None:
    results = smoke(tmp_path)
    results.cell("m", 2, [], outcome="interrupted")
    model = results.compute().measurements.models["m"]
    assert model["run.associations_total"].to_json()["min"] == 0.0
    assert model["cell.complete_rate"] == Ratio(0.5, 2, 1)
    assert results.compute().measurements.cells["m.run02"].metrics["latency.attempt_seconds"].n == 0


def test_an_unreadable_runs_file_names_its_cell(tmp_path: Path) -> None:
    results = smoke(tmp_path)
    results.write()
    (tmp_path / "runs/m.run01.jsonl").unlink()
    with pytest.raises(CompareError, match=r"m\.run01"):
        compute(str(tmp_path))


def test_a_missing_or_newer_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CompareError, match=r"manifest\.json"):
        compute(str(tmp_path))
    (tmp_path / "manifest.json").write_text('{"taguru_benchmark_manifest": 2}')
    with pytest.raises(CompareError, match="taguru_benchmark_manifest"):
        compute(str(tmp_path))


def test_a_minimal_manifest_loads_with_defaults(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"taguru_benchmark_manifest":1,"run_id":"abc"}')
    computed = compute(str(tmp_path))
    assert computed.measurements.run_id == "abc"
    assert computed.measurements.cells == {}
    assert computed.differences.count("\n") == 1


def test_an_unreadable_batch_warns_and_leaves_the_segment_out(tmp_path: Path) -> None:
    results = smoke(tmp_path)
    (tmp_path / "cells/m/run01/brewery.jsonl").unlink()
    notes: list[str] = []
    m = results.compute(warn=notes.append).measurements
    assert any("brewery.jsonl" in note for note in notes)
    assert m.documents["m"]["brewery"]["run01"]["extraction.subjects_distinct"] == Count(None, 0)


def test_a_written_segment_missing_from_the_manifest_warns(tmp_path: Path) -> None:
    results = smoke(tmp_path)
    results.segments = [s for s in results.segments if s["segment_id"] != "brewery"]
    notes: list[str] = []
    results.compute(warn=notes.append)
    assert any("brewery" in note and "paragraph_out_of_range" in note for note in notes)


def test_rung_drift_warns_once_naming_the_model_and_rungs(tmp_path: Path) -> None:
    results = smoke(tmp_path)
    results.cell("m", 2, [], structured_output_resolved="prompted")
    results.cell("m", 3, [], structured_output_resolved=None)
    notes: list[str] = []
    results.compute(warn=notes.append)
    drift = [note for note in notes if "structured-output" in note]
    assert len(drift) == 1
    assert "'m'" in drift[0] and "(json_schema, prompted)" in drift[0]


def test_one_rung_and_a_null_do_not_warn(tmp_path: Path) -> None:
    results = smoke(tmp_path)
    results.cell("m", 2, [], structured_output_resolved=None)
    notes: list[str] = []
    results.compute(warn=notes.append)
    assert not [note for note in notes if "structured-output" in note]


def test_finish_reason_definitions_exist_only_for_observed_reasons(tmp_path: Path) -> None:
    m = smoke(tmp_path).compute().measurements
    reasons = [name for name in m.definitions if name.startswith("attempt.finish_reason_rate.")]
    assert reasons == ["attempt.finish_reason_rate.stop"]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_lines_serde_json_refuses_are_invalid_here_too() -> None:
    surrogate = '{"subject":"\\ud800","label":"b","object":"c","weight":1}'
    huge = '{"subject":"a","label":"b","object":"c","weight":1' + "0" * 400 + "}"
    stats = analyze_batch(surrogate + "\n" + huge + "\r\n\n", 5)
    assert (stats.assoc_lines, stats.invalid_lines) == (0, 2)


def test_taguru_rays_own_source_file_counts_no_invalid_line() -> None:
    """Issue 37: the `type: source` header (and section lines) are lines import reads, so
    a segment taguru-ray wrote reports `batch_lines_invalid` 0, not 1 per file."""
    from taguru_ray.contract.items import Alias, Association, Question
    from taguru_ray.contract.source_file import Header, Passage, SourceFile, render_source_file

    source = SourceFile(
        Header("a.md", "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f", "ctx", "a description"),
        passage=Passage("Alice knows Bob.\n\nBob knows Carol.", 1_700_000_000, ("t",)),
        questions=[Question(1, "Who?")],
        associations=[Association("alice", "knows", "bob", 1.0, 0)],
        aliases=[Alias("Alice", "alice", "concept")],
    )
    text = render_source_file(source).decode("utf-8")
    sections = '\n{"paragraph":1,"section":"Part two"}'
    stats = analyze_batch(text + sections, 2)
    assert (stats.invalid_lines, stats.assoc_lines, stats.alias_orphans) == (0, 1, 0)
    # As the reference treats a `taguru_batch` line, a header line is never an invalid
    # item wherever it stands (verify is the check that refuses a second one).
    second = analyze_batch(text + '\n{"type":"source","id":"b","context_id":"x"}', 2)
    assert second.invalid_lines == 0
