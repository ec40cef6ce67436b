"""What taguru-ray puts into the prompt, end to end: questions, the fact budget, and more."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.contract.names import attempts_name, output_name
from taguru_ray.contract.source_file import parse_source_file
from tests.corpora import STATUTE
from tests.support import CONTEXT, REPO, Cli

pytestmark = pytest.mark.slow


def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(REPO / "examples" / "corpus", folder)
    return folder


def extract(cli: Cli, out: Path, docs: Path, *extra: str, **env: str) -> Any:
    return cli.extract(
        "--context",
        CONTEXT,
        "--out",
        str(out),
        "--chunk-bytes",
        "1024",
        *extra,
        str(docs),
        env=cli.env(**env),
    )


def system_of(out: Path, source: str) -> str:
    log = out / ".extract-trace" / attempts_name(source)
    return next(
        json.loads(line)["content"]
        for line in log.read_text().splitlines()
        if json.loads(line)["type"] == "system"
    )


def test_questions_ride_the_extraction_call_and_land_as_question_lines(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    result = extract(cli, out, docs, "--questions", "2")
    assert result.returncode == 0, result.stderr
    sake = str(docs / "03-sake-brewing.md")
    parsed = parse_source_file((out / output_name(sake)).read_bytes())
    per_paragraph: dict[int, int] = {}
    for question in parsed.questions:
        per_paragraph[question.paragraph] = per_paragraph.get(question.paragraph, 0) + 1
    assert parsed.questions and max(per_paragraph.values()) <= 2
    line = next(x for x in result.stdout.splitlines() if x.startswith(sake))
    assert f", {len(parsed.questions)} question(s)" in line
    assert "up to 2 retrieval question(s) per paragraph" in system_of(out, sake)
    cli.simulator.reset()
    assert extract(cli, out, docs, "--questions", "3").returncode == 0
    assert cli.simulator.stats()["requests"] > 0  # a compute input: changing it re-extracts
    refused = extract(cli, tmp_path / "np", docs, "--questions", "2", "--no-passage")
    assert refused.returncode == 2 and "--questions needs the passage" in refused.stderr


def test_the_fact_budget_is_a_soft_ask_in_the_prompt_and_a_compute_input(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    assert extract(cli, out, docs).returncode == 0
    ray_doc = str(docs / "01-ray-overview.md")
    assert "at most" not in system_of(out, ray_doc)
    cli.simulator.reset()
    result = extract(cli, out, docs, TAGURU_EXTRACT_FACT_BUDGET="4")
    assert result.returncode == 0 and cli.simulator.stats()["requests"] > 0
    assert "at most 4 associations" in system_of(out, ray_doc)
    cli.simulator.reset()
    flag = extract(cli, out, docs, "--fact-budget", "4")  # the flag means the same value
    assert flag.returncode == 0 and cli.simulator.stats()["requests"] == 0


def test_carryover_and_gleaning_counters_reach_the_report_and_the_sidecar(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out, sidecar = corpus(tmp_path), tmp_path / "out", tmp_path / "diag.jsonl"
    result = extract(
        cli, out, docs, "--carryover", "16", "--gleanings", "1", "--diagnostics-out", str(sidecar)
    )
    assert result.returncode == 0, result.stderr
    long = str(docs / "02-object-storage-operations.md")
    line = next(x for x in result.stdout.splitlines() if x.startswith(long))
    assert " gleaning pass(es)" in line and "carried over" not in line  # the sidecar says it
    segments = {
        r["source"]: r
        for r in map(json.loads, sidecar.read_text().splitlines())
        if r["type"] == "segment"
    }
    assert segments[long]["carryover_names"] > 0 and segments[long]["gleaning_passes"] > 0


def test_a_failing_gleaning_pass_still_yields_the_first_pass_file(cli: Cli, tmp_path: Path) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    plain = extract(cli, tmp_path / "plain", docs)
    assert plain.returncode == 0
    cli.simulator.set_script([{"match": "日本酒は米と米麹", "fault": "malformed", "after": 1}])
    result = extract(cli, out, docs, "--gleanings", "1")
    assert result.returncode == 0, result.stderr
    sake = str(docs / "03-sake-brewing.md")
    line = next(x for x in result.stdout.splitlines() if x.startswith(sake))
    assert "0 gleaning pass(es), 1 failed" in line  # the one pass failed: none landed
    name = output_name(sake)
    assert (out / name).read_bytes() == (tmp_path / "plain" / name).read_bytes()


def steering_of(out: Path, source: str) -> dict[str, Any]:
    trace = out / ".extract-trace" / output_name(source)
    return next(
        record
        for record in map(json.loads, trace.read_text().splitlines())
        if record["type"] == "steering" and record["chunk_index"] is None
    )


def test_a_previous_out_steers_the_next_run_as_its_vocabulary(cli: Cli, tmp_path: Path) -> None:
    docs, first, out = corpus(tmp_path), tmp_path / "first", tmp_path / "out"
    assert extract(cli, first, docs).returncode == 0
    result = extract(cli, out, docs, "--vocabulary", str(first))
    assert result.returncode == 0, result.stderr
    ray_doc = str(docs / "01-ray-overview.md")
    assert "Names the target context already uses" in system_of(out, ray_doc)
    steering = steering_of(out, ray_doc)
    assert "Raylet" in steering["context_names"]
    # The context's labels seed the reuse list from the very first segment.
    assert steering["vocabulary"] and steering["vocabulary"][0]["count"] > 1
    entries = json.loads((out / ".extract-manifest.json").read_text())["documents"]
    digests = {entry["vocabulary_digest"] for entry in entries.values()}
    assert len(digests) == 1 and len(digests.pop()) == 64
    cli.simulator.reset()
    again = extract(cli, out, docs, "--vocabulary", str(first))
    assert again.returncode == 0 and cli.simulator.stats()["requests"] == 0
    # The digest is of the names, not the files: a renamed file changes nothing, and
    # the variable means the same as the flag. A changed name set re-extracts.
    (first / output_name(ray_doc)).rename(first / "extra.jsonl")
    moved = extract(cli, out, docs, TAGURU_EXTRACT_VOCABULARY=str(first))
    assert moved.returncode == 0 and cli.simulator.stats()["requests"] == 0
    write = (first / "extra.jsonl").read_text() + json.dumps(
        {"subject": "Raylet", "label": "schedules", "object": "Tasks", "weight": 1.0}
    )
    (first / "extra.jsonl").write_text(write + "\n")
    assert extract(cli, out, docs, "--vocabulary", str(first)).returncode == 0
    assert cli.simulator.stats()["requests"] > 0


def test_a_schema_prompts_its_block_and_an_unusable_one_stops_before_any_write(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    document = tmp_path / "schema.json"
    document.write_text(
        json.dumps(
            {
                "schema": 1,
                "mode": "warn",
                "closed_labels": False,
                "types": {"Component": {}, "Service": {"is_a": ["Component"]}},
                "relations": {"part of": {"domain": ["Component"], "range": ["Component"]}},
            }
        )
    )
    result = extract(cli, out, docs, "--schema", str(document))
    assert result.returncode == 0, result.stderr
    ray_doc = str(docs / "01-ray-overview.md")
    assert "- part of: Component → Component" in system_of(out, ray_doc)
    assert steering_of(out, ray_doc)["schema"] == {
        "types": ["Component", "Service"],
        "constrained_relations": ["part of"],
    }
    document.write_text('{"schema": 1, "mode": "warn"}')
    fresh = tmp_path / "fresh"
    refused = extract(cli, fresh, docs, "--schema", str(document))
    assert refused.returncode == 1
    assert f"--schema {document}: missing field" in refused.stderr
    assert not fresh.exists()  # refused before the lock, the folder or any file


def test_coverage_reports_gaps_and_a_rerun_over_unchanged_segments_still_does(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out, sidecar = corpus(tmp_path), tmp_path / "out", tmp_path / "diag.jsonl"
    first = extract(cli, out, docs, "--coverage", "--diagnostics-out", str(sidecar))
    assert first.returncode == 0, first.stderr
    gaps = [line for line in first.stderr.splitlines() if ": uncovered: [paragraph " in line]
    assert gaps, first.stderr
    reported = sum(
        int(line.split(" sentence(s) uncovered")[0].rsplit(", ", 1)[1])
        for line in first.stdout.splitlines()
        if "sentence(s) uncovered (coverage)" in line
    )
    assert reported == len(gaps)
    segments = [
        r for r in map(json.loads, sidecar.read_text().splitlines()) if r["type"] == "segment"
    ]
    assert sum(r["uncovered"] for r in segments) == len(gaps)
    cli.simulator.reset()
    again = extract(cli, out, docs, "--coverage")  # not a compute input: nothing re-extracts
    assert again.returncode == 0 and cli.simulator.stats()["requests"] == 0
    assert [x for x in again.stderr.splitlines() if ": uncovered: " in x] == gaps


ACT = STATUTE


def test_chunk_context_overview_end_to_end_with_a_failed_overview(cli: Cli, tmp_path: Path) -> None:
    docs, out = tmp_path / "docs", tmp_path / "out"
    docs.mkdir()
    (docs / "act.md").write_text(ACT)
    source = str(docs / "act.md")
    cli.simulator.set_script([{"match": "part 2 of 2.\nUnits opening", "fault": "malformed"}])
    result = cli.extract(
        "--context",
        CONTEXT,
        "--out",
        str(out),
        "--chunk-bytes",
        "512",
        "--chunk-context",
        "overview",
        str(docs),
    )
    assert result.returncode == 0, result.stderr
    assert f"taguru: extract: {source}: chunk 2/2: overview skipped (" in result.stderr
    log = [
        json.loads(x)
        for x in (out / ".extract-trace" / attempts_name(source)).read_text().splitlines()
    ]
    stages = [r["stage"] for r in log if r["type"] == "attempt"]
    assert stages.count("overview") == 2 and "item" in stages
    trace = [
        json.loads(x)
        for x in (out / ".extract-trace" / output_name(source)).read_text().splitlines()
    ]
    kinds = [r["type"] for r in trace]
    assert kinds.count("structure") == 4 and kinds.count("overview") == 1
    assert kinds.count("chunk_context") == 2
    entries = json.loads((out / ".extract-manifest.json").read_text())["documents"]
    assert next(iter(entries.values()))["chunk_context"] == "overview"
    cli.simulator.reset()
    plain = cli.extract(
        "--context",
        CONTEXT,
        "--out",
        str(out),
        "--chunk-bytes",
        "512",
        "--chunk-context",
        "structure",
        str(docs),
    )
    assert plain.returncode == 0 and cli.simulator.stats()["requests"] > 0  # a compute input
