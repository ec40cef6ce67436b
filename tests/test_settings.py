import re
from pathlib import Path

import pytest

from taguru_ray.cli.extract import parse_flags
from taguru_ray.contract.settings import values
from taguru_ray.contract.settings.fingerprint import compute_declarations
from taguru_ray.errors import UsageError
from taguru_ray.pipeline.run_inputs import InputDigests
from taguru_ray.settings import (
    PROMPT_VERSION,
    Settings,
    checkpoint_fingerprint,
    compute_inputs,
    declarations,
    resolve_settings,
    table,
)
from taguru_ray.store.config_file import read_config_file

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
NONE = InputDigests()  # no --vocabulary/--schema/--redact
ENV = {"TAGURU_EXTRACT_URL": "http://127.0.0.1:9/v1", "TAGURU_EXTRACT_MODEL": "m"}


def settings(*args: str, env: dict[str, str] | None = None):
    flags = parse_flags(["--context", CONTEXT, "--out", "out", *args, "docs"])
    return resolve_settings(flags, {**ENV, **(env or {})}, read_config_file)


def usage(*args: str, env: dict[str, str] | None = None) -> str:
    with pytest.raises(UsageError) as caught:
        settings(*args, env=env)
    return str(caught.value)


def test_defaults_follow_the_seed() -> None:
    s = settings()
    assert (
        s.scale.parallel,
        s.input.chunk_bytes,
        s.ladder.max_attempts,
        s.transport.timeout_secs,
    ) == (1, 24576, 2, 300.0)
    assert s.records.trace_attempts is True and s.prompt.carryover == 32  # seed 002's default


def test_the_default_window_follows_the_inflight_ceiling() -> None:
    """ADR 0047: unpinned, W is the in-flight ceiling, so a default run can fill it."""
    s = settings()
    assert (s.transport.max_inflight, s.inflight_ceiling, s.window) == ("auto", 256, 256)
    assert settings("--max-inflight", "64").window == 64
    assert settings("--max-inflight", "64", "--segment-window", "8").window == 8
    assert settings("--segment-window", "1").window == 1  # the reference's hand-off
    two = settings("--endpoint", "http://127.0.0.1:9/v1", "--endpoint", "http://127.0.0.1:8/v1")
    assert (two.inflight_ceiling, two.window) == (512, 512)
    assert settings(env={"TAGURU_RAY_SEGMENT_WINDOW": "4"}).window == 4


def test_the_window_is_no_compute_input() -> None:
    """A rerun at another window (the new default among them) skips what is unchanged."""
    narrow = compute_inputs(settings("--segment-window", "8"), NONE, "ab" * 32, None, "a.jsonl")
    wide = compute_inputs(settings(), NONE, "ab" * 32, None, "a.jsonl")
    assert narrow == wide


def test_flag_beats_environment_beats_config(tmp_path: Path) -> None:
    config = tmp_path / "extract.env"
    config.write_text(
        "# comment\nexport TAGURU_EXTRACT_PARALLEL=2\nTAGURU_EXTRACT_CHUNK_BYTES='4096'\n"
    )
    s = settings("--config", str(config))
    assert (s.scale.parallel, s.input.chunk_bytes) == (2, 4096)
    s = settings("--config", str(config), env={"TAGURU_EXTRACT_PARALLEL": "3"})
    assert s.scale.parallel == 3
    s = settings("--config", str(config), "--parallel", "5", env={"TAGURU_EXTRACT_PARALLEL": "3"})
    assert s.scale.parallel == 5


def test_config_supplies_the_endpoint_and_key_without_them_in_the_environment(
    tmp_path: Path,
) -> None:
    config = tmp_path / "c.env"
    config.write_text(
        "TAGURU_EXTRACT_URL=http://x/v1\nTAGURU_EXTRACT_MODEL=cfg\nTAGURU_EXTRACT_API_KEY=sk-1\n"
    )
    flags = parse_flags(["--context", CONTEXT, "--out", "o", "--config", str(config), "d"])
    s = resolve_settings(flags, {}, read_config_file)
    assert (s.transport.url, s.transport.model, s.transport.api_key) == (
        "http://x/v1",
        "cfg",
        "sk-1",
    )
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
    assert settings("--lossy").ladder.lossy is True
    assert settings("--chunk-context", "structure").prompt.chunk_context == "structure"
    assert (
        settings(env={"TAGURU_EXTRACT_CHUNK_CONTEXT": "overview"}).prompt.chunk_context
        == "overview"
    )
    assert "--chunk-context: takes" in usage("--chunk-context", "sideways")
    assert settings("--structured-output", "json-schema").ladder.structured_output == "json-schema"


def test_steering_flags_that_need_another_are_usage_errors() -> None:
    assert "--redact-rules needs --redact" in usage("--redact-rules", "rules.tsv")
    assert settings("--redact", "--redact-rules", "rules.tsv").input.redact == "both"
    assert settings("--redact", "pii").input.redact == "pii"
    assert settings(env={"TAGURU_EXTRACT_REDACT": "secrets"}).input.redact == "secrets"
    assert settings("--candidates", "--coverage").prompt.candidates is True
    assert "--chunk-context ingested needs --vocabulary" in usage("--chunk-context", "ingested")


def test_a_flag_given_twice_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_flags(["--parallel", "2", "--parallel", "3", "docs"])
    assert "--parallel given twice" in capsys.readouterr().err


def test_context_must_be_a_lowercase_uuid() -> None:
    with pytest.raises(UsageError, match="lowercase"):
        flags = parse_flags(["--context", CONTEXT.upper(), "--out", "o", "d"])
        resolve_settings(flags, ENV, read_config_file)
    with pytest.raises(UsageError, match="--context ID is required"):
        resolve_settings(parse_flags(["--out", "o", "d"]), ENV, read_config_file)


def test_source_flags_are_checked() -> None:
    assert "--description needs --name" in usage("--description", "d")
    assert "--date/--tag ride the passage line" in usage("--no-passage", "--tag", "t")
    assert "--source-id must not be empty" in usage("--source-id", "  ")
    assert "1024-byte cap" in usage("--source-id", "x" * 1025)
    assert "--date" in usage("--date", "2026-02-30")


def test_missing_endpoint_variables_are_named() -> None:
    flags = parse_flags(["--context", CONTEXT, "--out", "o", "d"])
    with pytest.raises(UsageError, match="TAGURU_EXTRACT_MODEL is not set"):
        resolve_settings(flags, {"TAGURU_EXTRACT_URL": "http://x"}, read_config_file)
    with pytest.raises(UsageError, match="TAGURU_EXTRACT_URL is not set"):
        resolve_settings(flags, {"TAGURU_EXTRACT_MODEL": "m"}, read_config_file)


def test_dates_parse_as_utc_midnight_or_epoch_seconds() -> None:
    assert values.date("1970-01-02") == 86400
    assert values.date("1700000000") == 1700000000
    with pytest.raises(ValueError):
        values.date("0")


def test_tags_are_deduplicated_in_order() -> None:
    assert settings("--tag", "b", "--tag", "a", "--tag", "b").source.tags == ("b", "a")


def test_compute_inputs_default_fields_match_an_all_defaults_entry() -> None:
    s = settings()
    inputs = compute_inputs(s, NONE, "abc", "docs/a.md", "docs__a.md-x.jsonl")
    assert inputs["prompt_version"] == PROMPT_VERSION
    assert (inputs["chunk_bytes"], inputs["structured_output"], inputs["source_id"]) == ("", "", "")
    assert next(iter(inputs)) == "sha256" and list(inputs)[-1] == "output"
    fingerprint = checkpoint_fingerprint(s, NONE, "abc")
    assert "output" not in fingerprint and "source_id" not in fingerprint
    assert settings("--chunk-bytes", "4096").input.chunk_bytes == 4096
    assert (
        compute_inputs(settings("--chunk-bytes", "4096"), NONE, "abc", "x", "y")["chunk_bytes"]
        == "4096"
    )


def test_name_and_description_fold_into_the_description_input() -> None:
    assert compute_inputs(settings(), NONE, "a", "x", "y")["description"] == ""
    folded = compute_inputs(settings("--name", "sake", "--description", "d"), NONE, "a", "x", "y")
    assert folded["description"] == '["sake", "d"]'


def test_a_store_that_does_not_outlive_the_process_is_refused() -> None:
    flags = parse_flags(["--context", CONTEXT, "--out", "memory://x", "docs"])
    with pytest.raises(UsageError, match="memory://x: a memory:// store ends with this process"):
        resolve_settings(flags, ENV, read_config_file)
    assert "--diagnostics-out memory://d.jsonl: a memory://" in usage(
        "--diagnostics-out", "memory://d.jsonl"
    )


def test_a_corrective_turn_replays_at_most_256_kib_of_a_bad_answer_by_default() -> None:
    assert settings().ladder.corrective_context_bytes == 256 * 1024
    assert (
        settings(
            env={"TAGURU_EXTRACT_CORRECTIVE_CONTEXT_BYTES": "0"}
        ).ladder.corrective_context_bytes
        == 0
    )


def test_an_api_key_is_trimmed_and_one_with_a_line_break_inside_is_refused() -> None:
    assert settings(env={"TAGURU_EXTRACT_API_KEY": " sk-abc\n"}).transport.api_key == "sk-abc"
    refused = usage(env={"TAGURU_EXTRACT_API_KEY": "sk-abc\r\nX-Evil: 1"})
    assert refused.startswith("TAGURU_EXTRACT_API_KEY: holds a line break")
    assert "sk-abc" not in refused


def test_a_misspelled_variable_in_the_environment_is_a_warning_naming_the_nearest() -> None:
    s = settings(
        env={
            "TAGURU_RAY_WORKRS": "3",
            "TAGURU_EXTRAC_URL": "http://x",
            "TAGURU_DATA_DIR": "/srv",
            "TAGURU_RAY_DEBUG": "1",
            "TAGURU_RAY_QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ": "1",
        }
    )
    assert s.notes == (
        "TAGURU_EXTRAC_URL (in the environment) is not a variable taguru-ray reads — did you "
        "mean TAGURU_EXTRACT_URL? (ignored)",
        "TAGURU_RAY_QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ (in the environment) is not a variable "
        "taguru-ray reads — it is ignored",
        "TAGURU_RAY_WORKRS (in the environment) is not a variable taguru-ray reads — did you "
        "mean TAGURU_RAY_WORKERS? (ignored)",
    )


def test_a_misspelled_variable_in_the_config_file_is_a_usage_error(tmp_path: Path) -> None:
    config = tmp_path / "extract.env"
    config.write_text("TAGURU_EXTRACT_REDACTT=1\nTAGURU_DATA_DIR=/srv\n")
    assert usage("--config", str(config)) == (
        f"--config {config}: TAGURU_EXTRACT_REDACTT is not a variable taguru-ray reads — "
        "did you mean TAGURU_EXTRACT_REDACT?"
    )


# --- one declaration per setting ---------------------------------------------------------


def test_every_setting_and_every_flag_has_help_text() -> None:
    from taguru_ray.cli.extract import build_parser

    assert all(d.knob.help.strip() for d in declarations())
    for action in build_parser()._actions:
        assert action.help, action.option_strings or action.dest


def test_the_readme_table_is_the_declarations() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    start = readme.index(table.BEGIN)
    end = readme.index(table.END) + len(table.END) + 1
    assert readme[start:end] == table.render(), "run: python -m taguru_ray.settings.table"


def test_every_manifest_field_comes_from_one_declaration_or_the_segment() -> None:
    from taguru_ray.contract.manifest_entry import MANIFEST_FIELDS

    declared = set(compute_declarations())
    # `converter` is the segment's own: a document's converter and version (ADR 0078).
    assert declared | {"sha256", "prompt_version", "converter", "output"} == set(MANIFEST_FIELDS)


def test_each_variable_is_declared_once_and_every_one_read_is_declared() -> None:
    variables = [d.knob.env for d in declarations() if d.knob.env]
    assert len(variables) == len(set(variables))
    flags = [d.knob.flag for d in declarations() if d.knob.flag]
    assert len(flags) == len(set(flags))
    package = Path(__file__).resolve().parents[1] / "taguru_ray"
    quoted = set()
    for path in package.rglob("*.py"):
        quoted |= set(re.findall(r'"((?:TAGURU|RAY)_[A-Z_]*[A-Z])"', path.read_text()))
    # A Taguru server's and client's own variables are declared apart, once.
    from taguru_ray.contract.cli_variables import CLI_VARIABLES
    from taguru_ray.contract.ray_variables import RAY_VARIABLES
    from taguru_ray.contract.server_variables import SERVER_VARIABLES

    declared = set(variables) | set(SERVER_VARIABLES) | set(RAY_VARIABLES) | set(CLI_VARIABLES)
    assert quoted - {"TAGURU_EXTRACT_", "TAGURU_RAY_"} <= declared


def test_the_lease_and_progress_periods_are_settings() -> None:
    s = settings()
    assert (s.scale.lease_seconds, s.records.progress_seconds) == (60, None)
    s = settings(env={"TAGURU_RAY_LEASE_SECONDS": "2.5", "TAGURU_RAY_PROGRESS_SECONDS": "0.5"})
    assert (s.scale.lease_seconds, s.records.progress_seconds) == (2.5, 0.5)
    for bad in ("0", "-1", "soon", "nan", "inf"):
        assert usage(env={"TAGURU_RAY_LEASE_SECONDS": bad}).startswith(
            "TAGURU_RAY_LEASE_SECONDS: needs a positive number of seconds"
        )
    assert usage(env={"TAGURU_RAY_PROGRESS_SECONDS": "x"}).startswith(
        "TAGURU_RAY_PROGRESS_SECONDS: needs a positive"
    )


def test_secrets_stay_out_of_every_rendering_of_the_settings() -> None:
    s = settings(env={"TAGURU_EXTRACT_API_KEY": "sk-secret", "TAGURU_EXTRACT_REDACT_KEY": "pass"})
    assert (s.transport.api_key, s.input.redact_key) == ("sk-secret", "pass")
    for text in (repr(s), str(s), repr(s.transport), repr(s.input)):
        assert "sk-secret" not in text and "pass" not in text.replace("passage", "")


def test_a_setting_given_by_its_flat_name_lands_in_its_group() -> None:
    s = Settings.of(paths=("d",), out="o", context=CONTEXT, model="m", carryover=0, workers=3)
    assert (s.prompt.carryover, s.scale.workers, s.transport.model) == (0, 3, "m")
    with pytest.raises(ValueError):
        Settings.of(paths=("d",), out="o", context=CONTEXT, model="m", carryovr=0)


def test_optional_value_flags_take_only_their_words() -> None:
    flags = parse_flags(["--redact", "docs", "--progress", "lines", "more"])
    assert (flags["redact"], flags["progress"], flags["paths"]) == (
        "both",
        "lines",
        ["docs", "more"],
    )
    flags = parse_flags(["--progress", "--redact", "pii", "docs"])
    assert (flags["redact"], flags["progress"], flags["paths"]) == ("pii", "bar", ["docs"])
    assert parse_flags(["--no-progress", "d"])["progress"] == "off"


def test_an_optional_value_flag_never_swallows_a_path_or_a_bad_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    flags = parse_flags(["--redact", "docs/", "--progress", "notes.md"])
    assert (flags["redact"], flags["progress"], flags["paths"]) == (
        "both",
        "bar",
        ["docs/", "notes.md"],
    )
    assert parse_flags(["--redact", "PII", "d"])["redact"] == "pii"
    for argv, line in (
        (
            ["--progress", "line", "d"],
            "--progress line: not one of auto, bar, lines, off — did "
            "you mean --progress lines? (a segment named line reads as ./line)",
        ),
        (
            ["--redact", "pi", "d"],
            "--redact pi: not one of secrets, pii — did you mean "
            "--redact pii? (a segment named pi reads as ./pi)",
        ),
    ):
        with pytest.raises(SystemExit) as exit_:
            parse_flags(argv)
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert err == f"taguru: extract: {line} — try 'taguru-ray extract --help'\n"
    # A folder that is there is a path, however near a mode its name is.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "line").mkdir()
    assert parse_flags(["--progress", "line"])["paths"] == ["line"]
    # Given with =, a value that is no mode is refused by name, never taken as a path.
    assert usage("--redact=docs/").startswith("--redact: takes 1/true")
    assert usage("--progress=docs/").startswith("--progress: takes auto, bar, lines or off")
