"""`taguru-ray benchmark search` against a real `taguru-ray serve` (no embedding
provider): corpora built per model, searched with one eval.jsonl, retrieval.json
read back; then the same run with ``--store DIR`` (BENCHMARK.md §3, §5).

One server for the module; each test names its corpora with its own
``--context-prefix`` so they never meet.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from taguru_ray.benchmark.search.corpora import ownership_marker, rewrite_header
from taguru_ray.cli.benchmark_search import main
from taguru_ray.context.store import SqliteStore
from taguru_ray.contract.items import Association
from taguru_ray.contract.names import output_name
from taguru_ray.contract.source_file import Header, Passage, SourceFile, render_source_file
from taguru_ray.remote.client import TaguruClient
from tests.support import CONTEXT
from tests.test_serve_cli import running

RUN_ID = "20260726T091422Z-3f7a1c"
NO_PROVIDER = "no embedding provider is configured"
BREWERY = "corpus/brewery.md"
RICE = "corpus/rice.md"
TEXTS = {
    BREWERY: "The Aomine brewery was founded in 1897 in Kirisawa.\n\nIts toji is Takase.",
    RICE: "Yamadanishiki is polished to fifty percent.\n\nThe paddies lie along the river.",
}
EVAL = [
    {"taguru_eval": 1, "name": "sake retrieval cases"},
    {
        "case_id": "brand-origin",
        "query": "Aomine brewery",
        "cues": ["Aomine"],
        "expected_sources": [{"source": BREWERY, "paragraphs": [0], "relevance": 3}],
        "expected_concepts": ["ＡＯＭＩＮＥ"],
        "expected_citations": [{"source": BREWERY, "paragraph": 0}],  # carried, unread
    },
    {"case_id": "rice", "query": "Yamadanishiki polished", "options": {"limit": 5}},
]


def batch(source: str) -> bytes:
    """A source file as extract writes it: header, passage, one association."""
    return render_source_file(
        SourceFile(
            Header(source, CONTEXT, "sake", "extract's own description"),
            Passage(TEXTS[source]),
            associations=[Association(source.split("/")[1][:-3], "mentions", "sake", 1.0, 0)],
        )
    )


def results_dir(root: Path) -> Path:
    """A results directory as benchmark extract lays it out: m1 wrote both segments,
    m2 only the rice one (plus the cell files search must not import)."""
    cells = {"m1": (BREWERY, RICE), "m2": (RICE,)}
    for model, sources in cells.items():
        cell = root / "cells" / model / "run01"
        cell.mkdir(parents=True)
        for source in sources:
            (cell / output_name(source)).write_bytes(batch(source))
        (cell / "diagnostics.jsonl").write_text('{"kind":"attempt"}\n', encoding="utf-8")
        (cell / "stdout.log").write_text("", encoding="utf-8")
        (cell / "exit_code").write_text("0", encoding="utf-8")
    manifest = {
        "taguru_benchmark_manifest": 1,
        "run_id": RUN_ID,
        "started_at": "2026-07-26T09:14:22Z",
        "finished_at": "2026-07-26T09:20:00Z",
        "extraction_settings": {"context": "sake"},
        "segments": [
            {"segment_id": "brewery", "path": BREWERY, "sha256": "sha-b", "paragraph_count": 2},
            {"segment_id": "rice", "path": RICE, "sha256": "sha-r", "paragraph_count": 2},
        ],
        "models": [{"model_id": "m1"}, {"model_id": "m2"}],
        "cells": [
            {
                "cell_id": f"{model}.run01",
                "model_id": model,
                "run_index": 1,
                "runs_file": f"runs/{model}.run01.jsonl",
                "cell_dir": f"cells/{model}/run01",
                "outcome": "complete",
            }
            for model in cells
        ],
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    eval_path = root.parent / "eval.jsonl"
    eval_path.write_text("\n".join(json.dumps(line) for line in EVAL) + "\n", encoding="utf-8")
    return root


def eval_of(results: Path) -> str:
    return str(results.parent / "eval.jsonl")


@pytest.fixture(autouse=True)
def _no_taguru_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("TAGURU_")]:
        monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("served") / "store"
    SqliteStore(store).close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAGURU_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    serve = (sys.executable, "-m", "taguru_ray", "serve")
    with running(*serve, "--store", str(store), "--port", "0", "--writable", env=env) as (
        _proc,
        base,
    ):
        yield base


def search(*argv: str) -> int:
    return main(list(argv))


def retrieval(results: Path) -> dict[str, Any]:
    return json.loads((results / "retrieval.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def built(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The first run, prefix `sake` (the manifest's context)."""
    results = results_dir(tmp_path_factory.mktemp("built") / "results")
    with pytest.MonkeyPatch.context() as patch:
        for name in [name for name in os.environ if name.startswith("TAGURU_")]:
            patch.delenv(name)
        assert search("--eval", eval_of(results), "--url", server + "/", str(results)) == 0
    return retrieval(results)


def test_two_corpora_are_built_and_their_differences_reported(
    built: dict[str, Any], server: str
) -> None:
    assert built["benchmark_retrieval"] == 3 and built["run_id"] == RUN_ID
    assert built["inputs"]["url"] == server and built["inputs"]["eval"]["cases"] == 2
    assert built["corpus"] == {
        "m1": {"context": "sake::m1", "outcome": "built",
               "segments_imported": 2, "segments_failed": 0},
        "m2": {"context": "sake::m2", "outcome": "built",
               "segments_imported": 1, "segments_failed": 0},
    }  # fmt: skip
    assert len(built["warnings"]) == 1 and "expected_citations" in built["warnings"][0]
    origin, rice = built["cases"]
    m1, m2 = origin["models"]["m1"], origin["models"]["m2"]
    assert m1["plan"] == {"bm25": {"ran": True}, "vector": {"ran": False, "reason": NO_PROVIDER}}
    assert m1["hits"] == [{"rank": 1, "source": BREWERY, "paragraph": 0}]
    assert m1["lanes"]["bm25_only"] == 1
    assert m1["recall"] == {"recall_at_k": 1.0, "mrr": 1.0, "expected_total": 2, "matched": 2}
    assert (m2["empty"], m2["recall"]["recall_at_k"], m2["recall"]["mrr"]) == (True, 0.0, 0.0)
    assert origin["pairs"] == {
        "2:m1__m2": {"outcome": "compared", "jaccard": 0.0, "shared_hits": 0,
                     "mean_rank_difference": None},
    }  # fmt: skip
    assert rice["limit"] == 5 and rice["pairs"]["2:m1__m2"]["jaccard"] == 1.0
    assert built["models"]["m1"]["recall.recall_at_k"]["mean"] == 1.0
    assert built["models"]["m2"]["hits.empty_rate"]["value"] == 0.5
    assert built["pairs"]["2:m1__m2"]["overlap.shared_hits"]["sum"] == 1.0


def test_a_rerun_of_the_same_run_replaces_what_it_imported(
    built: dict[str, Any], server: str, tmp_path: Path
) -> None:
    client = TaguruClient(server, None)
    before = client.context("sake::m1").result["stats"]
    results = results_dir(tmp_path / "results")
    assert search("--eval", eval_of(results), "--url", server, str(results)) == 0
    assert client.context("sake::m1").result["stats"]["associations"] == before["associations"]
    assert retrieval(results)["corpus"]["m1"]["outcome"] == "built"


def test_an_unrecorded_run_is_exit_2(server: str, tmp_path: Path, capsys: Any) -> None:
    results = results_dir(tmp_path / "results")
    assert search("--eval", eval_of(results), "--url", server, "--run", "2", str(results)) == 2
    assert "no cell recorded for run 2 — available runs: {1}" in capsys.readouterr().err
    assert not (results / "retrieval.json").exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://user:secret@127.0.0.1:8248", "must not carry credentials"),
        ("http://127.0.0.1:notaport", "could not be parsed"),
    ],
)
def test_a_url_with_credentials_or_unparsable_is_exit_2(
    tmp_path: Path, capsys: Any, url: str, message: str
) -> None:
    results = results_dir(tmp_path / "results")
    assert search("--eval", eval_of(results), "--url", url, str(results)) == 2
    err = capsys.readouterr().err
    assert message in err and "secret" not in err
    assert not (results / "retrieval.json").exists()


def test_a_corpus_made_for_another_run_is_rejected(
    server: str, tmp_path: Path, capsys: Any
) -> None:
    client = TaguruClient(server, None)
    other_run = ownership_marker(RUN_ID, "m1", 2)
    client.import_stream(rewrite_header(batch(RICE), "xrun::m1", other_run))
    results = results_dir(tmp_path / "results")
    argv = ("--eval", eval_of(results), "--url", server, "--context-prefix", "xrun")
    assert search(*argv, str(results)) == 0
    found = retrieval(results)
    assert found["corpus"]["m1"]["outcome"] == "rejected"
    assert "ownership marker" in found["corpus"]["m1"]["reason"]
    assert found["corpus"]["m2"]["outcome"] == "built"
    assert found["cases"][0]["models"]["m1"]["outcome"] == "failed"
    assert found["cases"][0]["pairs"]["2:m1__m2"]["outcome"] == "unavailable"
    assert client.context("xrun::m1").result["description"] == other_run  # left alone
    assert "corpus xrun::m1: rejected" in capsys.readouterr().err


def test_skip_import_searches_what_exists(server: str, tmp_path: Path) -> None:
    client = TaguruClient(server, None)
    client.import_stream(rewrite_header(batch(BREWERY), "skip::m1", "made by hand"))
    results = results_dir(tmp_path / "results")
    argv = ("--eval", eval_of(results), "--url", server, "--context-prefix", "skip")
    assert search(*argv, "--skip-import", str(results)) == 0
    found = retrieval(results)
    assert found["corpus"]["m1"] == {
        "context": "skip::m1", "outcome": "search_only",
        "segments_imported": 0, "segments_failed": 0,
    }  # fmt: skip
    assert found["corpus"]["m2"]["outcome"] == "failed"
    assert "does not exist" in found["corpus"]["m2"]["reason"]
    assert found["cases"][0]["models"]["m2"]["outcome"] == "failed"
    assert found["cases"][0]["models"]["m1"]["recall"]["recall_at_k"] == 1.0


def test_no_searchable_corpus_or_no_server_is_exit_1_and_nothing_written(
    server: str, tmp_path: Path, capsys: Any
) -> None:
    results = results_dir(tmp_path / "results")
    argv = ("--eval", eval_of(results), "--context-prefix", "absent", "--skip-import")
    assert search(*argv, "--url", server, str(results)) == 1
    assert "no model's corpus can be searched" in capsys.readouterr().err
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    assert search("--eval", eval_of(results), "--url", closed, str(results)) == 1
    assert "is not reachable" in capsys.readouterr().err
    assert not (results / "retrieval.json").exists()


def test_the_same_run_in_an_embedded_store_gives_the_same_cases_and_models(
    built: dict[str, Any], tmp_path: Path
) -> None:
    results = results_dir(tmp_path / "results")
    store = tmp_path / "new" / "store"
    assert search("--eval", eval_of(results), "--store", str(store), str(results)) == 0
    found = retrieval(results)
    assert found["cases"] == built["cases"] and found["models"] == built["models"]
    assert found["corpus"] == built["corpus"] and found["inputs"]["store"] == str(store)
    assert found["inputs"]["url"].startswith("http://127.0.0.1:")
    # the store is an ordinary one: the corpora are still there for `taguru-ray search`
    reopened = SqliteStore(store, create=False)
    assert reopened.context_names() == ["sake::m1", "sake::m2"]
    reopened.close()
    shutil.rmtree(store)


def test_a_results_directory_behind_an_fsspec_url(tmp_path: Path) -> None:
    local = results_dir(tmp_path / "results")
    memory = fsspec.filesystem("memory")
    for path in local.rglob("*"):
        if path.is_file():
            memory.pipe(f"/search-results/{path.relative_to(local)}", path.read_bytes())
    url = "memory://search-results"
    assert search("--eval", eval_of(local), "--store", str(tmp_path / "store"), url) == 0
    found = json.loads(memory.cat("/search-results/retrieval.json"))
    assert found["inputs"]["results_dir"] == url
    assert found["corpus"]["m1"]["segments_imported"] == 2
    assert not (local / "retrieval.json").exists()
    memory.rm("/search-results", recursive=True)
