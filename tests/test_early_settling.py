"""The driver settles the leading segments that need no worker before Ray is up.

No Ray here: `ExtractRun.start_reading` runs on threads alone, so these tests
show that the manifest skip, a refusal and the hand-over to the dispatch loop
need nothing Ray provides.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from taguru_ray.cli.extract import parse_flags
from taguru_ray.contract.names import MANIFEST, output_name, written_id
from taguru_ray.contract.source_file import Header, Passage, SourceFile, render_source_file
from taguru_ray.engine import digest_helper
from taguru_ray.engine.run import ExtractRun
from taguru_ray.engine.scan import Console
from taguru_ray.pipeline.read import segment_sha256
from taguru_ray.pipeline.run_inputs import InputDigests
from taguru_ray.settings import compute_inputs, resolve_settings
from taguru_ray.store.config_file import read_config_file
from taguru_ray.store.inputs import expand, read_source
from taguru_ray.store.manifest import MANIFEST_FIELDS, Manifest
from taguru_ray.store.outdir import OutDir
from tests.support import CONTEXT

ENV = {"TAGURU_EXTRACT_URL": "http://127.0.0.1:9/v1", "TAGURU_EXTRACT_MODEL": "taguru-sim"}


def make_run(tmp_path: Path, kinds: str) -> tuple[ExtractRun, list[str], list[str], list[str]]:
    """A corpus with one segment per letter of `kinds`: "u" unchanged (extracted
    before), "n" new, "r" refused (not UTF-8). Returns the run, its sources and the
    stdout and stderr lines it will print."""
    docs, out = tmp_path / "docs", tmp_path / "out"
    docs.mkdir()
    for index, kind in enumerate(kinds):
        data = b"\xff\xfe not text" if kind == "r" else f"Segment {index} text.\n".encode()
        (docs / f"seg-{index}.md").write_bytes(data)
    settings = resolve_settings(
        parse_flags(["--context", CONTEXT, "--out", str(out), str(docs)]), ENV, read_config_file
    )
    outdir = OutDir(str(out))
    outdir.ensure()
    sources = expand(settings.source.paths)
    entries = {}
    for source, kind in zip(sources, kinds, strict=True):
        if kind != "u":
            continue
        data = Path(source).read_bytes()
        ident = written_id(source, settings.source.source_id, True)
        inputs = compute_inputs(
            settings, InputDigests(), segment_sha256(data), ident, output_name(source)
        )
        entries[source] = {key: inputs[key] for key in MANIFEST_FIELDS if key in inputs}
        rendered = render_source_file(
            SourceFile(Header(id=ident, context_id=CONTEXT), Passage(data.decode()))
        )
        (out / output_name(source)).write_bytes(rendered)
    outdir.write(MANIFEST, Manifest(outdir, entries).render())
    printed: list[str] = []
    errors: list[str] = []
    run = ExtractRun(settings, Console(printed.append, errors.append), outdir, sources)
    return run, sources, printed, errors


def test_leading_unchanged_and_refused_segments_settle_before_ray(tmp_path: Path) -> None:
    run, sources, printed, errors = make_run(tmp_path, "uurnu")
    run.start_reading()
    run.reading.early.result(timeout=30)
    try:
        assert printed == [
            f"{source}: unchanged, skipped (--force re-extracts)" for source in sources[:2]
        ]
        assert len(errors) == 1 and errors[0].startswith(
            f"taguru: extract: {sources[2]}: not valid UTF-8"
        )
        assert (run.tally.unchanged, run.tally.failed, run.tally.reached) == (2, 1, 3)
        assert run.window.low_water == 3
        # The first segment that needs a worker is where the dispatch loop starts,
        # and the unchanged one after it waits for the loop too.
        first = run.reading.scanner.next_now()
        assert first is not None and first.index == 3 and first.data is not None
        after = run.reading.scanner.next_now()
        assert after is not None and after.index == 4
        assert run.reading.scanner.next_now() is None
    finally:
        run.stop_reading()


def test_a_hand_over_before_the_first_segment_leaves_every_segment_to_the_loop(
    tmp_path: Path,
) -> None:
    run, sources, printed, _ = make_run(tmp_path, "uuu")
    run.reading.hand_over()  # as when Ray was up before the reading began
    run.start_reading()
    run.reading.early.result(timeout=30)
    try:
        assert printed == [] and run.tally.unchanged == 0
        left = [run.reading.scanner.next_now() for _ in sources]
        assert [scanned.index for scanned in left if scanned] == [0, 1, 2]
        # The manifest and the listing were taken all the same: the loop judges the rest.
        assert all(run.skipping.unchanged(scanned) for scanned in left if scanned)
    finally:
        run.stop_reading()


def test_a_stop_ends_the_early_settling_and_the_reads(tmp_path: Path) -> None:
    run, _, _, _ = make_run(tmp_path, "u" * 600)
    run.start_reading()
    run.stop_reading()  # Ray failed to start, or a Ctrl+C came while it started
    assert run.reading.early.done() and run.reading.early.exception() is None
    # Whatever was settled was settled in order, up to where it stopped.
    assert run.window.low_water == run.tally.unchanged == run.tally.reached


def test_a_helper_process_hashes_what_the_driver_skips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(digest_helper, "HELPER_FROM", 1)
    run, sources, printed, errors = make_run(tmp_path, "uurnu")
    run.reading.read = lambda source: read_source(source)  # another reader (staged sessions)
    assert not run.reading.wants_helper()
    run.reading.read = read_source
    run.start_reading()
    run.reading.early.result(timeout=30)
    try:
        assert run.reading._helper is not None
        assert printed == [
            f"{source}: unchanged, skipped (--force re-extracts)" for source in sources[:2]
        ]
        assert len(errors) == 1 and errors[0].startswith(
            f"taguru: extract: {sources[2]}: not valid UTF-8"
        )
        first = run.reading.scanner.next_now()
        # The new segment was read again by the driver: a worker gets its bytes.
        assert (
            first is not None and first.index == 3 and first.data == Path(sources[3]).read_bytes()
        )
        after = run.reading.scanner.next_now()
        assert (
            after is not None
            and after.index == 4
            and after.unread
            and run.skipping.unchanged(after)
        )
    finally:
        run.stop_reading()
    assert run.reading._helper._child is None
