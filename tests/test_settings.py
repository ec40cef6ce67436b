from pathlib import Path

import pytest

from taguru_ray.cli.extract import parse_flags
from taguru_ray.errors import UsageError
from taguru_ray.settings import (
    PROMPT_VERSION,
    checkpoint_fingerprint,
    compute_inputs,
    parse_date,
    resolve_settings,
)

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
ENV = {"TAGURU_EXTRACT_URL": "http://127.0.0.1:9/v1", "TAGURU_EXTRACT_MODEL": "m"}


def settings(*args: str, env: dict[str, str] | None = None):
    flags = parse_flags(["--context", CONTEXT, "--out", "out", *args, "docs"])
    return resolve_settings(flags, {**ENV, **(env or {})})


def usage(*args: str, env: dict[str, str] | None = None) -> str:
    with pytest.raises(UsageError) as caught:
        settings(*args, env=env)
    return str(caught.value)


def test_defaults_follow_the_seed() -> None:
    s = settings()
    assert (s.parallel, s.chunk_bytes, s.max_attempts, s.timeout_secs) == (1, 24576, 2, 300.0)
    assert s.trace_attempts is True and s.carryover == 32  # seed 002's default


def test_flag_beats_environment_beats_config(tmp_path: Path) -> None:
    config = tmp_path / "extract.env"
    config.write_text(
        "# comment\nexport TAGURU_EXTRACT_PARALLEL=2\nTAGURU_EXTRACT_CHUNK_BYTES='4096'\n"
    )
    s = settings("--config", str(config))
    assert (s.parallel, s.chunk_bytes) == (2, 4096)
    s = settings("--config", str(config), env={"TAGURU_EXTRACT_PARALLEL": "3"})
    assert s.parallel == 3
    s = settings("--config", str(config), "--parallel", "5", env={"TAGURU_EXTRACT_PARALLEL": "3"})
    assert s.parallel == 5


def test_config_supplies_the_endpoint_and_key_without_them_in_the_environment(
    tmp_path: Path,
) -> None:
    config = tmp_path / "c.env"
    config.write_text(
        "TAGURU_EXTRACT_URL=http://x/v1\nTAGURU_EXTRACT_MODEL=cfg\nTAGURU_EXTRACT_API_KEY=sk-1\n"
    )
    flags = parse_flags(["--context", CONTEXT, "--out", "o", "--config", str(config), "d"])
    s = resolve_settings(flags, {})
    assert (s.url, s.model, s.api_key) == ("http://x/v1", "cfg", "sk-1")
    assert "sk-1" not in repr(s)


def test_bad_values_name_the_flag_or_the_variable() -> None:
    assert usage("--parallel", "0").startswith("--parallel: needs an integer of at least 1")
    assert usage("--chunk-bytes", "100").startswith(
        "--chunk-bytes: needs an integer of at least 512"
    )
    assert usage(env={"TAGURU_EXTRACT_MAX_ATTEMPTS": "11"}).startswith(
        "TAGURU_EXTRACT_MAX_ATTEMPTS: takes 1..=10"
    )
    assert usage(env={"TAGURU_EXTRACT_TIMEOUT_SECS": "soon"}).startswith(
        "TAGURU_EXTRACT_TIMEOUT_SECS"
    )


def test_a_bad_config_line_is_named(tmp_path: Path) -> None:
    config = tmp_path / "c.env"
    config.write_text("TAGURU_EXTRACT_PARALLEL 2\n")
    assert "line 1: expected KEY=VALUE" in usage("--config", str(config))


def test_every_seed_feature_is_accepted_by_flag_and_variable() -> None:
    assert settings("--lossy").lossy is True
    assert settings("--chunk-context", "structure").chunk_context == "structure"
    assert settings(env={"TAGURU_EXTRACT_CHUNK_CONTEXT": "overview"}).chunk_context == "overview"
    assert "--chunk-context: takes" in usage("--chunk-context", "sideways")
    assert settings("--structured-output", "json-schema").structured_output == "json-schema"


def test_steering_flags_that_need_another_are_usage_errors() -> None:
    assert "--redact-rules needs --redact" in usage("--redact-rules", "rules.tsv")
    assert settings("--redact", "--redact-rules", "rules.tsv").redact == "both"
    assert settings("--redact", "pii").redact == "pii"
    assert settings(env={"TAGURU_EXTRACT_REDACT": "secrets"}).redact == "secrets"
    assert settings("--candidates", "--coverage").candidates is True
    assert "--chunk-context ingested needs --vocabulary" in usage("--chunk-context", "ingested")


def test_a_flag_given_twice_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_flags(["--parallel", "2", "--parallel", "3", "docs"])
    assert "--parallel given twice" in capsys.readouterr().err


def test_context_must_be_a_lowercase_uuid() -> None:
    with pytest.raises(UsageError, match="lowercase"):
        resolve_settings(parse_flags(["--context", CONTEXT.upper(), "--out", "o", "d"]), ENV)
    with pytest.raises(UsageError, match="--context ID is required"):
        resolve_settings(parse_flags(["--out", "o", "d"]), ENV)


def test_source_flags_are_checked() -> None:
    assert "--description needs --name" in usage("--description", "d")
    assert "--date/--tag ride the passage line" in usage("--no-passage", "--tag", "t")
    assert "--source-id must not be empty" in usage("--source-id", "  ")
    assert "1024-byte cap" in usage("--source-id", "x" * 1025)
    assert "--date" in usage("--date", "2026-02-30")


def test_missing_endpoint_variables_are_named() -> None:
    flags = parse_flags(["--context", CONTEXT, "--out", "o", "d"])
    with pytest.raises(UsageError, match="TAGURU_EXTRACT_MODEL is not set"):
        resolve_settings(flags, {"TAGURU_EXTRACT_URL": "http://x"})
    with pytest.raises(UsageError, match="TAGURU_EXTRACT_URL is not set"):
        resolve_settings(flags, {"TAGURU_EXTRACT_MODEL": "m"})


def test_dates_parse_as_utc_midnight_or_epoch_seconds() -> None:
    assert parse_date("1970-01-02") == 86400
    assert parse_date("1700000000") == 1700000000
    with pytest.raises(ValueError):
        parse_date("0")


def test_tags_are_deduplicated_in_order() -> None:
    assert settings("--tag", "b", "--tag", "a", "--tag", "b").tags == ("b", "a")


def test_compute_inputs_default_fields_match_an_all_defaults_entry() -> None:
    s = settings()
    inputs = compute_inputs(s, "abc", "docs/a.md", "docs__a.md-x.jsonl")
    assert inputs["prompt_version"] == PROMPT_VERSION
    assert (inputs["chunk_bytes"], inputs["structured_output"], inputs["source_id"]) == ("", "", "")
    assert next(iter(inputs)) == "sha256" and list(inputs)[-1] == "output"
    fingerprint = checkpoint_fingerprint(s, "abc")
    assert "output" not in fingerprint and "source_id" not in fingerprint
    assert settings("--chunk-bytes", "4096").chunk_bytes == 4096
    assert (
        compute_inputs(settings("--chunk-bytes", "4096"), "abc", "x", "y")["chunk_bytes"] == "4096"
    )


def test_name_and_description_fold_into_the_description_input() -> None:
    assert compute_inputs(settings(), "a", "x", "y")["description"] == ""
    folded = compute_inputs(settings("--name", "sake", "--description", "d"), "a", "x", "y")
    assert folded["description"] == '["sake", "d"]'


def test_a_store_that_does_not_outlive_the_process_is_refused() -> None:
    flags = parse_flags(["--context", CONTEXT, "--out", "memory://x", "docs"])
    with pytest.raises(UsageError, match="memory://x: a memory:// store ends with this process"):
        resolve_settings(flags, ENV)
    assert "--diagnostics-out memory://d.jsonl: a memory://" in usage(
        "--diagnostics-out", "memory://d.jsonl"
    )


def test_a_corrective_turn_replays_at_most_256_kib_of_a_bad_answer_by_default() -> None:
    assert settings().corrective_context_bytes == 256 * 1024
    assert (
        settings(env={"TAGURU_EXTRACT_CORRECTIVE_CONTEXT_BYTES": "0"}).corrective_context_bytes == 0
    )


def test_an_api_key_is_trimmed_and_one_with_a_line_break_inside_is_refused() -> None:
    assert settings(env={"TAGURU_EXTRACT_API_KEY": " sk-abc\n"}).api_key == "sk-abc"
    refused = usage(env={"TAGURU_EXTRACT_API_KEY": "sk-abc\r\nX-Evil: 1"})
    assert refused.startswith("TAGURU_EXTRACT_API_KEY: holds a line break")
    assert "sk-abc" not in refused


def test_a_misspelled_variable_of_ours_is_named_with_the_nearest_one(tmp_path: Path) -> None:
    config = tmp_path / "extract.env"
    config.write_text("TAGURU_EXTRACT_REDACTT=1\nTAGURU_DATA_DIR=/srv\n")
    s = settings("--config", str(config), env={"TAGURU_RAY_WORKRS": "3"})
    assert s.notes == (
        "TAGURU_RAY_WORKRS (in the environment) is not a variable taguru-ray reads — did you "
        "mean TAGURU_RAY_WORKERS?",
        f"TAGURU_EXTRACT_REDACTT (in --config {config}) is not a variable taguru-ray reads — "
        "did you mean TAGURU_EXTRACT_REDACT?",
    )
