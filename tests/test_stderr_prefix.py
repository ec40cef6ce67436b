"""Every stderr line of every verb starts with its command's prefix (ADR 0058):
``taguru-ray: <command>: `` with the command as typed, sub-verb included, or — where the
reference's wording is the contract — ``taguru: extract: `` (extract, sessions extract)
and ``taguru: benchmark: `` (benchmark extract). Each verb is run in process with a bad
argument; a verb added to the console script must be added here."""

from pathlib import Path

import pytest

from taguru_ray.cli import VERBS, main
from taguru_ray.errors import prefix

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
GONE = "/nonexistent-taguru-ray"

BAD = [
    (["extract", "--context", "nope", "--out", "o", "d"], "taguru: extract: "),
    (["extract", "--workers", "0", "--context", CONTEXT, "--out", "o", "d"], "taguru: extract: "),
    (["extract", "--progress", "line", "d"], "taguru: extract: "),
    (["simulate", "--port", "x"], "taguru-ray: simulate: "),
    (["inspect", f"{GONE}/a.attempts.jsonl"], "taguru-ray: inspect: "),
    (["anchoring", f"{GONE}/out"], "taguru-ray: anchoring: "),
    (["metrics", f"{GONE}/out"], "taguru-ray: metrics: "),
    (["verify", f"{GONE}/out"], "taguru-ray: verify: "),
    (["report", f"{GONE}/out"], "taguru-ray: report: "),
    (
        [
            "benchmark",
            "extract",
            f"{GONE}/c",
            "--models",
            f"{GONE}/m.json",
            "--context",
            "c",
            "--out",
            "results",
        ],
        "taguru: benchmark: ",
    ),
    (
        [
            "benchmark",
            "extract",
            f"{GONE}/c",
            "--models",
            f"{GONE}/m.json",
            "--context",
            CONTEXT,
            "--out",
            "results",
        ],
        "taguru: benchmark: ",
    ),
    (["benchmark", "compare", f"{GONE}/results"], "taguru-ray: benchmark compare: "),
    (
        ["benchmark", "search", "--eval", f"{GONE}/e.jsonl", f"{GONE}/results"],
        "taguru-ray: benchmark search: ",
    ),
    (["benchmark", "nope"], "taguru-ray: benchmark: "),
    (["import", f"{GONE}/out", "--store", f"{GONE}/ctx"], "taguru-ray: import: "),
    (["search", "sake", "--store", f"{GONE}/ctx"], "taguru-ray: search: "),
    (["evaluate", "--eval", f"{GONE}/e.jsonl", "--context", "sake"], "taguru-ray: evaluate: "),
    (
        ["evaluate", "compare", f"{GONE}/a.json", f"{GONE}/b.json"],
        "taguru-ray: evaluate compare: ",
    ),
    (["serve", "--store", f"{GONE}/ctx", "--port", "x"], "taguru-ray: serve: "),
    (["sessions", "import", "--store", "s", f"{GONE}/a.jsonl"], "taguru-ray: sessions import: "),
    (["sessions", "list", "--store", f"{GONE}/s"], "taguru-ray: sessions list: "),
    (["sessions", "search", "--store", f"{GONE}/s", "q"], "taguru-ray: sessions search: "),
    (["sessions", "show", "--store", f"{GONE}/s", "cc:1#2"], "taguru-ray: sessions show: "),
    (["sessions", "recall", "--store", f"{GONE}/s", "q"], "taguru-ray: sessions recall: "),
    (["sessions", "show", "--store", "s3://b/s", "cc:1#2"], "taguru-ray: sessions show: "),
    (["sessions", "extract", "--store", f"{GONE}/s", "--context", "x"], "taguru: extract: "),
    (["sessions", "nope"], "taguru-ray: sessions: "),
    (["completion", "tcsh"], "taguru-ray: completion: "),
]


def test_every_verb_is_run_with_a_bad_argument() -> None:
    assert {argv[0] for argv, _ in BAD} == set(VERBS)


@pytest.mark.parametrize(("argv", "start"), BAD, ids=lambda v: " ".join(v)[:48])
def test_every_stderr_line_starts_with_the_command_s_prefix(
    argv: list[str],
    start: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TAGURU_EXTRACT_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", "m")
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    err = capsys.readouterr().err
    assert code != 0
    lines = err.splitlines()
    assert lines, "a failing verb says why on stderr"
    wrong = [line for line in lines if not line.startswith(start)]
    assert not wrong, wrong


def test_the_prefix_is_decided_in_one_place() -> None:
    assert prefix("extract") == "taguru: extract: "
    assert prefix("sessions extract") == "taguru: extract: "
    assert prefix("benchmark extract") == "taguru: benchmark: "
    assert prefix("sessions import") == "taguru-ray: sessions import: "
