"""`taguru-ray evaluate` against a real `taguru-ray serve`: a hand-written eval file whose
metrics are worked out by hand below, the gate's exits, the corpus moving mid-run,
and the same numbers whether the store was built by `import` or `import --url`."""

from __future__ import annotations

import ast
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.cli import main as cli
from taguru_ray.evalset import Mode, load
from taguru_ray.evaluate.run import Request, RunFailed, evaluate
from taguru_ray.remote.client import RemoteError, Reply, TaguruClient
from tests.test_serve_cli import SERVE, running

FIXTURES = Path(__file__).parent / "fixtures/evaluate"
CORPUS = sorted((FIXTURES / "corpus").glob("*.jsonl"))
EVAL = FIXTURES / "eval.jsonl"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A writable `serve` over a store `import --store` built from the fixture corpus."""
    store = tmp_path_factory.mktemp("evaluate") / "store"
    assert cli(["import", *map(str, CORPUS), "--store", str(store)]) == 0
    with running(*SERVE, "--store", str(store), "--port", "0", "--writable") as (_, base):
        yield base


def run(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any] | None]:
    out = tmp_path / "evaluation.json"
    code = cli(["evaluate", "--out", str(out), *args])
    return code, json.loads(out.read_text(encoding="utf-8")) if out.exists() else None


def by_case(artifact: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {case["case_id"]: case for case in artifact["cases"]}


def test_the_fixture_scores_as_worked_out_by_hand(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, artifact = run(tmp_path, "--eval", str(EVAL), "--context", "sake", "--url", server)
    assert code == 0 and artifact is not None
    assert "report-only" in capsys.readouterr().err
    cases = by_case(artifact)
    hits = {cid: [(h["source"], h["paragraph"]) for h in c["passage"]["hits"]]
            for cid, c in cases.items()}  # fmt: skip
    # What BM25 returns for each query over the three documents (the server's answer).
    assert hits == {
        "origin": [("corpus/brewery.md", 0)],
        "toji": [("corpus/brewery.md", 1)],
        "ambiguous": [("corpus/brewery.md", 0)],
        "not-found": [],
        "citations": [("corpus/rice.md", 1), ("corpus/rice.md", 0)],
    }
    # origin: brewery p0 (rel 3) at rank 1, water (rel 1) missed → recall 1/2, MRR 1,
    # nDCG = (3/log2 2) / (3/log2 2 + 1/log2 3).
    origin = cases["origin"]
    assert origin["recall"] == {"recall_at_k": 0.5, "mrr": 1.0, "ndcg": pytest.approx(
        3 / (3 + 1 / 1.584962500721156)), "expected_total": 2, "matched": 1}  # fmt: skip
    assert origin["coverage"] == {"concepts": {"expected": 1, "matched": 1, "value": 1.0}}
    check = origin["citations"]["checks"][0]
    assert check["section"] == {"check": "matched", "expected": "沿革"}
    assert check["quote"] == {"declared": "1897年に創業", "matched": True}
    # citations: the expected paragraph 0 of rice is the second hit → MRR 1/2,
    # nDCG = (1/log2 3) / (1/log2 2).
    assert cases["citations"]["recall"]["mrr"] == 0.5
    assert cases["citations"]["recall"]["ndcg"] == pytest.approx(1 / 1.584962500721156)
    # toji: one association pins and is found, the other pins and is absent → 1/2; the
    # citation of rice p1 is served by the found association's attribution, not a hit.
    toji = cases["toji"]
    assert toji["coverage"]["associations"] == {"expected": 2, "matched": 1, "value": 0.5}
    assert toji["coverage"]["labels"] == {"expected": 1, "matched": 1, "value": 1.0}
    assert toji["citations"]["recall"]["value"] == 1.0
    assert toji["missed"] == [
        "expected_associations: (山田錦, 産地, 岡山) query returned no association"
    ]
    # ambiguous: 青嶺 resolves to itself and (by containment) 青嶺酒造 — never queried.
    probe = cases["ambiguous"]["structural"]["associations"][0]
    assert probe["subject"]["outcome"] == "ambiguous" and "query" not in probe
    assert probe["subject"]["candidates"] == ["青嶺", "青嶺酒造"]
    # not-found: ワイン resolves to nothing; recall 0 with no hit at all.
    nf = cases["not-found"]
    assert nf["structural"]["cues"][0]["resolved_names"] == []
    assert nf["structural"]["associations"][0]["subject"]["outcome"] == "not_found"
    assert nf["recall"] == {"recall_at_k": 0.0, "mrr": 0.0, "ndcg": 0.0, "expected_total": 1,
                            "matched": 0}  # fmt: skip
    assert nf["lane_cross"] == {"structural_hit": False, "passage_hit": False}
    # citations: served 1 of 4; valid 1 of 4 (no_paragraph, no_source, section and quote off).
    citations = cases["citations"]["citations"]
    assert citations["recall"] == {"expected_total": 4, "matched": 1, "value": 0.25}
    assert citations["validity"] == {"expected_total": 4, "valid": 1, "value": 0.25}
    assert [c.get("code") for c in citations["checks"]] == [None, "no_paragraph", "no_source", None]
    assert cases["citations"]["missed_truncated"] == 3

    metrics = artifact["metrics"]
    assert metrics["recall.recall_at_k"]["mean"] == pytest.approx((0.5 + 1 + 0 + 1) / 4)
    assert metrics["recall.mrr"]["mean"] == pytest.approx((1 + 1 + 0 + 0.5) / 4)
    assert metrics["coverage.associations"]["mean"] == pytest.approx((0.5 + 0 + 0) / 3)
    assert metrics["coverage.concepts"] == {
        "n": 2, "min": 0.0, "p50": 0.0, "p90": 1.0, "p99": 1.0, "max": 1.0, "mean": 0.5,
        "sum": 1.0,
    }  # fmt: skip
    assert metrics["citations.recall"]["mean"] == pytest.approx((1 + 1 + 0.25) / 3)
    assert metrics["citations.locator_validity"]["mean"] == pytest.approx((1 + 1 + 0.25) / 3)
    assert metrics["citations.resolved"] == {"value": 4 / 6, "n": 6, "numerator": 4}
    assert metrics["citations.quote_match"] == {"value": 2 / 3, "n": 3, "numerator": 2}
    assert metrics["lanes.both"] == {"value": 2 / 3, "n": 3, "numerator": 2}
    assert metrics["structural.case_rate"] == {"value": 0.8, "n": 5, "numerator": 4}
    assert metrics["latency.passage_ms"]["n"] == 5 and metrics["latency.resolve_ms"]["n"] == 15
    assert set(metrics) <= set(artifact["definitions"])

    assert artifact["corpus"]["stable"] is True and artifact["corpus"]["sources_count"] == 3
    assert artifact["corpus"]["embeddings"] == {"provider_model": None}
    assert artifact["inputs"]["url"] == server and artifact["thresholds"] is None
    plan = cases["origin"]["passage"]["plan"]
    assert plan["lanes"]["vector"]["reason"] == "no embedding provider is configured"


def test_the_artifact_holds_no_paragraph_of_the_corpus(server: str, tmp_path: Path) -> None:
    assert run(tmp_path, "--eval", str(EVAL), "--context", "sake", "--url", server)[0] == 0
    text = (tmp_path / "evaluation.json").read_text(encoding="utf-8")
    checked = 0
    for path in CORPUS:
        for line in path.read_text(encoding="utf-8").splitlines():
            passage = json.loads(line).get("passage")
            if passage is None:
                continue
            for paragraph in passage.split("\n\n"):
                checked += 1
                assert paragraph not in text, paragraph
    assert checked == 6


def test_a_violated_threshold_exits_3_and_says_which(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thresholds = tmp_path / "thresholds.json"
    thresholds.write_text(json.dumps({
        "taguru_evaluate_thresholds": 1,
        "aggregate": {"recall.mrr": {"min": 0.5}},
        "cases": {"default": {"citations.recall": {"min": 0.5}},
                  "overrides": {"origin": {"citations.recall": {"min": 1.0}}}},
        "allow_unstable_corpus": False,
    }), encoding="utf-8")  # fmt: skip
    code, artifact = run(tmp_path, "--eval", str(EVAL), "--context", "sake", "--url", server,
                         "--thresholds", str(thresholds))  # fmt: skip
    assert code == 3 and artifact is not None
    block = artifact["thresholds"]
    assert block["passed"] is False
    assert [(v["scope"], v.get("case_id"), v["metric"]) for v in block["violations"]] == [
        ("case", "citations", "citations.recall")]  # fmt: skip
    assert "citations" in capsys.readouterr().err


class MovingCorpus(TaguruClient):
    """A client that imports one more source between the two reads of the entry, as a
    nightly import landing mid-run would."""

    reads = 0

    def context(self, name: str) -> Reply:
        self.reads += 1
        if self.reads == 2:
            # The same source again: the revision moves, the corpus other tests read does not.
            self.import_stream((FIXTURES / "corpus" / "water.jsonl").read_bytes())
        return super().context(name)


def test_a_corpus_changed_mid_run_reads_unstable_and_fails_the_gate(
    server: str, tmp_path: Path
) -> None:
    from taguru_ray.evaluate.thresholds import parse_thresholds

    evalset = load(str(EVAL), Mode.INTERPRET)
    raw = b'{"taguru_evaluate_thresholds": 1}'
    ids = [case.case_id for case in evalset.cases]
    request = Request(str(EVAL), evalset, "sake", server, "unused", parse_thresholds(raw, "t", ids),
                      False, None, None)  # fmt: skip
    outcome = evaluate(request, MovingCorpus(server, None), lambda: "2026-12-01T00:00:00Z")
    corpus = outcome.artifact["corpus"]
    assert corpus["stable"] is False
    assert corpus["revision_before"] != corpus["revision_after"]
    assert outcome.exit_code == 3
    assert outcome.artifact["thresholds"]["violations"][0]["scope"] == "corpus"
    allowed = parse_thresholds(b'{"taguru_evaluate_thresholds": 1, "allow_unstable_corpus": true}',
                               "t", ids)  # fmt: skip
    again = evaluate(request.__class__(**{**request.__dict__, "thresholds": allowed}),
                     MovingCorpus(server, None), lambda: "2026-12-01T00:00:00Z")  # fmt: skip
    assert again.artifact["corpus"]["stable"] is False and again.exit_code == 0


@pytest.mark.parametrize(
    "args, says",
    [
        (["--context", "sake"], "--eval"),
        (["--eval", "E", "--context", "sake", "extra"], "unrecognized"),
        (["--eval", "E", "--eval", "E", "--context", "sake"], "twice"),
        (["--eval", "E", "--context", "sake", "--rerank", "m"], "--assembly"),
        (["--eval", "E", "--context", "sake", "--max-items", "0"], "positive"),
        (["--eval", "E", "--context", "sake", "--url", "http://u:p@h:1"], "credentials"),
        (["--eval", "E", "--context", "sake", "--url", "http://h:0"], "port 0"),
        (["--eval", "E", "--context", "nope"], "does not exist"),
        (["--eval", "MISSING", "--context", "sake"], "eval.jsonl"),
    ],
)
def test_usage_errors_exit_2_with_one_named_line(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    args = [str(EVAL) if a == "E" else str(tmp_path / "eval.jsonl") if a == "MISSING" else a
            for a in args]  # fmt: skip
    if "--url" not in args:
        args += ["--url", server]
    code, artifact = run(tmp_path, *args)
    err = capsys.readouterr().err
    assert code == 2 and artifact is None
    assert says in err and "Traceback" not in err


def test_a_bare_word_is_a_subcommand_and_only_compare_is_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli(["evaluate", "run"]) == 2
    assert "only 'compare'" in capsys.readouterr().err
    assert cli(["evaluate", "--help"]) == 0
    assert "--thresholds FILE" in capsys.readouterr().out


def test_eval_and_thresholds_problems_exit_2_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    closed = _closed_port()
    bad_limit = tmp_path / "limit.jsonl"
    bad_limit.write_text('{"taguru_eval":1}\n{"case_id":"a","query":"q","options":{"limit":0}}\n')
    assert run(tmp_path, "--eval", str(bad_limit), "--context", "sake", "--url", closed)[0] == 2
    assert "options.limit" in capsys.readouterr().err
    thresholds = tmp_path / "t.json"
    thresholds.write_text(json.dumps({
        "taguru_evaluate_thresholds": 2, "aggregate": {"no.such": {"min": 1}},
        "cases": {"overrides": {"ghost": {}}}, "extra": 1}))  # fmt: skip
    code, _ = run(tmp_path, "--eval", str(EVAL), "--context", "sake", "--url", closed,
                  "--thresholds", str(thresholds))  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    for named in ("taguru_evaluate_thresholds", "no.such", "ghost", "extra"):
        assert named in err  # every problem, together


def test_a_source_the_context_lacks_is_refused_before_any_case(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evalset = tmp_path / "eval.jsonl"
    evalset.write_text('{"taguru_eval":1}\n{"case_id":"a","query":"q","expected_sources":'
                       '[{"source":"corpus/absent.md"}]}\n')  # fmt: skip
    code, artifact = run(tmp_path, "--eval", str(evalset), "--context", "sake", "--url", server)
    assert code == 2 and artifact is None
    assert "corpus/absent.md" in capsys.readouterr().err


def test_assembly_against_a_server_without_evidence_says_so_and_exits_2(
    server: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_route(self: TaguruClient, name: str, body: Any) -> Reply:
        raise RemoteError("answered 404: no route", 404, "unknown_path")

    # `serve` answers evidence now; a server that does not is this stand-in.
    monkeypatch.setattr(TaguruClient, "evidence", no_route)
    code, artifact = run(tmp_path, "--eval", str(EVAL), "--context", "sake", "--url", server,
                         "--assembly")  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and artifact is None
    assert err.count("\n") == 1 and "does not implement evidence assembly" in err


def _closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def test_the_run_itself_failing_exits_1_and_writes_nothing(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, artifact = run(tmp_path, "--eval", str(EVAL), "--context", "sake", "--url",
                         _closed_port())  # fmt: skip
    assert code == 1 and artifact is None and "not reachable" in capsys.readouterr().err
    out = tmp_path / "missing-dir" / "evaluation.json"
    code = cli(["evaluate", "--eval", str(EVAL), "--context", "sake", "--url", server,
                "--out", str(out)])  # fmt: skip
    assert code == 1 and not out.parent.exists()
    assert "nothing was written" in capsys.readouterr().err


class Failing(TaguruClient):
    """A real client whose n-th call of one route answers a server error."""

    def __init__(self, base: str, route: str, on_call: int) -> None:
        super().__init__(base, None)
        self.route, self.on_call, self.calls = route, on_call, 0

    def _fail(self) -> None:
        self.calls += 1
        if self.calls == self.on_call:
            raise RemoteError(f"{self.base} answered 500: boom", 500, "internal")

    def context(self, name: str) -> Reply:
        if self.route == "context":
            self._fail()
        reply = super().context(name)
        if self.route == "entry":
            return Reply({"name": name}, reply.latency_ms)  # no stats/usage: unreadable
        return reply

    def sources_page(self, name: str, after: str | None, limit: int = 1000) -> Reply:
        if self.route == "sources":
            self._fail()
        return super().sources_page(name, after, limit)


@pytest.mark.parametrize(
    "route, on_call, says",
    [("context", 1, "reading context"), ("context", 2, "reading context"),
     ("sources", 1, "listing the sources"), ("entry", 0, "unreadable")],
)  # fmt: skip
def test_server_failures_around_the_cases_exit_1(
    server: str, route: str, on_call: int, says: str
) -> None:
    evalset = load(str(EVAL), Mode.INTERPRET)
    request = Request(str(EVAL), evalset, "sake", server, "unused", None, False, None, None)
    with pytest.raises(RunFailed) as failed:
        evaluate(request, Failing(server, route, on_call), lambda: "now", note=lambda _: None)
    assert failed.value.code == 1 and says in failed.value.message


def _without_latency(value: Any, base: str) -> Any:
    """The artifact less what differs between two servers: timings, clocks, its address."""
    if isinstance(value, str):
        return value.replace(base, "SERVER")
    if isinstance(value, dict):
        return {k: _without_latency(v, base) for k, v in value.items()
                if "latency" not in k and k not in ("last_write_epoch_before",
                                                     "last_write_epoch_after", "generated_at",
                                                     "url", "out")}  # fmt: skip
    if isinstance(value, list):
        return [_without_latency(v, base) for v in value]
    return value


def test_import_or_import_url_gives_the_same_metrics(server: str, tmp_path: Path) -> None:
    empty = tmp_path / "second"
    from taguru_ray.context.store import SqliteStore

    SqliteStore(empty).close()
    with running(*SERVE, "--store", str(empty), "--port", "0", "--writable") as (_, second):
        assert cli(["import", *map(str, CORPUS), "--url", second]) == 0
        first_code, first = run(tmp_path, "--eval", str(EVAL), "--context", "sake", "--url",
                                server)  # fmt: skip
        second_code, other = run(tmp_path, "--eval", str(EVAL), "--context", "sake", "--url",
                                 second)  # fmt: skip
    assert first_code == second_code == 0 and first is not None and other is not None
    for block in ("cases", "metrics"):
        assert _without_latency(first[block], server) == _without_latency(other[block], second)


def test_evaluate_imports_no_extract_no_llm_and_names_no_extract_variable() -> None:
    package = Path(__file__).resolve().parents[1] / "taguru_ray" / "evaluate"
    forbidden = {"pipeline", "engine", "gateway", "llm", "settings", "simulate", "benchmark"}
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "TAGURU_EXTRACT_" not in text and "TAGURU_EMBED_" not in text, path
        for node in ast.walk(ast.parse(text)):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                parts = name.split(".")
                assert not (parts[0] == "taguru_ray" and len(parts) > 1 and (
                    parts[1] in forbidden or name.startswith("taguru_ray.context.embed")
                )), f"{path}: imports {name}"  # fmt: skip


def test_compare_of_two_real_runs_names_the_regressed_and_the_improved_case(
    tmp_path: Path,
) -> None:
    """Between the runs the nightly import moved: water.md now tells of the founding (origin
    finds it: improves), rice.md lost the words a citation quotes (citations regresses)."""
    from taguru_ray.context.store import SqliteStore

    store = tmp_path / "store"
    SqliteStore(store).close()
    water = (FIXTURES / "corpus" / "water.jsonl").read_text(encoding="utf-8")
    rice = (FIXTURES / "corpus" / "rice.jsonl").read_text(encoding="utf-8")
    changed = tmp_path / "changed"
    changed.mkdir()
    (changed / "water.jsonl").write_text(
        water.replace("仕込み水は", "仕込み水は創業の頃から"), encoding="utf-8"
    )
    rice = rice.replace("岡山の酒米", "岡山で作る酒米")
    (changed / "rice.jsonl").write_text(rice, encoding="utf-8")
    with running(*SERVE, "--store", str(store), "--port", "0", "--writable") as (_, base_url):
        assert cli(["import", *map(str, CORPUS), "--url", base_url]) == 0
        for side in ("a", "b"):
            (tmp_path / side).mkdir()
            if side == "b":
                assert cli(["import", str(changed), "--url", base_url]) == 0
            code, _ = run(tmp_path / side, "--eval", str(EVAL), "--context", "sake", "--url",
                          base_url)  # fmt: skip
            assert code == 0
    base, head = tmp_path / "a" / "evaluation.json", tmp_path / "b" / "evaluation.json"
    out = tmp_path / "changes.jsonl"
    assert cli(["evaluate", "compare", str(base), str(head), "--out", str(out)]) == 0
    header, *records = [json.loads(line) for line in out.read_text().splitlines()]
    assert header["kind"] == "header" and header["taguru_evaluation_changes"] == 1
    assert header["counts"] == {"improved": 1, "regressed": 1, "added": 0, "removed": 0,
                                "unchanged": 3, "cases_base": 5, "cases_head": 5}  # fmt: skip
    assert header["base"]["path"] == str(base) and header["head"]["context"] == "sake"
    assert any("revision" in warning for warning in header["warnings"])
    assert records == [
        {"kind": "regressed", "case_id": "citations", "metrics": [
            {"metric": "citations.locator_validity", "sides": {"base": 0.25, "head": 0.0},
             "delta": -0.25, "direction": "regressed"}]},
        {"kind": "improved", "case_id": "origin", "metrics": [
            {"metric": "recall.recall_at_k", "sides": {"base": 0.5, "head": 1.0},
             "delta": 0.5, "direction": "improved"},
            {"metric": "recall.ndcg", "sides": {"base": pytest.approx(0.8262346571285599),
             "head": 1.0}, "delta": pytest.approx(1 - 0.8262346571285599),
             "direction": "improved"},
            {"metric": "diversity.sources", "sides": {"base": 1.0, "head": 2.0},
             "delta": 1.0, "direction": "improved"}]},
    ]  # fmt: skip


def test_the_bearer_comes_from_config_and_never_reaches_the_artifact(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_serve_cli import _env

    monkeypatch.delenv("TAGURU_API_TOKEN", raising=False)
    monkeypatch.delenv("TAGURU_API_TOKENS", raising=False)
    store = tmp_path / "keyed"
    assert cli(["import", *map(str, CORPUS), "--store", str(store)]) == 0
    keyed_env = _env(TAGURU_API_TOKEN="s3cret-evaluate-key")
    with running(*SERVE, "--store", str(store), "--port", "0", env=keyed_env) as (_, keyed):
        assert run(tmp_path, "--eval", str(EVAL), "--context", "sake", "--url", keyed)[0] == 1
        config = tmp_path / "taguru.env"
        config.write_text("TAGURU_API_TOKEN=s3cret-evaluate-key\n")
        code, artifact = run(tmp_path, "--eval", str(EVAL), "--context", "sake", "--url", keyed,
                             "--config", str(config))  # fmt: skip
    assert code == 0 and artifact is not None
    assert "s3cret" not in (tmp_path / "evaluation.json").read_text(encoding="utf-8")
