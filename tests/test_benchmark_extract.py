"""`benchmark extract`'s pure parts: models.json, segment ids, the child, the runs file,
lanes, drift and saturation (BENCHMARK.md §1 and §5's edge cases)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from taguru_ray.benchmark.child import (
    TaskFlags,
    cell_outcome,
    child_argv,
    child_env,
    resolved_rung,
)
from taguru_ray.benchmark.corpus import SegmentInfo, segment_ids
from taguru_ray.benchmark.manifest import drift, finished_cells, record_cell, resumed
from taguru_ray.benchmark.matrix import lanes
from taguru_ray.benchmark.models_file import ModelEntry, ModelsError, parse_models
from taguru_ray.benchmark.saturation import Price, Seen, nearest_rank, saturation
from taguru_ray.benchmark.transcribe import Cell, Transcriber, seeded_counts

URL = "http://localhost:11434/v1/chat/completions"


def models(*entries: dict[str, Any], **top: Any) -> bytes:
    return json.dumps({"taguru_benchmark_models": 1, "models": list(entries), **top}).encode()


def entry(**fields: Any) -> dict[str, Any]:
    return {"id": "m", "model": "qwen2.5:7b", "url": URL, **fields}


def refused(data: bytes, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ModelsError) as caught:
        parse_models("/cfg/models.json", data, environ or {})
    assert "/cfg/models.json" in str(caught.value)  # every error names the real path
    return str(caught.value)


# --- models.json -----------------------------------------------------------------------


def test_a_matrix_folds_its_defaults_into_each_entry() -> None:
    data = models(
        entry(id="a"),
        entry(id="b", timeout_secs=9, structured_output="off"),
        defaults={"timeout_secs": 123, "structured_output": "auto"},
    )
    a, b = parse_models("models.json", data, {}).models
    assert (a.timeout_secs, a.structured_output) == (123, "auto")
    assert (b.timeout_secs, b.structured_output) == (9, "off")
    plain = parse_models("models.json", models(entry()), {}).models[0]
    assert (plain.timeout_secs, plain.structured_output, plain.max_inflight) == (300, "off", "auto")


def test_a_matrix_nested_past_the_stack_is_refused_by_name() -> None:
    """Found by tests/test_fuzz_models.py: json raised RecursionError under the net."""
    with pytest.raises(ModelsError, match=r"^m\.json: not JSON \(nested too deeply"):
        parse_models("m.json", b"[" * 100_000 + b"]" * 100_000, {})


def test_ids_follow_the_file_name_rule() -> None:
    assert (
        parse_models("m", models(entry(id="qwen25-7b_q4.a")), {}).models[0].id == "qwen25-7b_q4.a"
    )
    for bad in ("-bad", "Bad", "", "a" * 65):
        assert "id" in refused(models(entry(id=bad)))
    assert "used twice" in refused(models(entry(id="x"), entry(id="x")))


def test_version_credentials_keys_and_rungs_are_checked() -> None:
    assert "taguru_benchmark_models" in refused(
        json.dumps({"taguru_benchmark_models": 2, "models": [entry()]}).encode()
    )
    assert "inline credentials" in refused(models(entry(url="http://user:pass@h/v1")))
    assert "variable" in refused(models(entry(api_key_env="sk-abc123")))
    assert "is not set" in refused(models(entry(api_key_env="MY_KEY")))
    assert "json_schema" in refused(models(entry(structured_output="json_schema")))
    assert "model" in refused(models(entry(model="")))
    assert "non-empty" in refused(models())
    keyed = parse_models("m", models(entry(api_key_env="MY_KEY")), {"MY_KEY": "s3cret"})
    assert keyed.models[0].api_key_env == "MY_KEY"
    assert "s3cret" not in json.dumps(keyed.models[0].lock_entry())


def test_unknown_keys_are_warnings_that_name_the_key() -> None:
    matrix = parse_models("m.json", models(entry(nte="x"), modles=[]), {})
    assert len(matrix.models) == 1
    assert any("'modles'" in w for w in matrix.warnings)
    assert any("'models[0].nte'" in w for w in matrix.warnings)


def test_gpu_keys_endpoints_and_capacity() -> None:
    data = models(
        entry(
            urls=["http://a:8000/v1/chat/completions", URL],
            gpu="h200-vllm-fp8",
            gpu_count=8,
            price_per_gpu_hour=3.5,
            max_inflight=64,
        )
    )
    model = parse_models("m", data, {}).models[0]
    assert model.urls == (URL, "http://a:8000/v1/chat/completions")  # url first, no repeat
    assert (model.gpu, model.gpu_count, model.price_per_gpu_hour) == ("h200-vllm-fp8", 8, 3.5)
    assert model.max_inflight == 64
    assert "max_inflight" in refused(models(entry(max_inflight=0)))
    assert "price_per_gpu_hour" in refused(models(entry(price_per_gpu_hour=-1)))
    assert "gpu_count" in refused(models(entry(gpu_count=0)))


# --- segment ids, the child -------------------------------------------------------------


def test_segment_ids_are_relative_paths_with_a_hash_on_a_clash() -> None:
    assert segment_ids("corpus", ["corpus/brewery.md", "corpus/sub/dir/doc.md"]) == [
        "brewery",
        "sub__dir__doc",
    ]
    assert segment_ids("c", ["c/a.md", "c/b.md"]) == ["a", "b"]
    clash = segment_ids("c", ["c/a.md", "c/a.txt"])
    assert clash[0].startswith("a-") and clash[1].startswith("a-") and clash[0] != clash[1]
    assert len(clash[0]) == len("a-") + 16


def model(**fields: Any) -> ModelEntry:
    return ModelEntry(id="m", model="qwen", urls=(URL,), **fields)


def test_the_child_gets_every_task_flag_and_a_scrubbed_environment() -> None:
    flags = TaskFlags(context="c", questions=2, lossy=True, parallel=3, address="h:1")
    argv = child_argv(flags, model(max_inflight=8), "res/cells/m/run01", "diag.jsonl", "corpus")
    assert argv[-1] == "corpus"
    text = " ".join(argv)
    for part in (
        "extract --context c",
        "--out res/cells/m/run01",
        "--diagnostics-out diag.jsonl",
        "--questions 2",
        "--lossy",
        "--parallel 3",
        "--address h:1",
        "--max-inflight 8",
        "--structured-output off",
    ):
        assert part in text
    assert "--endpoint" not in text  # one endpoint travels as TAGURU_EXTRACT_URL
    env = child_env(
        {"TAGURU_EXTRACT_CHUNK_BYTES": "9", "TAGURU_RAY_WORKERS": "7", "KEY": "k", "PATH": "/b"},
        flags,
        model(api_key_env="KEY", timeout_secs=60.0),
    )
    assert "TAGURU_EXTRACT_CHUNK_BYTES" not in env and "TAGURU_RAY_WORKERS" not in env
    assert env["TAGURU_EXTRACT_URL"] == URL and env["TAGURU_EXTRACT_TIMEOUT_SECS"] == "60"
    assert env["TAGURU_EXTRACT_API_KEY"] == "k" and env["PATH"] == "/b"
    several = child_argv(flags, ModelEntry("m", "q", (URL, "http://b/v1")), "o", "d", "c")
    assert several.count("--endpoint") == 2


def test_exit_codes_map_to_cell_outcomes() -> None:
    assert [cell_outcome(c) for c in (0, 1, 2, 130, None, -9, 42)] == [
        "complete",
        "failed",
        "failed",
        "interrupted",
        "interrupted",
        "interrupted",
        None,
    ]


def test_the_rung_is_read_from_extracts_stderr() -> None:
    said = ["taguru: extract: structured output: auto resolved to json_object (probe failed)"]
    assert resolved_rung(said, "auto") == "json_object"
    demoted = [*said, "taguru: extract: structured output: json_object demoted to prompted JSON"]
    assert resolved_rung(demoted, "auto") == "prompted"
    assert resolved_rung([], "off") == "off"
    assert resolved_rung([], "auto") is None
    assert resolved_rung([], "json-schema") == "json_schema"


# --- the runs file ----------------------------------------------------------------------

SEGMENT = SegmentInfo(
    segment_id="brewery",
    path="corpus/brewery.md",
    bytes=10,
    sha256="sha-brewery",
    paragraph_count=3,
    chunks=(
        {
            "chunk_index": 0,
            "chunk_sha256": "sha-chunk0",
            "chunk_bytes": 10,
            "paragraph_first": 0,
            "paragraph_last": 2,
        },
    ),
)
CELL = Cell("m.run01", "m", "qwen", 1, "cells/m/run01", "/res/cells/m/run01")


def attempt(**fields: Any) -> dict[str, Any]:
    return {
        "type": "attempt",
        "source": "corpus/brewery.md",
        "chunk_index": 0,
        "state": "stop_valid",
        **fields,
    }


def test_transcription_writes_start_then_the_attempt_denormalised() -> None:
    t = Transcriber(CELL, {SEGMENT.path: SEGMENT})
    lines = t.take(attempt(elapsed_seconds=1.5), 100.0)
    assert [line["kind"] for line in lines] == ["segment", "attempt"]
    start, made = lines
    assert start["phase"] == "start" and start["segment_sha256"] == "sha-brewery"
    assert made["state"] == "stop_valid" and made["chunk_sha256"] == "sha-chunk0"
    assert (made["cell_id"], made["model_id"], made["run_index"]) == ("m.run01", "m", 1)
    assert list(made) == sorted(made)  # keys sorted, as the reference serialises them
    assert t.take({"type": "attempt", "source": "elsewhere.md"}, 1.0) == []
    assert t.take({"type": "run", "run_id": "r"}, 1.0) == []


def test_an_end_reanchors_the_batch_path_and_open_segments_fail_at_close() -> None:
    t = Transcriber(CELL, {SEGMENT.path: SEGMENT})
    end = t.take(
        {
            "type": "segment",
            "source": "corpus/brewery.md",
            "associations": 4,
            "batch_path": "/res/cells/m/run01/brewery.jsonl",
        },
        5.0,
    )[-1]
    assert end["outcome"] == "written" and end["batch_path"] == "cells/m/run01/brewery.jsonl"
    other = Transcriber(CELL, {SEGMENT.path: SEGMENT})
    other.take(attempt(), 1.0)
    closing = other.close("failed", 1, 9.0)
    assert [line["kind"] for line in closing] == ["segment", "cell"]
    assert closing[0]["outcome"] == "failed" and closing[0]["associations"] is None
    assert closing[1]["attempts_total"] == 1 and closing[1]["exit_code"] == 1
    assert Transcriber(CELL, {}).close("interrupted", None, 1.0) == []


def test_resume_seeds_the_cumulative_counts() -> None:
    lines = [
        {"kind": "attempt"},
        {"kind": "attempt"},
        {"kind": "segment", "phase": "end", "outcome": "written"},
        {"kind": "document", "phase": "end", "outcome": "written"},
        {"kind": "segment", "phase": "start"},
    ]
    assert seeded_counts(lines) == (2, 2)


# --- lanes, drift -----------------------------------------------------------------------


def test_models_sharing_an_endpoint_share_a_lane() -> None:
    a = ModelEntry("a", "x", ("http://h1:80/v1/chat/completions",))
    b = ModelEntry("b", "x", ("http://h2:80/v1/chat/completions",))
    c = ModelEntry("c", "x", ("http://H1:80/v1/chat/completions", "http://h3/v1"))
    d = ModelEntry("d", "x", ("http://h3/v1",))
    assert [[m.id for m in lane] for lane in lanes((a, b, c, d))] == [["a", "c", "d"], ["b"]]
    assert [[m.id for m in lane] for lane in lanes((a, b))] == [["a"], ["b"]]


def manifest(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "started_at": "2026-01-01T00:00:00Z",
        "harness": {"config_sha256": "h", "runs_per_model": 1},
        "extraction_settings": {"questions": 0, "parallel": 1},
        "segments": [{"segment_id": "a", "sha256": "1"}],
        "models": [{"model_id": "m", "model_name": "q", "endpoint": URL}],
        "cells": [],
    }
    base.update(changes)
    return base


def test_drift_names_what_changed() -> None:
    old = manifest()
    assert drift(old, manifest()) is None
    assert "models.json has changed" in str(drift(old, manifest(harness={"config_sha256": "x"})))
    flags = drift(old, manifest(extraction_settings={"questions": 2, "parallel": 1}))
    assert "flags differ" in str(flags) and "questions" in str(flags)
    assert "corpus has changed" in str(drift(old, manifest(segments=[])))
    other = manifest(models=[{"model_id": "m", "model_name": "q2", "endpoint": URL}])
    assert "model set differs" in str(drift(old, other))
    legacy = {**old, "segments": [], "documents": [{"document_id": "a", "sha256": "1"}]}
    assert drift({**legacy, "segments": legacy["documents"]}, manifest()) is None


def test_cells_are_replaced_in_place_and_runs_widen() -> None:
    m = record_cell(manifest(), {"cell_id": "m.run01", "outcome": "interrupted"})
    m = record_cell(m, {"cell_id": "m.run02", "outcome": "complete"})
    m = record_cell(m, {"cell_id": "m.run01", "outcome": "failed"})
    assert [(c["cell_id"], c["outcome"]) for c in m["cells"]] == [
        ("m.run01", "failed"),
        ("m.run02", "complete"),
    ]
    assert finished_cells(m) == {"m.run01", "m.run02"}
    assert resumed(m, 3)["harness"]["runs_per_model"] == 3
    assert resumed(resumed(m, 3), 1)["harness"]["runs_per_model"] == 3


# --- saturation -------------------------------------------------------------------------


def test_nearest_rank_percentiles() -> None:
    assert nearest_rank([7.0], 50) == 7.0
    assert (nearest_rank([1.0, 2.0], 50), nearest_rank([1.0, 2.0], 90)) == (1.0, 2.0)
    assert nearest_rank([float(v) for v in range(1, 11)], 90) == 9.0
    assert nearest_rank([], 50) is None


def test_saturation_is_measured_over_the_steady_state() -> None:
    # 100 completions, one every 0.1 s from t=10.1; the first and last tenth are left out.
    seen = [
        Seen(at=10 + i / 10, elapsed=0.5, input_tokens=100, output_tokens=40) for i in range(1, 101)
    ]
    gateway = {"completions": 100, "requests": 103, "outcomes": {"ok": 101, "http_429": 2},
               "inflight_limit": 12, "inflight_adaptive": True}  # fmt: skip
    block = saturation(seen, gateway, wall_seconds=3600, segments_written=50, price=Price(2.0, 4))
    assert block is not None
    assert block["completions_per_second"] == pytest.approx(10.0)
    assert block["output_tokens_per_second"] == pytest.approx(400.0)
    assert block["latency_seconds"] == {"p50": 0.5, "p90": 0.5, "p99": 0.5}
    assert (block["inflight_settled"], block["inflight_adaptive"]) == (12, True)
    assert (block["http_429"], block["retries"]) == (2, 3)
    # 4 GPUs × 2 USD × 1 h = 8 USD: per 1000 segments of 50, per 1M of 4000 output tokens.
    assert block["cost_per_1k_segments"] == pytest.approx(160.0)
    assert block["cost_per_1m_output_tokens"] == pytest.approx(2000.0)
    assert block["bound"] is None and block["inflight_observed_mean"] is None
    steady = {
        **gateway,
        **{"inflight_mean": 11.5, "inflight_peak": 12, "bound": "endpoint"},
        **{"bound_why": "auto held 12", "client_cpu_share": 0.1, "host_cpu_busy": 0.3},
    }
    seen_block = saturation(seen, steady, wall_seconds=1, segments_written=1, price=None) or {}
    assert (seen_block["inflight_observed_mean"], seen_block["inflight_observed_peak"]) == (
        11.5,
        12,
    )
    assert (seen_block["bound"], seen_block["client_cpu_share"]) == ("endpoint", 0.1)
    assert saturation([], None, wall_seconds=1, segments_written=0, price=None) is None
    few = saturation(seen[:3], None, wall_seconds=1, segments_written=0, price=None)
    assert few is not None and few["cost_per_1k_segments"] is None and few["http_429"] == 0
