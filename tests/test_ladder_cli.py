"""The reliability ladder end to end: the real CLI against a simulator that misbehaves.

Budgets are derived from what the simulator will answer for the segment (its
answers are deterministic), so each test lands exactly on the rung it names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.contract.names import output_name
from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.pipeline.plan import plan_chunks
from taguru_ray.pipeline.prompt import user_turn
from taguru_ray.simulate.answers import answer_for_turn, estimate_tokens
from taguru_ray.text.paragraphs import split_paragraphs
from tests.support import CONTEXT, Cli

pytestmark = pytest.mark.slow

TREES = ("Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Ginkgo", "Hazel")
# Distinct names in every paragraph: the simulator's answer grows with the piece.
TEXT = "\n\n".join(
    f"The {tree}ingest service reads the {tree}topic and writes {tree}files to the "
    f"{tree}bucket, where the {tree}engine scans them."
    for tree in TREES
)


def setup(tmp_path: Path) -> tuple[Path, str]:
    docs = tmp_path / "docs"
    docs.mkdir()
    path = docs / "pipeline.md"
    path.write_text(TEXT)
    return docs, str(path)


def whole_answer(source: str) -> str:
    """What the simulator answers for the whole segment as one chunk."""
    [chunk] = plan_chunks(split_paragraphs(TEXT), 24576)
    return answer_for_turn(user_turn(source, 0, 1, chunk.text))


def answer_tokens(source: str) -> int:
    return estimate_tokens(whole_answer(source))


def facts(source: str) -> int:
    return len(json.loads(whole_answer(source))["associations"])


def extract(cli: Cli, tmp_path: Path, docs: Path, *extra: str, **env: str) -> Any:
    return cli.extract(
        "--context", CONTEXT, "--out", str(tmp_path / "out"), *extra, str(docs), env=cli.env(**env)
    )


def records(tmp_path: Path, source: str, kind: str) -> list[dict[str, Any]]:
    log = output_name(source).replace(".jsonl", ".attempts.jsonl")
    path = tmp_path / "out" / ".extract-trace" / log
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["type"] == kind]


def written(tmp_path: Path, source: str) -> int:
    return len(
        parse_source_file((tmp_path / "out" / output_name(source)).read_bytes()).associations
    )


def test_escalation_lands_a_cut_off_answer(cli: Cli, tmp_path: Path) -> None:
    docs, source = setup(tmp_path)
    budget = answer_tokens(source) * 3 // 4
    result = extract(cli, tmp_path, docs, "--max-output-tokens", str(budget))
    assert result.returncode == 0, result.stderr
    assert [
        (m["move"], m["from_max_tokens"], m["to_max_tokens"])
        for m in records(tmp_path, source, "move")
    ] == [("escalate", budget, 2 * budget)]
    states = [
        (a["state"], a["requested_max_tokens"], a["rung"])
        for a in records(tmp_path, source, "attempt")
    ]
    assert states == [
        ("length_limited", budget, "prompted JSON"),
        ("stop_valid", 2 * budget, "prompted JSON"),
    ]
    assert written(tmp_path, source) > 0


def test_still_cut_off_splits_in_two_and_each_half_runs_from_the_top(
    cli: Cli, tmp_path: Path
) -> None:
    docs, source = setup(tmp_path)
    budget = answer_tokens(source) // 3
    result = extract(cli, tmp_path, docs, "--max-output-tokens", str(budget))
    assert result.returncode == 0, result.stderr
    moves = records(tmp_path, source, "move")
    split = next(m for m in moves if m["move"] == "split")
    assert split["sub_pieces"] == 2 and split["split_cap"] < split["piece_bytes"]
    assert [m["move"] for m in moves][:2] == ["escalate", "split"]
    trace = json.loads(
        "["
        + ",".join(
            (tmp_path / "out" / ".extract-trace" / output_name(source)).read_text().splitlines()
        )
        + "]"
    )
    assert len([r for r in trace if r["type"] == "piece"]) >= 2
    assert written(tmp_path, source) == facts(source)  # every fact, from the halves


def test_a_piece_too_small_to_split_fails_the_segment_by_name(cli: Cli, tmp_path: Path) -> None:
    docs, source = setup(tmp_path)
    result = extract(cli, tmp_path, docs, "--max-output-tokens", "8")
    assert result.returncode == 1
    assert "is too small to split — raise --max-output-tokens or" in result.stderr
    assert not (tmp_path / "out" / output_name(source)).exists()


def test_a_timeout_descends_to_the_split_rung(cli: Cli, tmp_path: Path) -> None:
    docs, source = setup(tmp_path)
    cli.simulator.set_script(
        [{"match": "Alderingest", "fault": "stall", "times": 1, "stall_seconds": 30}]
    )
    result = extract(
        cli, tmp_path, docs, "--structured-output", "json-object", TAGURU_EXTRACT_TIMEOUT_SECS="2"
    )
    assert result.returncode == 0, result.stderr
    attempts = records(tmp_path, source, "attempt")
    assert attempts[0]["state"] == "timeout" and attempts[0]["transport_retries"] == 0
    [move] = records(tmp_path, source, "move")
    assert move["move"] == "split" and move["reason"].startswith("timed out")
    assert [a["state"] for a in attempts[1:]] == ["stop_valid", "stop_valid"]


def test_a_runaway_fails_naming_both_sizes(cli: Cli, tmp_path: Path) -> None:
    docs, source = setup(tmp_path)
    cli.simulator.set_script([{"match": "Alderingest", "fault": "runaway"}])
    result = extract(cli, tmp_path, docs, "--structured-output", "json-object")
    assert result.returncode == 1
    [move] = records(tmp_path, source, "move")
    assert move["move"] == "runaway" and move["answer_bytes"] > 8 * move["piece_bytes"]
    assert f"a runaway answer: {move['answer_bytes']} B cut off for a " in result.stderr
    assert len(records(tmp_path, source, "attempt")) == 1


def test_auto_against_a_server_ignoring_response_format_lands_on_prompted_json(
    cli: Cli, tmp_path: Path
) -> None:
    docs, source = setup(tmp_path)
    cli.simulator.set_script([{"fault": "fenced"}])
    result = extract(cli, tmp_path, docs, "--structured-output", "auto")
    assert result.returncode == 0, result.stderr
    assert "structured output: auto resolved to prompted JSON (" in result.stderr
    assert {a["rung"] for a in records(tmp_path, source, "attempt")} == {"prompted JSON"}
    assert written(tmp_path, source) > 0


def test_auto_demotes_a_rung_that_loops_at_run_time_and_the_run_completes(
    cli: Cli, tmp_path: Path
) -> None:
    docs, source = setup(tmp_path)
    cli.simulator.set_script([{"match": "Alderingest", "fault": "schema_loop"}])
    result = extract(
        cli, tmp_path, docs, "--structured-output", "auto", "--max-output-tokens", "2000"
    )
    assert result.returncode == 0, result.stderr
    assert "structured output: auto resolved to json_schema" in result.stderr
    assert "structured output: json_schema demoted to json_object — " in result.stderr
    demote = next(m for m in records(tmp_path, source, "move") if m["move"] == "demote")
    assert (demote["from_rung"], demote["to_rung"]) == ("json_schema", "json_object")
    assert records(tmp_path, source, "attempt")[-1]["rung"] == "json_object"
    assert written(tmp_path, source) == facts(source)


def test_a_pinned_rung_the_server_rejects_fails_loudly(cli: Cli, tmp_path: Path) -> None:
    docs, _ = setup(tmp_path)
    cli.simulator.set_script([{"fault": "reject_schema"}])
    result = extract(cli, tmp_path, docs, "--structured-output", "json-schema")
    assert result.returncode == 1
    assert "HTTP 400" in result.stderr and "not supported" in result.stderr
    assert cli.simulator.stats()["requests"] == 1  # a 4xx is not retried


def test_a_cut_off_stage_2_correction_is_resent_escalated_then_stands(
    cli: Cli, tmp_path: Path
) -> None:
    docs, source = setup(tmp_path)
    cli.simulator.set_script(
        [
            {"match": "Alderingest", "fault": "conflict_alias", "times": 1},
            {"match": "Alderingest", "fault": "truncated", "times": 2},
        ]
    )
    result = extract(cli, tmp_path, docs, "--max-output-tokens", "4000")
    assert result.returncode == 0, result.stderr
    [move] = records(tmp_path, source, "move")
    assert move["move"] == "escalate" and "cross-chunk correction" in move["reason"]
    assert [a["stage"] for a in records(tmp_path, source, "attempt")] == [
        "item",
        "cross_chunk",
        "cross_chunk",
    ]
    assert "still so after the corrective turn; removed" in result.stderr


def test_every_setting_that_changes_the_ask_is_a_compute_input(cli: Cli, tmp_path: Path) -> None:
    docs, _ = setup(tmp_path)
    assert extract(cli, tmp_path, docs).returncode == 0
    cases: list[tuple[tuple[str, ...], dict[str, str], bool]] = [
        (("--structured-output", "off"), {}, False),  # the default matches the old entry
        (("--structured-output", "json-object"), {}, True),
        (("--structured-output", "json-object", "--max-output-tokens", "3000"), {}, True),
        (
            ("--structured-output", "json-object", "--max-output-tokens", "3000"),
            {"TAGURU_EXTRACT_ESCALATION_FACTOR": "3"},
            True,
        ),
        (
            ("--structured-output", "json-object", "--max-output-tokens", "3000"),
            {"TAGURU_EXTRACT_ESCALATION_FACTOR": "3"},
            False,
        ),  # unchanged now
        (("--chunk-bytes", "4096"), {}, True),
        (("--chunk-bytes", "24576"), {}, True),  # back to the default value
    ]
    for flags, env, extracts in cases:
        cli.simulator.reset()
        result = extract(cli, tmp_path, docs, *flags, **env)
        assert result.returncode == 0, result.stderr
        assert (cli.simulator.stats()["requests"] > 0) == extracts, (flags, env)
