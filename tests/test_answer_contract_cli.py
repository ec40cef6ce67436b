"""The answer contract end to end: one path each, the real CLI against the simulator.

The simulator answers every turn from the chunk it was shown, so a script rule
limited to `times: 1` spoils the first answer and lets the corrective turn's
answer through; `times: 2` spoils both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.contract.names import output_name
from taguru_ray.contract.source_file import parse_source_file
from tests.corpora import ALPHA, BETA
from tests.support import CONTEXT, Cli, checkpoint_units

pytestmark = pytest.mark.slow


def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "alpha.md").write_text(ALPHA)
    (folder / "beta.md").write_text(BETA)
    return folder


def extract(cli: Cli, tmp_path: Path, *extra: str, **env: str) -> Any:
    docs, out = tmp_path / "docs", tmp_path / "out"
    if not docs.exists():
        corpus(tmp_path)
    return cli.extract(
        "--context",
        CONTEXT,
        "--out",
        str(out),
        "--chunk-bytes",
        "512",
        *extra,
        str(docs),
        env=cli.env(**env),
    )


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def attempts(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    source = str(tmp_path / "docs" / name)
    log = output_name(source).replace(".jsonl", ".attempts.jsonl")
    return [r for r in records(tmp_path / "out" / ".extract-trace" / log) if r["type"] == "attempt"]


def assert_every_source_file_imports(tmp_path: Path) -> int:
    """No source file taguru-ray writes is ever refused by its import parser."""
    files = list((tmp_path / "out").glob("*.jsonl"))
    for path in files:
        parse_source_file(path.read_bytes(), name=path.name)
    return len(files)


def test_bad_json_then_a_valid_correction(cli: Cli, tmp_path: Path) -> None:
    cli.simulator.set_script([{"match": "Beta Gateway", "fault": "malformed", "times": 1}])
    result = extract(cli, tmp_path)
    assert result.returncode == 0, result.stderr
    first, second = attempts(tmp_path, "beta.md")
    assert (first["state"], second["state"]) == ("stop_malformed", "stop_valid")
    assert second["corrects"] == {"run_id": first["run_id"], "attempt_seq": first["attempt_seq"]}
    assert second["messages"][2] == {"role": "assistant", "content": first["answer"]}
    assert "not the single JSON object" in second["messages"][3]["content"]
    assert assert_every_source_file_imports(tmp_path) == 2


def test_an_invalid_answer_on_every_attempt_fails_the_segment_and_a_rerun_resumes(
    cli: Cli, tmp_path: Path
) -> None:
    cli.simulator.set_script([{"match": "Alertmanager pages", "fault": "bad_weight", "times": 2}])
    failed = extract(cli, tmp_path)
    assert failed.returncode == 1
    alpha = str(tmp_path / "docs" / "alpha.md")
    line = next(x for x in failed.stderr.splitlines() if x.startswith(f"taguru: extract: {alpha}"))
    assert "the answer left 1 invalid item(s) uncorrected: associations[0].weight" in line
    assert "extracted unit(s) are checkpointed — a rerun without --force resumes from them" in line
    assert not (tmp_path / "out" / output_name(alpha)).exists()
    units = checkpoint_units(tmp_path / "out", alpha)
    chunks = len({a["chunk_index"] for a in attempts(tmp_path, "alpha.md")})
    assert 1 <= units == chunks - 1

    cli.simulator.set_script([])
    cli.simulator.reset()
    rerun = extract(cli, tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert cli.simulator.stats()["requests"] == 1  # only the chunk that failed
    assert checkpoint_units(tmp_path / "out", alpha) == 0  # settled once written
    assert assert_every_source_file_imports(tmp_path) == 2


def test_a_cut_off_answer_gets_the_shorter_please_ask(cli: Cli, tmp_path: Path) -> None:
    cli.simulator.set_script([{"match": "Beta Gateway", "fault": "truncated", "times": 1}])
    result = extract(cli, tmp_path)
    assert result.returncode == 0, result.stderr
    first, second = attempts(tmp_path, "beta.md")
    assert first["state"] == "length_limited" and first["length_limited"] is True
    assert "shorter" in second["messages"][-1]["content"]
    assert assert_every_source_file_imports(tmp_path) == 2


def test_a_refusal_is_terminal(cli: Cli, tmp_path: Path) -> None:
    cli.simulator.set_script([{"match": "Beta Gateway", "fault": "refusal"}])
    result = extract(cli, tmp_path, TAGURU_EXTRACT_MAX_ATTEMPTS="5")
    assert result.returncode == 1
    assert "the provider refused (finish_reason content_filter" in result.stderr
    assert "a policy refusal is terminal" in result.stderr
    assert [a["state"] for a in attempts(tmp_path, "beta.md")] == ["refusal"]
    assert assert_every_source_file_imports(tmp_path) == 1


def test_the_stage_2_alias_correction_is_adopted(cli: Cli, tmp_path: Path) -> None:
    cli.simulator.set_script([{"match": "Beta Gateway", "fault": "shadow_alias", "times": 1}])
    result = extract(cli, tmp_path)
    assert result.returncode == 0, result.stderr
    item, cross = attempts(tmp_path, "beta.md")
    assert (item["stage"], cross["stage"]) == ("item", "cross_chunk")
    assert "names something the associations already contain" in cross["messages"][-1]["content"]
    assert "removed" not in result.stdout
    assert assert_every_source_file_imports(tmp_path) == 2


def test_a_standing_stage_2_alias_issue_is_removed_with_accounting(
    cli: Cli, tmp_path: Path
) -> None:
    cli.simulator.set_script([{"match": "Beta Gateway", "fault": "conflict_alias", "times": 2}])
    result = extract(cli, tmp_path)
    assert result.returncode == 0, result.stderr
    beta = str(tmp_path / "docs" / "beta.md")
    assert "1 item(s) removed (mechanical validation)" in next(
        x for x in result.stdout.splitlines() if x.startswith(beta)
    )
    assert (
        f"taguru: extract: {beta}: removed: aliases[1]: conflicts with an earlier alias "
        'mapping "the same one" to '
    ) in result.stderr
    assert "still so after the corrective turn; removed" in result.stderr
    trace = records(tmp_path / "out" / ".extract-trace" / output_name(beta))
    [loss] = [r for r in trace if r["type"] == "loss"]
    assert (loss["reason"], loss["path"], loss["raw"]["alias"]) == (
        "removed",
        "aliases[1]",
        "the same one",
    )
    assert assert_every_source_file_imports(tmp_path) == 2


def test_lossy_drops_and_counts_instead_of_correcting(cli: Cli, tmp_path: Path) -> None:
    cli.simulator.set_script([{"match": "Beta Gateway", "fault": "bad_weight"}])
    result = extract(cli, tmp_path, "--lossy")
    assert result.returncode == 0, result.stderr
    assert len(attempts(tmp_path, "beta.md")) == 1
    assert "1 item(s) dropped (--lossy)" in result.stdout
    assert assert_every_source_file_imports(tmp_path) == 2


def test_mechanical_removals_are_named_counted_and_in_the_sidecar(cli: Cli, tmp_path: Path) -> None:
    sidecar = tmp_path / "diag.jsonl"
    cli.simulator.set_script(
        [
            {"match": "Beta Gateway", "fault": "fabricated"},
            {"match": "Grafana draws", "fault": "empty_field"},
        ]
    )
    result = extract(cli, tmp_path, "--diagnostics-out", str(sidecar))
    assert result.returncode == 0, result.stderr
    beta = str(tmp_path / "docs" / "beta.md")
    assert f'{beta}: removed: associations[1]: object "MongoDB" does not appear' in result.stderr
    assert ": removed: chunk " in result.stderr  # alpha has several chunks
    removed = [r for r in records(sidecar) if r["type"] == "attempt" and r.get("removed_items")]
    assert len(removed) == 2
    segments = {r["source"]: r for r in records(sidecar) if r["type"] == "segment"}
    assert segments[beta]["removed"] == 1
    assert assert_every_source_file_imports(tmp_path) == 2


def test_an_alias_rewiring_an_earlier_segments_name_is_pruned_at_any_window(
    cli: Cli, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("The Alpha Service (AS) stores records in Postgres.\n")
    (docs / "b.md").write_text("The Beta Gateway (AS) forwards requests to Nginx.\n")
    b = str(docs / "b.md")
    for window in ("1", "2"):  # b runs beside a under W = 2, and still commits after it
        out = tmp_path / f"out{window}"
        result = cli.extract(
            "--context", CONTEXT, "--out", str(out), "--segment-window", window, str(docs)
        )
        assert result.returncode == 0, result.stderr
        aliases = parse_source_file((out / output_name(b)).read_bytes()).aliases
        assert aliases == []  # b sees a's claims: AS already names the Alpha Service
        assert (
            f'{b}: removed: aliases[0]: alias "AS" already names a concept an '
            "earlier segment or the target context settled on"
        ) in result.stderr
