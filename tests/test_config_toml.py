"""A TOML ``--config`` holds a whole run: every setting by name, typed, checked by the
same declarations as the flags; ``--print-config`` writes one that reads back."""

from pathlib import Path

import pytest

from taguru_ray.cli import main
from taguru_ray.cli.extract import parse_flags
from taguru_ray.errors import UsageError
from taguru_ray.settings import Settings, resolve_settings
from taguru_ray.settings.toml import render_toml
from taguru_ray.store.config_file import read_config_file

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
ENV = {"TAGURU_EXTRACT_URL": "http://127.0.0.1:9/v1", "TAGURU_EXTRACT_MODEL": "m"}

RUN = f"""
context = "{CONTEXT}"
out = "out"
paths = ["docs/", "more.md"]
model = "qwen"
endpoints = ["http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"]
max_inflight = 64
lossy = true
tags = ["a", "b"]

[prompt]
carryover = 0
chunk_context = "structure"

[scale]
workers = 3
"""


def resolved(path: Path, *args: str, env: dict[str, str] | None = None) -> Settings:
    flags = parse_flags(["--config", str(path), *args])
    return resolve_settings(flags, env if env is not None else {}, read_config_file)


def refused(path: Path, *args: str) -> str:
    with pytest.raises(UsageError) as caught:
        resolved(path, *args)
    return str(caught.value)


def write(tmp_path: Path, text: str, name: str = "run.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_toml_file_holds_a_whole_run_with_typed_values(tmp_path: Path) -> None:
    s = resolved(write(tmp_path, RUN))
    assert (s.source.context, s.source.out, s.source.paths) == (
        CONTEXT,
        "out",
        ("docs/", "more.md"),
    )
    assert s.transport.endpoints == ("http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1")
    assert (s.transport.model, s.transport.max_inflight, s.ladder.lossy) == ("qwen", 64, True)
    assert (s.prompt.carryover, s.prompt.chunk_context, s.scale.workers) == (0, "structure", 3)
    assert s.source.tags == ("a", "b")


def test_a_toml_file_is_known_by_its_content_too(tmp_path: Path) -> None:
    s = resolved(write(tmp_path, RUN, name="run.conf"))
    assert s.scale.workers == 3


def test_flags_and_variables_beat_the_toml_file(tmp_path: Path) -> None:
    path = write(tmp_path, RUN)
    s = resolved(
        path,
        "--workers",
        "5",
        "--out",
        "elsewhere",
        "one.md",
        env={"TAGURU_EXTRACT_MODEL": "env-model"},
    )
    assert (s.scale.workers, s.source.out, s.source.paths) == (5, "elsewhere", ("one.md",))
    assert s.transport.model == "env-model"


def test_the_key_value_file_is_still_read(tmp_path: Path) -> None:
    path = write(tmp_path, "TAGURU_RAY_WORKERS=4\nTAGURU_EXTRACT_MODEL=m\n", name="c.env")
    flags = parse_flags(["--context", CONTEXT, "--out", "o", "--config", str(path), "d"])
    s = resolve_settings(flags, {"TAGURU_EXTRACT_URL": "http://x"}, read_config_file)
    assert (s.scale.workers, s.transport.model) == (4, "m")


def test_a_value_of_the_wrong_type_is_named(tmp_path: Path) -> None:
    base = f'context = "{CONTEXT}"\nout = "o"\npaths = ["d"]\nmodel = "m"\nurl = "http://x"\n'
    cases = {
        "workers = true": "workers (in --config {p}): takes an integer, got true",
        "lossy = 1": "lossy (in --config {p}): takes true or false, got 1",
        "paths = 3": "paths (in --config {p}): takes a list of strings, got 3",
        "timeout_secs = [1]": "timeout_secs (in --config {p}): takes a number, got [1]",
        "workers = 0": "workers (in --config {p}): needs",
        'chunk_context = "sideways"': "chunk_context (in --config {p}): takes one of",
    }
    for line, message in cases.items():
        text = base.replace('paths = ["d"]\n', "") if line.startswith("paths") else base
        path = write(tmp_path, text + line + "\n")
        assert refused(path).startswith(message.format(p=path)), line


def test_an_unknown_key_is_a_usage_error_naming_the_nearest(tmp_path: Path) -> None:
    path = write(tmp_path, "max_inflght = 3\n" + RUN)
    near = "is not a setting — did you mean"
    assert refused(path) == f"--config {path}: max_inflght {near} max_inflight?"
    path = write(tmp_path, RUN.replace("[scale]\n", "[scale]\nwrokers = 2\n"))
    assert refused(path) == f"--config {path}: [scale] wrokers {near} workers?"
    path = write(tmp_path, 'TAGURU_EXTRACT_MODLE = "m"\n' + RUN)
    assert refused(path) == (
        f"--config {path}: TAGURU_EXTRACT_MODLE is not a variable taguru-ray reads — "
        "did you mean TAGURU_EXTRACT_MODEL?"
    )


def test_a_toml_file_that_does_not_parse_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "workers = \n")
    assert refused(path).startswith(f"--config {path}: not valid TOML")


def test_the_printed_config_reads_back_to_the_same_settings(tmp_path: Path) -> None:
    flags = parse_flags(
        [
            "--context",
            CONTEXT,
            "--out",
            "o",
            "--tag",
            "a",
            "--date",
            "2024-01-02",
            "--redact",
            "pii",
            "--max-inflight",
            "64",
            "--questions",
            "3",
            "--endpoint",
            "http://a/v1",
            "--endpoint",
            "http://b/v1",
            "--lossy",
            "--rpm",
            "100",
            "--price-per-hour",
            "2.5",
            "--progress",
            "lines",
            "d",
            "e",
        ]
    )
    env = {**ENV, "TAGURU_EXTRACT_API_KEY": "sk-secret", "TAGURU_EXTRACT_TIMEOUT_SECS": "7.5"}
    first = resolve_settings(flags, env, read_config_file)
    text = render_toml(first)
    assert "sk-secret" not in text
    path = write(tmp_path, text)
    again = resolved(path, env={"TAGURU_EXTRACT_API_KEY": "sk-secret"})
    assert again.model_dump(exclude={"run"}) == first.model_dump(exclude={"run"})
    assert render_toml(again) == text


def test_print_config_prints_the_toml_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    code = main(
        ["extract", "--context", CONTEXT, "--out", "o", "--workers", "3", "--print-config", "d"]
    )
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert "[scale]\nworkers = 3\n" in out
    s = resolved(write(tmp_path, out))
    assert (s.scale.workers, s.source.paths) == (3, ("d",))


def test_print_config_never_prints_a_credential_and_says_where_it_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 49 item 8: endpoint URLs were printed verbatim, credentials included. They
    are written without them (what was left out, and where to give it, in a comment);
    a value that still holds a secret after that is not written at all."""
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", "m")
    monkeypatch.setenv(
        "TAGURU_EXTRACT_URL", "https://user:Hunt3rPass@api.example.com/v1?api-key=Sekr1tKey&x=1"
    )
    secret_dir = "runs-ghp_Hb7Kq2Wz9Lm4Xr8Tn3Vp6Ys1Jd5Gc0Fa2Qe7Ru"
    endpoint = "http://bob:Pw0rd99@10.0.0.2:8000/v1?token=T0kenXyz"
    code = main(["extract", "--context", CONTEXT, "--out", secret_dir, "--print-config",
                 "--endpoint", endpoint, "d"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    for secret in ("Hunt3rPass", "Sekr1tKey", "Pw0rd99", "T0kenXyz", "Hb7Kq2Wz9Lm4"):
        assert secret not in out + err
    assert 'url = "https://api.example.com/v1?x=1"' in out
    assert "# url: written without its credentials (user:password@, ?api-key=)" in out
    assert "give them in TAGURU_EXTRACT_URL" in out
    assert 'endpoints = ["http://10.0.0.2:8000/v1"]' in out
    assert "# out: not written, as it holds a secret (github_token)" in out
    s = resolved(write(tmp_path, out), "--out", "o")  # what is written still reads back
    assert s.transport.endpoints == ("http://10.0.0.2:8000/v1",)


def test_the_readme_s_toml_example_reads_as_a_run(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    example = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    s = resolved(write(tmp_path, example), env={})
    assert (s.transport.max_inflight, s.prompt.carryover, s.source.paths) == (64, 0, ("docs/",))
