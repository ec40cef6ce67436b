"""models.json entries that start their own engine instead of naming a URL: parsed, turned
into the cell's extract flags, laned by GPU type, and their record read back — pure."""

from __future__ import annotations

import json
from typing import Any

import pytest

from taguru_ray.benchmark.cell_run import engine_ran
from taguru_ray.benchmark.child import TaskFlags, child_argv, child_env
from taguru_ray.benchmark.matrix import lanes
from taguru_ray.benchmark.models_file import ModelsError, parse_models
from taguru_ray.cli.extract import parse_flags

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"


def matrix(*entries: dict[str, Any]) -> Any:
    data = json.dumps({"taguru_benchmark_models": 1, "models": list(entries)}).encode()
    return parse_models("models.json", data, {})


VLLM_H100 = {
    "id": "qwen-h100",
    "model": "Qwen/Qwen2.5-0.5B-Instruct",
    "engine": "vllm",
    "accelerator": "H100",
    "gpus": 2,
    "replicas": 3,
    "args": "--max-model-len 8192 --enforce-eager",
}


def test_an_engine_entry_becomes_the_cells_engine_flags_and_no_url() -> None:
    [model] = matrix(VLLM_H100).models
    assert model.url is None and model.gpu == "H100" and model.gpu_count == 6
    argv = child_argv(TaskFlags(context=CONTEXT), model, "out", "side", "docs")
    flags = parse_flags(argv[argv.index("extract") + 1 :])  # extract's own parser reads them
    assert (flags["engine"], flags["engine_replicas"], flags["engine_gpus"]) == ("vllm", "3", "2")
    assert flags["engine_accelerator"] == "H100"
    assert flags["engine_args"] == "--max-model-len 8192 --enforce-eager"
    env = child_env({"TAGURU_EXTRACT_URL": "http://stray"}, TaskFlags(context=CONTEXT), model)
    assert "TAGURU_EXTRACT_URL" not in env and env["TAGURU_EXTRACT_MODEL"] == model.model
    assert model.lock_entry()["engine"] == "vllm" and model.lock_entry()["url"] is None


def test_a_command_engine_passes_its_template_whole() -> None:
    entry = {"id": "llama", "model": "q4", "engine": "command", "gpus": 0,
             "command": "llama-server --port {port} -m {model}"}  # fmt: skip
    [model] = matrix(entry).models
    argv = child_argv(TaskFlags(context=CONTEXT), model, "out", "side", "docs")
    assert parse_flags(argv[argv.index("extract") + 1 :])["engine_command"] == entry["command"]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"url": "http://h/v1"}, "names both an engine and a url"),
        ({"engine": "tgi"}, "must be one of vllm, sglang, simulate, command"),
        ({"accelerator": "H 100"}, "not a Ray accelerator type"),
        ({"gpus": -1}, "gpus must be a whole number"),
        ({"args": "--x 'open"}, "close the quote"),
        ({"engine": "command"}, "engine command needs command"),
        ({"engine": None}, "is an engine's setting — add engine"),
    ],
)
def test_a_bad_engine_entry_is_refused_before_any_cell(change: dict[str, Any], says: str) -> None:
    entry = {**VLLM_H100, **change}
    if entry["engine"] is None:
        del entry["engine"]
        entry["url"] = "http://h/v1"
    with pytest.raises(ModelsError, match=says):
        matrix(entry)


def test_engines_on_different_gpu_types_run_in_lanes_of_their_own() -> None:
    h100 = VLLM_H100
    l4 = {**VLLM_H100, "id": "qwen-l4", "accelerator": "L4"}
    h100_again = {**VLLM_H100, "id": "sglang-h100", "engine": "sglang"}
    anywhere = {**VLLM_H100, "id": "any"}
    del anywhere["accelerator"]
    hosted = {"id": "hosted", "model": "m", "url": "http://api/v1"}
    found = lanes(matrix(h100, l4, h100_again, hosted).models)
    assert [[m.id for m in lane] for lane in found] == [
        ["qwen-h100", "sglang-h100"],
        ["qwen-l4"],
        ["hosted"],
    ]
    found = lanes(matrix(h100, l4, anywhere).models)
    assert [[m.id for m in lane] for lane in found] == [["qwen-h100", "qwen-l4", "any"]]


def test_the_cells_record_names_what_the_nodes_said_they_are() -> None:
    record = {
        "type": "engine", "engine": "vllm", "version": "0.9.1", "gpus": 2, "replicas": 3,
        "accelerator": "H100", "accelerators": ["A100-80G"], "lost": 1, "starts": [],
    }  # fmt: skip
    assert engine_ran(record) == {
        "engine": "vllm", "version": "0.9.1", "accelerator": "A100-80G", "gpus": 2,
        "replicas": 3, "lost": 1,
    }  # fmt: skip
    assert engine_ran(None) is None


def test_the_gpu_check_reads_its_run_and_the_gpus_memory() -> None:
    from benchmarks.gpu_check import smi_sample, summarise

    samples = [
        {**sample, "at": at}
        for at, line in enumerate(
            ["0, NVIDIA H100 80GB HBM3, 1200, 81559", "0, NVIDIA H100 80GB HBM3, 71002, 81559"]
        )
        if (sample := smi_sample(line)) is not None
    ]
    assert smi_sample("no GPU here") is None
    records = [
        {"type": "engine", "engine": "vllm", "version": "0.9.1", "model": "Qwen/Qwen2.5-0.5B",
         "gpus": 1, "accelerators": ["H100"], "replicas": 1, "starts": [], "lost": 0},
        {"type": "gateway", "completions": 12, "output_tokens": 6000, "outcomes": {"ok": 12},
         "inflight_mean": 5.5, "bound": "corpus", "bound_why": "every segment was in flight"},
    ]  # fmt: skip
    result = summarise(records, samples, 4.0, 0, ["a", "b"])
    assert result["engine"] == {
        "engine": "vllm", "version": "0.9.1", "model": "Qwen/Qwen2.5-0.5B", "gpus": 1,
        "accelerators": ["H100"],
    }  # fmt: skip
    assert result["gpu"] == {
        "name": "NVIDIA H100 80GB HBM3", "peak_used_mib": 71002, "total_mib": 81559, "samples": 2,
    }  # fmt: skip
    assert (result["completions_per_s"], result["output_tokens_per_s"]) == (3.0, 1500.0)
    assert result["bound"] == "corpus" and result["exit_code"] == 0
