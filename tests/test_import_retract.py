"""`import`'s retractions of what `extract --prune` retired (ADR 0083), against a Taguru API
(`taguru-ray serve`'s, in process) and the embedded store: once, previewed under --dry-run,
never a source a file of the same import writes again."""

from __future__ import annotations

import io
import os
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from taguru_ray.cli import main
from taguru_ray.context.store import SqliteStore
from taguru_ray.contract.names import RETIRED, output_name
from taguru_ray.serve.embedded import embedded_server
from taguru_ray.store.outdir import OutDir
from tests.test_retire import GONE, RUN, prune, seed


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The console script in process (the real CLI runs in tests/test_prune_cli.py)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def retractions(result: subprocess.CompletedProcess[str]) -> list[str]:
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if "retract source '" in line
            or "retracted source '" in line]  # fmt: skip


def test_import_url_retracts_through_the_servers_route_once(tmp_path: Path) -> None:
    out, data = str(tmp_path / "out"), tmp_path / "data"
    seed(out)
    with embedded_server(str(data), os.environ) as url:
        assert len(run("import", out, "--url", url).stdout.splitlines()) == 3
        prune(OutDir(out), RUN)
        records = f"{out}/{RETIRED}/{RUN}.jsonl"
        [preview] = retractions(run("import", out, "--url", url, "--dry-run"))
        assert preview.startswith(f"{records}: would retract source '{GONE}' from context 'sake'")
        [line] = retractions(run("import", out, "--url", url))
        assert line == (
            f"{records}: retracted source '{GONE}' from context 'sake' (retired by extract "
            "--prune): 1 associations, passage removed"
        )
        assert retractions(run("import", out, "--url", url)) == []  # once
    store = SqliteStore(data, create=False)
    assert store.lookup_passages("sake", [GONE, "docs/a.md"])["missing"] == [GONE]


def test_a_source_written_again_since_is_never_retracted(tmp_path: Path) -> None:
    out, store = tmp_path / "out", tmp_path / "ctx"
    seed(str(out))
    assert run("import", str(out), "--store", str(store)).returncode == 0
    prune(OutDir(str(out)), RUN)
    # The segment comes back: a later run writes its file again.
    (out / output_name(GONE)).write_bytes(
        (out / RETIRED / RUN / output_name(GONE)).read_bytes()
    )
    assert retractions(run("import", str(out), "--store", str(store))) == []
    passages = SqliteStore(store, create=False).lookup_passages("sake", [GONE])
    assert passages["missing"] == []
    # Under --context the records name that context too.
    (out / output_name(GONE)).unlink()
    [line] = retractions(run("import", str(out), "--store", str(store), "--context", "sake"))
    assert f"retracted source '{GONE}' from context 'sake'" in line


def test_a_folder_whose_every_segment_was_retired_still_imports_its_retractions(
    tmp_path: Path,
) -> None:
    out, store = tmp_path / "out", tmp_path / "ctx"
    seed(str(out))
    assert run("import", str(out), "--store", str(store)).returncode == 0
    prune(OutDir(str(out)), RUN)
    for name in out.glob("*.jsonl"):
        name.unlink()  # nothing left to import but the retraction
    [line] = retractions(run("import", str(out), "--store", str(store)))
    assert "retracted source" in line
    again = run("import", str(out), "--store", str(store))
    assert again.returncode == 0 and again.stdout == ""


def test_an_unreadable_record_file_is_named_and_exit_1(tmp_path: Path) -> None:
    out, store = tmp_path / "out", tmp_path / "ctx"
    seed(str(out))
    prune(OutDir(str(out)), RUN)
    (out / RETIRED / f"{RUN}.jsonl").write_text("{not json\n")
    refused = run("import", str(out), "--store", str(store))
    assert refused.returncode == 1
    assert f"{RETIRED}/{RUN}.jsonl: cannot read it (1 line(s) that are no retired record)" in (
        refused.stderr
    )
    checked = run("verify", str(out))
    assert checked.returncode == 1 and "import cannot apply them" in checked.stdout


def test_the_store_previews_a_retraction_without_writing(tmp_path: Path) -> None:
    out, store = tmp_path / "out", tmp_path / "ctx"
    seed(str(out))
    assert run("import", str(out), "--store", str(store)).returncode == 0
    context = SqliteStore(store, create=False)
    before = context.context("sake")
    preview = context.retract_source("sake", GONE, dry_run=True)
    assert preview == {"associations_touched": 1, "passage_removed": True}
    assert context.context("sake") == before
    assert context.retract_source("sake", "nothing.md", dry_run=True) == {
        "associations_touched": 0,
        "passage_removed": False,
    }
