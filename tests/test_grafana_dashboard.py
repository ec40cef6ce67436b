"""cluster/grafana-dashboard.json: a dashboard Grafana loads, over metrics a run exports.

The dashboard is checked against Grafana's dashboard model (vendored under
tests/fixtures/grafana/, its README says from where and what is trimmed) and for what
the model cannot say: unique panel ids, panels that fit the 24-column grid without
overlapping, Prometheus queries on the datasource variable, each filtered by the
`run_id` and `model` variables. Then a run on the session's Ray against the simulator
exports every metric the queries name, as Ray's metrics agent serves them, each series
carrying the run's `run_id` and `model`, and in-flight back to 0 once it has ended.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.support import CONTEXT, REPO, Cli

DASHBOARD = REPO / "cluster" / "grafana-dashboard.json"
SCHEMA = REPO / "tests" / "fixtures" / "grafana" / "dashboard.jsonschema.json"
GRID_COLUMNS = 24
# A metric in PromQL: an identifier opening a label selector (`rate(` or `by (` do not).
METRIC = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
RUN_FILTER = ('run_id=~"$run_id"', 'model=~"$model"')
MODEL = "taguru-sim"


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return loaded


def panels() -> list[dict[str, Any]]:
    return list(dashboard()["panels"])


def exprs() -> list[str]:
    return [target["expr"] for panel in panels() for target in panel["targets"]]


def queried_metrics() -> set[str]:
    return {name for expr in exprs() for name, _ in METRIC.findall(expr)}


def test_the_dashboard_is_a_grafana_dashboard() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    errors = [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in jsonschema.Draft7Validator(schema).iter_errors(dashboard())
    ]
    assert not errors, "\n".join(errors)
    model = dashboard()
    assert model["title"] and model["uid"] and 1 <= len(model["uid"]) <= 40
    assert isinstance(model["schemaVersion"], int) and model["schemaVersion"] >= 36


def test_panel_ids_are_unique_and_panels_tile_the_grid() -> None:
    ids = [panel["id"] for panel in panels()]
    assert len(ids) == len(set(ids)), ids
    taken: dict[tuple[int, int], str] = {}
    for panel in panels():
        pos = panel["gridPos"]
        assert pos["x"] >= 0 and pos["y"] >= 0 and pos["x"] + pos["w"] <= GRID_COLUMNS, panel
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in taken, f"{panel['title']} overlaps {taken[(x, y)]}"
                taken[(x, y)] = panel["title"]


def test_every_query_is_prometheus_on_the_run_and_model_variables() -> None:
    variables = {variable["name"]: variable for variable in dashboard()["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for name in ("run_id", "model"):
        assert variables[name]["type"] == "query"
        assert "label_values(ray_taguru_ray_segments" in variables[name]["query"]
        assert variables[name]["datasource"]["uid"] == "${datasource}"
    for panel in panels():
        assert panel["title"] and panel["targets"], panel["id"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"]
            selectors = METRIC.findall(target["expr"])
            assert selectors, target["expr"]
            for name, labels in selectors:
                assert name.startswith("ray_taguru_ray_"), name  # as Ray's agent names them
                assert all(part in labels for part in RUN_FILTER), target["expr"]


def test_the_queries_cover_what_a_run_is_watched_for() -> None:
    wanted = {
        "ray_taguru_ray_requests_total",  # throughput
        "ray_taguru_ray_request_seconds_bucket",  # latency quantiles
        "ray_taguru_ray_segments",  # done of total, the ETA
        "ray_taguru_ray_segments_done_total",
        "ray_taguru_ray_tokens_total",
        "ray_taguru_ray_cost_usd_total",
        "ray_taguru_ray_transport_retries_total",
        "ray_taguru_ray_in_flight",
        "ray_taguru_ray_inflight_limit",
    }
    assert wanted <= queried_metrics()
    assert any(
        f"histogram_quantile({q}," in expr for expr in exprs() for q in ("0.5", "0.9", "0.99")
    )


def declared_metrics() -> set[str]:
    source = (REPO / "taguru_ray" / "llm" / "metrics.py").read_text(encoding="utf-8")
    return set(re.findall(r'"(taguru_ray_[a-z_]+)"', source))


def test_the_queries_and_the_readme_name_the_declared_metrics() -> None:
    declared = declared_metrics()
    for name in queried_metrics():  # as Ray exports them: ray_ first, a counter's _total
        base = re.sub(r"_(total|bucket|sum|count)$", "", name.removeprefix("ray_"))
        assert base in declared, name
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert {name for name in declared if f"`{name}" not in readme} == set()


def scrape(ports: list[tuple[str, int]]) -> list[tuple[str, dict[str, str], float]]:
    """Every sample Ray's metrics agents serve now: (name, labels, value)."""
    import httpx

    samples = []
    for host, port in ports:
        try:
            text = httpx.get(f"http://{host}:{port}/metrics", timeout=5).text
        except httpx.HTTPError:
            continue  # not up yet: the next poll asks again
        for line in text.splitlines():
            match = SAMPLE.match(line)
            if match and not line.startswith("#"):
                name, labels, value = match.groups()
                samples.append((name, dict(LABEL.findall(labels or "")), float(value)))
    return samples


@pytest.mark.ray
@pytest.mark.slow
def exported_whole(seen: dict[str, list[dict[str, str]]]) -> bool:
    def values(name: str, label: str) -> set[str]:
        return {labels.get(label, "") for labels in seen.get(name, [])}

    return {"http_429", "http_503"} <= values(
        "ray_taguru_ray_transport_retries_total", "cause"
    ) and {"written", "failed"} <= values("ray_taguru_ray_segments_done_total", "outcome")


def test_a_run_exports_every_metric_the_dashboard_queries(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    import taguru_ray

    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(REPO / "examples" / "corpus" / "01-ray-overview.md", docs)
    (docs / "pipeline.md").write_text(
        "The Alderingest service reads the Aldertopic and writes Alderfiles to the "
        "Alderbucket, where the Alderengine scans them."
    )
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({MODEL: {"input": 1.0, "output": 2.0}}))
    monkeypatch.setenv("TAGURU_EXTRACT_URL", cli.simulator.chat_url)
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", MODEL)
    cli.simulator.set_script(
        [
            {"fault": "429", "times": 1, "retry_after": 0},  # a retry, caused by http_429
            {"fault": "503", "times": 1},  # and one by http_503
            {"match": "Alderingest", "fault": "runaway"},  # a ladder move; the segment fails
        ]
    )
    result = taguru_ray.extract(
        str(docs),
        out=str(tmp_path / "out"),
        context=CONTEXT,
        address=cli.address,
        structured_output="json-object",
        prices=str(prices),
    )
    assert (result.written, result.failed) == (1, 1), result.lines

    ports = [
        (node["NodeManagerAddress"], node["MetricsExportPort"])
        for node in ray.nodes()
        if node["Alive"]
    ]
    wanted = queried_metrics()
    seen: dict[str, list[dict[str, str]]] = {}
    in_flight: float | None = None
    deadline = time.monotonic() + 120  # each process reports every few seconds
    while time.monotonic() < deadline:
        samples = scrape(ports)
        ours = [(n, labels, v) for n, labels, v in samples if labels.get("run_id") == result.run_id]
        for name, labels, _ in ours:
            seen.setdefault(name, []).append(labels)
        flights = [v for n, _, v in ours if n == "ray_taguru_ray_in_flight"]
        if flights:
            in_flight = sum(flights)
        # Every series the assertions read, each label included: a counter's later
        # increment (the failed segment settles last) can reach the exporter a period
        # after its first — on a busy machine, after the metric's name was first seen.
        if wanted <= seen.keys() and in_flight == 0 and exported_whole(seen):
            break
        time.sleep(1)

    assert wanted - seen.keys() == set(), f"not exported for run {result.run_id}"
    for name in wanted:
        assert all(labels.get("model") == MODEL for labels in seen[name]), name
    retried = {labels["cause"] for labels in seen["ray_taguru_ray_transport_retries_total"]}
    assert {"http_429", "http_503"} <= retried
    outcomes = {labels["outcome"] for labels in seen["ray_taguru_ray_segments_done_total"]}
    assert {"written", "failed"} <= outcomes
    assert in_flight == 0
