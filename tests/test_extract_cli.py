"""`taguru-ray extract` as a user runs it: the real CLI, a real Ray runtime, the simulator.

These are the acceptance tests of the first working taguru-ray: what a run
writes, what a rerun skips, what a fault costs, and what a bad input leaves
behind (nothing changed).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.contract.names import output_name
from taguru_ray.contract.source_file import parse_source_file
from tests.support import CONTEXT, REPO, Cli

pytestmark = pytest.mark.slow

EXAMPLES = REPO / "examples" / "corpus"


def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    shutil.copytree(EXAMPLES, folder)
    return folder


def base_args(out: Path, *extra: str) -> list[str]:
    return ["--context", CONTEXT, "--out", str(out), "--chunk-bytes", "1024", *extra]


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` by relative path → sha256 of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != ".extract.lock"
    }


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_run_writes_a_source_file_per_segment_and_its_records(cli: Cli, tmp_path: Path) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    result = cli.extract(*base_args(out), str(docs))
    assert result.returncode == 0, result.stderr
    sources = sorted(
        str(docs / name)
        for name in ("01-ray-overview.md", "02-object-storage-operations.md", "03-sake-brewing.md")
    )
    *report, summary = result.stdout.splitlines()
    assert summary == "extract: 3 written, 0 unchanged, 0 failed of 3 segment(s)"
    assert [line.split(": ")[0] for line in report] == sources
    assert all(" association(s), " in line and ", passage → " in line for line in report)
    assert "extract: 3 written, 0 unchanged, 0 failed of 3 segment(s)" in result.stdout
    # No line from Ray's core worker: it logs an error for restartable actors given
    # handles or object references, which the segment workers no longer take.
    assert [line for line in result.stderr.splitlines() if "core_worker.cc" in line] == []
    manifest = json.loads((out / ".extract-manifest.json").read_text())["documents"]
    assert sorted(manifest) == sources
    for source in sources:
        name = output_name(source)
        parsed = parse_source_file((out / name).read_bytes())
        assert parsed.header.context_id == CONTEXT and parsed.header.id == source
        assert parsed.associations, source
        trace = lines(out / ".extract-trace" / name)
        assert trace[0]["type"] == "segment" and trace[0]["source"] == source
        attempts = lines(out / ".extract-trace" / name.replace(".jsonl", ".attempts.jsonl"))
        assert [r["type"] for r in attempts[:3]] == ["segment", "settings", "system"]
        assert manifest[source]["output"] == name
    assert not list((out / ".extract-checkpoints").iterdir())  # deleted on success
    long = lines(out / ".extract-trace" / output_name(sources[1]))
    assert long[0]["chunk_total"] > 1


def test_a_rerun_skips_everything_and_an_edit_re_extracts_only_that_segment(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    assert cli.extract(*base_args(out), str(docs)).returncode == 0
    cli.simulator.reset()
    rerun = cli.extract(*base_args(out), str(docs))
    assert rerun.returncode == 0
    assert cli.simulator.stats()["requests"] == 0
    assert rerun.stdout.count("unchanged, skipped (--force re-extracts)") == 3
    assert "extract: 0 written, 3 unchanged, 0 failed of 3 segment(s)" in rerun.stdout

    edited = docs / "01-ray-overview.md"
    edited.write_text(edited.read_text() + "\nRay Tune runs hyperparameter searches.\n")
    third = cli.extract(*base_args(out), str(docs))
    assert third.returncode == 0
    assert cli.simulator.stats()["requests"] == 1  # one chunk, one completion
    assert "extract: 1 written, 2 unchanged, 0 failed of 3 segment(s)" in third.stdout
    parsed = parse_source_file((out / output_name(str(edited))).read_bytes())
    assert parsed.passage is not None and "Ray Tune" in parsed.passage.text


def normalised(path: Path) -> list[dict[str, Any]]:
    """A trace with the run's identity (run id, completion ids, --out) taken out."""
    records = lines(path)
    for record in records:
        record.pop("run_id", None)
        record.pop("batch_path", None)
        if record.get("attempt"):
            record["attempt"] = "…"
    return records


def test_parallel_one_and_four_write_identical_files_and_traces(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path)
    outs = []
    for parallel in ("1", "4"):
        out = tmp_path / f"out{parallel}"
        result = cli.extract(
            *base_args(out, "--parallel", parallel, "--segment-window", "2"), str(docs)
        )
        assert result.returncode == 0, result.stderr
        outs.append(out)
    names = sorted(p.name for p in outs[0].glob("*.jsonl"))
    assert names == sorted(p.name for p in outs[1].glob("*.jsonl")) and len(names) == 3
    for name in names:
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()
        trace = Path(".extract-trace") / name
        assert normalised(outs[0] / trace) == normalised(outs[1] / trace)


def test_429_500_and_a_stall_each_recover_within_the_retry_budget(cli: Cli, tmp_path: Path) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    cli.simulator.set_script(
        [
            {
                "match": "Ray is an open source framework",
                "fault": "429",
                "times": 1,
                "retry_after": 1,
            },
            {"match": "日本酒は米と米麹", "fault": "500", "times": 1},
            {
                "match": "This guide walks through",
                "fault": "stall",
                "times": 1,
                "stall_seconds": 30,
            },
        ]
    )
    result = cli.extract(*base_args(out), str(docs), env=cli.env(TAGURU_EXTRACT_TIMEOUT_SECS="2"))
    assert result.returncode == 0, result.stderr
    assert "extract: 3 written" in result.stdout
    by_outcome = cli.simulator.stats()["by_outcome"]
    assert by_outcome["429"] == 1 and by_outcome["500"] == 1 and by_outcome["stall"] == 1
    retried = []
    for log in (out / ".extract-trace").glob("*.attempts.jsonl"):
        retried += [
            r["transport_retries"]
            for r in lines(log)
            if r["type"] == "attempt" and r["transport_retries"]
        ]
    assert sorted(retried) == [1, 1, 1]


def test_past_the_budget_the_segment_fails_the_rest_finish_and_a_rerun_completes(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    cli.simulator.set_script([{"match": "日本酒は米と米麹", "fault": "500", "times": 4}])
    failed = cli.extract(*base_args(out), str(docs))
    assert failed.returncode == 1
    sake = str(docs / "03-sake-brewing.md")
    line = next(x for x in failed.stderr.splitlines() if x.startswith(f"taguru: extract: {sake}:"))
    assert "chunk 1/1: piece " in line and "HTTP 500" in line and "after 4 tries" in line
    assert "— records: " in line
    assert "extract: 2 written, 0 unchanged, 1 failed of 3 segment(s)" in failed.stdout
    assert not (out / output_name(sake)).exists()
    assert cli.simulator.stats()["by_outcome"]["500"] == 4

    cli.simulator.set_script([])
    cli.simulator.reset()
    rerun = cli.extract(*base_args(out), str(docs))
    assert rerun.returncode == 0, rerun.stderr
    assert "extract: 1 written, 2 unchanged, 0 failed of 3 segment(s)" in rerun.stdout
    assert cli.simulator.stats()["requests"] == 1
    assert (out / output_name(sake)).exists()


def test_bad_input_names_the_problem_and_changes_nothing_in_out(cli: Cli, tmp_path: Path) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    assert cli.extract(*base_args(out), str(docs)).returncode == 0
    before = snapshot(out)

    usage = cli.extract(*base_args(out, "--parallel", "0"), str(docs))
    assert usage.returncode == 2 and "--parallel: needs an integer of at least 1" in usage.stderr

    env = cli.env()
    del env["TAGURU_EXTRACT_URL"]
    missing = cli.extract(*base_args(out, "--force"), str(docs), env=env)
    assert missing.returncode == 2 and "TAGURU_EXTRACT_URL is not set" in missing.stderr

    nowhere = cli.extract(*base_args(out), str(tmp_path / "absent.md"))
    assert nowhere.returncode == 2 and "absent.md: no such file or folder" in nowhere.stderr
    assert snapshot(out) == before

    sake = docs / "03-sake-brewing.md"
    sake.write_bytes(b"\xff\xfe not utf-8")
    (docs / "04-huge.txt").write_bytes(b"a" * (8 * 1024 * 1024 + 1))
    cli.simulator.reset()
    broken = cli.extract(*base_args(out), str(docs))
    assert broken.returncode == 1
    assert f"taguru: extract: {sake}: not valid UTF-8" in broken.stderr
    assert "04-huge.txt: over the 8388608-byte (8 MiB) segment cap" in broken.stderr
    assert "extract: 0 written, 2 unchanged, 2 failed of 4 segment(s)" in broken.stdout
    assert cli.simulator.stats()["requests"] == 0
    assert snapshot(out) == before


def test_dry_run_plans_without_calling_writing_or_locking(cli: Cli, tmp_path: Path) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    env = cli.env()
    del env["TAGURU_EXTRACT_URL"]  # calls nothing, so needs no endpoint
    result = cli.extract(*base_args(out, "--dry-run"), str(docs), env=env)
    assert result.returncode == 0, result.stderr
    *plans, _ = result.stdout.splitlines()  # the summary last
    assert len(plans) == 3 and all(": would extract (" in line for line in plans)
    assert " chunk(s)) → " in plans[1] and "1 chunk(s)" not in plans[1]
    assert "extract: 3 planned, 0 unchanged, 0 failed of 3 segment(s)" in result.stdout
    assert not out.exists()
    assert cli.simulator.stats()["requests"] == 0


def test_diagnostics_sidecar_holds_run_chunk_attempt_and_segment_records(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out, sidecar = corpus(tmp_path), tmp_path / "out", tmp_path / "diag.jsonl"
    cli.simulator.set_script([{"match": "Ray is an open source", "fault": "malformed", "times": 1}])
    result = cli.extract(
        *base_args(out, "--diagnostics-out", str(sidecar)),
        str(docs),
        env=cli.env(TAGURU_EXTRACT_DIAGNOSTICS_RAW_BYTES="16"),
    )
    assert result.returncode == 0, result.stderr
    records = lines(sidecar)
    assert records[0]["type"] == "run" and len(records[0]["run_id"]) == 16
    kinds = [r["type"] for r in records]
    assert kinds.count("segment") == 3 and kinds.count("chunk") >= 5
    attempts = [r for r in records if r["type"] == "attempt"]
    states = sorted(r["state"] for r in attempts)
    assert states.count("stop_malformed") == 1
    malformed = next(r for r in attempts if r["state"] == "stop_malformed")
    assert malformed["parse_error"] and malformed["response_text"].endswith(
        "… [truncated to 16 bytes]"
    )
    assert all("messages" not in r for r in attempts)  # metadata only
    seqs = sorted(r["attempt_seq"] for r in attempts)
    assert seqs == list(range(1, len(attempts) + 1))
    gateway = records[-1]  # the permits at the end: what benchmark extract reads
    assert gateway["type"] == "gateway" and gateway["completions"] == len(attempts)
    assert gateway["outcomes"]["ok"] == gateway["requests"] >= len(attempts)


def test_a_second_run_on_the_same_out_is_refused(cli: Cli, tmp_path: Path) -> None:
    from taguru_ray.store.lock import OutLock
    from taguru_ray.store.outdir import OutDir

    docs, out = corpus(tmp_path), tmp_path / "out"
    out.mkdir()
    with OutLock(OutDir(str(out))):
        refused = cli.extract(*base_args(out), str(docs))
    assert refused.returncode == 1
    assert "is held by another taguru process (pid " in refused.stderr
    assert cli.simulator.stats()["requests"] == 0
    assert cli.extract(*base_args(out), str(docs)).returncode == 0  # the holder is gone


def test_force_and_a_corrupt_manifest_both_re_extract_everything(cli: Cli, tmp_path: Path) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    assert cli.extract(*base_args(out), str(docs)).returncode == 0
    total = cli.simulator.stats()["requests"]
    cli.simulator.reset()
    forced = cli.extract(*base_args(out, "--force"), str(docs))
    assert forced.returncode == 0 and "extract: 3 written" in forced.stdout
    assert cli.simulator.stats()["requests"] == total

    (out / ".extract-manifest.json").write_text("{ torn")
    cli.simulator.reset()
    again = cli.extract(*base_args(out), str(docs))
    assert again.returncode == 0 and "extract: 3 written" in again.stdout
    assert "ignoring an unreadable manifest" in again.stderr
    assert cli.simulator.stats()["requests"] == total
    json.loads((out / ".extract-manifest.json").read_text())  # rewritten whole


def test_source_id_name_date_and_tags_reach_the_header_and_passage(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    result = cli.extract(
        *base_args(
            out,
            "--source-id",
            "session:agent:42",
            "--name",
            "demo",
            "--description",
            "d",
            "--date",
            "2026-11-01",
            "--tag",
            "nightly",
            "--tag",
            "ops",
            "--tag",
            "nightly",
        ),
        str(docs),
    )
    assert result.returncode == 0, result.stderr
    parsed = parse_source_file((out / output_name(str(docs / "03-sake-brewing.md"))).read_bytes())
    assert parsed.header.id == "session:agent:42/03-sake-brewing"
    assert (parsed.header.name, parsed.header.description) == ("demo", "d")
    assert parsed.passage is not None
    assert parsed.passage.date == 1793491200 and parsed.passage.tags == ("nightly", "ops")

    single = cli.extract(
        *base_args(tmp_path / "one", "--source-id", "session:x", "--no-passage"),
        str(docs / "01-ray-overview.md"),
    )
    assert single.returncode == 0, single.stderr
    name = output_name(str(docs / "01-ray-overview.md"))
    one = parse_source_file((tmp_path / "one" / name).read_bytes())
    assert one.header.id == "session:x" and one.passage is None
    assert all(a.paragraph is None for a in one.associations)
    assert ", passage" not in single.stdout


def test_the_api_key_reaches_no_file_and_no_log(cli: Cli, tmp_path: Path) -> None:
    docs, out, sidecar = corpus(tmp_path), tmp_path / "out", tmp_path / "diag.jsonl"
    secret = "sk-test-0123456789abcdef-never-write-me"
    cli.simulator.set_script([{"match": "日本酒", "fault": "500", "times": 4}])
    result = cli.extract(
        *base_args(out, "--diagnostics-out", str(sidecar)),
        str(docs),
        env=cli.env(TAGURU_EXTRACT_API_KEY=secret, TAGURU_EXTRACT_DIAGNOSTICS_RAW_BYTES="100000"),
    )
    assert result.returncode == 1  # a failed segment keeps its checkpoint and attempts log
    assert secret not in result.stdout + result.stderr
    written = [p for p in [*out.rglob("*"), sidecar] if p.is_file()]
    assert len(written) > 6
    assert all(secret.encode() not in path.read_bytes() for path in written)


def test_the_demo_script_extracts_the_sample_corpus(tmp_path: Path, ray_address: str) -> None:
    import os
    import subprocess
    import sys

    out = tmp_path / "demo"
    env = {**os.environ, "PY": sys.executable, "OUT": str(out), "RAY_ADDRESS": ray_address}
    result = subprocess.run(
        ["sh", "examples/demo.sh"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    # Three report lines, the summary, and verify's verdict on the folder; then the
    # folder imported into an embedded context, and one search of it.
    said = result.stdout.splitlines()
    report, (summary, verdict), imported, hits = said[:3], said[3:5], said[5:8], said[8:]
    assert len(report) == 3
    assert summary == "extract: 3 written, 0 unchanged, 0 failed of 3 segment(s)"
    assert verdict == "verify: 3 source file(s), imports whole"
    assert all("into context 'demo'" in line for line in imported), imported
    assert any("03-sake-brewing" in line for line in hits), hits
    assert len(list(out.glob("*.jsonl"))) == 3
    assert (out / ".extract-manifest.json").exists()
    assert len(list((out / ".extract-trace").glob("*.attempts.jsonl"))) == 3
    page = (tmp_path / "demo-report.html").read_text(encoding="utf-8")  # README's report
    assert "<h3>What bounded the run</h3>" in page and "bound_why" in page


def test_a_manifest_that_cannot_be_written_at_the_end_still_ends_with_the_summary(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    (out / ".extract-manifest.json").mkdir(parents=True)  # its compaction will fail
    result = cli.extract(*base_args(out), str(docs))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout.splitlines()[-1] == (
        "extract: 3 written, 0 unchanged, 0 failed of 3 segment(s)"
    )
    assert "ignoring an unreadable manifest at " in result.stderr
    assert "taguru: extract: could not compact the manifest (" in result.stderr
    assert "its journal keeps every entry" in result.stderr
    assert len(list(out.glob("*.jsonl"))) == 3
