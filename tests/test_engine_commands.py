"""What each engine's replica runs, as a GPU host will run it (contract/engines.py), and
the settings that go with --engine — pure, with literals."""

from __future__ import annotations

from typing import Any

import pytest

from taguru_ray.contract.engines import KINDS, ServerSpec, split_args, split_template
from taguru_ray.engine.replicas.words import (
    Ledger,
    SlotView,
    Start,
    not_started_line,
    progress_words,
)
from taguru_ray.errors import UsageError
from taguru_ray.settings.resolve import resolve_settings

PY = "/opt/venv/bin/python3"
CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"


def test_vllm_is_started_by_its_own_cli_with_tensor_parallel_over_the_replicas_gpus() -> None:
    spec = ServerSpec("vllm", "Qwen/Qwen2.5-0.5B-Instruct", 2, ("--max-model-len", "8192"))
    assert spec.argv(PY, "10.0.0.7", 8001) == [
        "vllm", "serve", "Qwen/Qwen2.5-0.5B-Instruct",
        "--host", "10.0.0.7", "--port", "8001",
        "--tensor-parallel-size", "2",
        "--max-model-len", "8192",
    ]  # fmt: skip
    assert KINDS["vllm"].health == "/health" and KINDS["vllm"].versions == ("/version",)


def test_sglang_is_a_module_of_the_replicas_own_interpreter() -> None:
    spec = ServerSpec("sglang", "meta-llama/Llama-3.1-8B-Instruct", 4)
    assert spec.argv(PY, "10.0.0.7", 30000) == [
        PY, "-m", "sglang.launch_server",
        "--model-path", "meta-llama/Llama-3.1-8B-Instruct",
        "--host", "10.0.0.7", "--port", "30000",
        "--tp-size", "4",
    ]  # fmt: skip
    assert KINDS["sglang"].versions[0] == "/get_server_info"


def test_a_cpu_engine_gets_no_tensor_parallel_flag() -> None:
    assert "--tensor-parallel-size" not in ServerSpec("vllm", "m", 0).argv(PY, "h", 1)
    assert "--tp-size" not in ServerSpec("sglang", "m", 0).argv(PY, "h", 1)


def test_the_simulator_serves_the_model_name_alone_and_its_args_come_last() -> None:
    spec = ServerSpec("simulate", "taguru-sim", 1, ("--latency-ms", "300"))
    assert spec.argv(PY, "127.0.0.1", 9) == [
        PY, "-m", "taguru_ray", "simulate", "--host", "127.0.0.1", "--port", "9",
        "--served-model", "taguru-sim", "--latency-ms", "300",
    ]  # fmt: skip


def test_a_command_template_is_filled_word_by_word() -> None:
    template = split_template("llama-server -m '{model}' --host {host} --port {port} -c 8192")
    spec = ServerSpec("command", "/models/q 4.gguf", 1, (), template)
    assert spec.argv(PY, "10.0.0.7", 8080) == [
        "llama-server", "-m", "/models/q 4.gguf", "--host", "10.0.0.7", "--port", "8080",
        "-c", "8192",
    ]  # fmt: skip
    assert spec.program == "llama-server" and KINDS["command"].health == "/v1/models"


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("my-server --host {host}", "has no {port}"),
        ("my-server --port {port} --gpu {gpu}", "{gpu} is not a placeholder"),
        ("my-server --port {port} {", "write a literal brace"),
        ("my-server --port '{port}", "close the quote"),
        ("   ", "is empty"),
    ],
)
def test_a_bad_template_is_refused_with_the_fix(template: str, says: str) -> None:
    with pytest.raises(ValueError, match=says.replace("{", r"\{").replace("}", r"\}")):
        split_template(template)


def test_engine_args_split_as_a_shell_splits_them() -> None:
    assert split_args("--max-model-len 8192 --served-model-name 'my model'") == (
        "--max-model-len", "8192", "--served-model-name", "my model",
    )  # fmt: skip


def settings(**flags: Any) -> Any:
    flags = {"paths": ["docs"], "out": "out", "context": CONTEXT, **flags}
    return resolve_settings(flags, {"TAGURU_EXTRACT_MODEL": "m"}, lambda path: {})


def test_engine_replicas_are_the_runs_endpoints_and_set_its_window() -> None:
    chosen = settings(engine="vllm", engine_replicas="3", engine_gpus="2")
    assert chosen.serving.engine == "vllm" and chosen.transport.endpoints == ()
    assert chosen.endpoint_count == 3
    assert chosen.inflight_ceiling == 3 * 256 and chosen.window == 3 * 256


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        ({"engine_replicas": "2"}, "--engine-replicas needs --engine"),
        ({"engine_accelerator": "H100"}, "--engine-accelerator needs --engine"),
        ({"engine": "command"}, "--engine command needs --engine-command"),
        (
            {"engine": "vllm", "engine_command": "x --port {port}"},
            "--engine-command is --engine command's",
        ),
        ({"engine": "vllm", "endpoints": ["http://h/v1"]}, "give one of them"),
        ({"engine": "vllm", "batch_api": "openai"}, "--batch-api sends"),
        ({"engine": "vllm", "replay": "strict"}, "--replay strict"),
        ({"engine": "vllm", "engine_accelerator": "H 100"}, "Ray accelerator type"),
        ({"engine": "tgi"}, "takes one of vllm, sglang, simulate, command"),
    ],
)
def test_engine_settings_that_do_not_go_together_are_one_usage_line(
    flags: dict[str, Any], says: str
) -> None:
    with pytest.raises(UsageError, match=says):
        settings(**flags)


def test_an_exported_url_and_an_engine_are_named_together() -> None:
    flags = {"paths": ["d"], "out": "o", "context": CONTEXT, "engine": "simulate"}
    environ = {"TAGURU_EXTRACT_MODEL": "m", "TAGURU_EXTRACT_URL": "http://h:8000/v1"}
    with pytest.raises(UsageError, match="TAGURU_EXTRACT_URL names an endpoint — unset it"):
        resolve_settings(flags, environ, lambda path: {})


def test_a_failed_start_is_one_line_ending_in_its_logs_tail() -> None:
    spec = ServerSpec("vllm", "m", 1)
    line = not_started_line(
        spec, 1, "vllm exited with 1 before /health answered", ["a", "OSError: [Errno 98]"], "n:l"
    )
    assert "\n" not in line
    assert line == (
        "--engine vllm: replica 1 could not start: vllm exited with 1 before /health answered"
        " — last lines of its log (n:l): a ⏎ OSError: [Errno 98]"
    )


def test_the_progress_part_names_the_first_replica_not_up() -> None:
    views = [SlotView(0, "up", 90), SlotView(1, "placing", 42.4), SlotView(2, "starting", 3, "n")]
    assert progress_words(views, 1, "A10G") == (
        "engine 1/3 up (replica 1 waits 42 s for 1 GPU of type A10G)"
    )
    assert progress_words([SlotView(0, "up", 1)], 1, None) is None


def test_the_ledger_says_versions_and_types_read_from_the_nodes() -> None:
    ledger = Ledger(
        [Start(0, 1, "n1", "L4", "0.9.1", 40.0), Start(1, 1, "n2", "A10G", "0.9.1", 50)]
    )
    ledger.lost = 1
    assert ledger.summary(ServerSpec("vllm", "m", 1), 2) == (
        "engine: vllm 0.9.1, 2 replica(s) of m on A10G, L4 (1 GPU each); 1 lost and replaced"
    )


def test_a_ray_of_the_runs_own_with_too_few_gpus_is_one_line_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from taguru_ray.engine.replicas import fleet

    resources = {"CPU": 8.0, "GPU": 1.0, "accelerator_type:L4": 1.0}
    monkeypatch.setattr(fleet.ray, "cluster_resources", lambda: resources)

    def local(**flags: str) -> fleet.Fleet:
        made = fleet.Fleet(settings(engine="vllm", **flags), "r", print)
        made.own_ray = True  # a Ray the run started: nothing will add a GPU
        return made

    with pytest.raises(fleet.EngineFailed) as refused:
        local(engine_replicas="2")._check_local()
    assert str(refused.value) == (
        "--engine-gpus 1: 2 replica(s) need 1 GPU each and this machine's Ray has 1 GPU(s) of "
        "type L4 — join a cluster with GPUs (--address), give fewer --engine-replicas, or "
        "--engine-gpus 0 to run the engine on CPU"
    )
    local(engine_accelerator="L4")._check_local()
    with pytest.raises(fleet.EngineFailed, match="of type H100 each"):
        local(engine_accelerator="H100")._check_local()
    # A Ray the run joined (--address, or one its caller started) may grow: no refusal.
    fleet.Fleet(settings(engine="vllm", engine_replicas="9"), "r", print)._check_local()
