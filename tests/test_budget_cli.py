"""Cost and budgets end to end: the --dry-run estimate against what the simulator counted,
a --budget-tokens stop and its resume with nothing asked twice, and --budget-usd refusals."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.corpora import ALPHA, BETA, STATUTE
from tests.support import CONTEXT, Cli

pytestmark = [pytest.mark.ray, pytest.mark.slow]

ESTIMATE = re.compile(r"(\d+) completion\(s\), (\d+) input \+ (\d+) output tokens")


def corpus(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "alpha.md").write_text(ALPHA, encoding="utf-8")
    (docs / "beta.md").write_text(BETA, encoding="utf-8")
    (docs / "statute.md").write_text(STATUTE, encoding="utf-8")
    for n in range(3):
        (docs / f"note{n}.md").write_text(
            f"# Note {n}\n\nThe Gamma Queue {n} feeds the Delta Worker, which writes to Redis.\n",
            encoding="utf-8",
        )
    return docs


def test_the_dry_run_estimate_is_within_a_quarter_of_what_the_model_counted(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    plan = cli.extract("--context", CONTEXT, "--out", str(out), "--dry-run", str(docs))
    assert plan.returncode == 0, plan.stderr
    [line] = [line for line in plan.stderr.splitlines() if "estimate, not a measurement" in line]
    completions, input_tokens, output_tokens = map(int, ESTIMATE.search(line).groups())  # type: ignore[union-attr]
    assert "cost unknown: no price for model 'taguru-sim'" in line
    assert "4 bytes a token" in line  # its basis
    assert not out.exists()

    run = cli.extract("--context", CONTEXT, "--out", str(out), str(docs))
    assert run.returncode == 0, run.stderr
    counted = cli.simulator.stats()
    assert completions == counted["requests"] == 6
    estimated = input_tokens + output_tokens
    measured = counted["prompt_tokens"] + counted["completion_tokens"]
    assert abs(estimated - measured) <= 0.25 * measured, (estimated, measured)
    assert abs(input_tokens - counted["prompt_tokens"]) <= 0.1 * counted["prompt_tokens"]


def test_a_token_budget_stops_the_run_and_a_higher_one_finishes_it_asking_nothing_twice(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    # One segment at a time, so those answered within the budget are written in order.
    stopped = cli.extract(
        "--context",
        CONTEXT,
        "--out",
        str(out),
        "--budget-tokens",
        "2500",
        "--segment-window",
        "1",
        str(docs),
    )
    assert stopped.returncode == 130, stopped.stderr
    assert "the token budget (--budget-tokens 2500) would be crossed" in stopped.stderr
    assert "rerun" in stopped.stderr
    first = cli.simulator.stats()
    spent = first["prompt_tokens"] + first["completion_tokens"]
    assert 0 < first["requests"] < 6 and spent <= 2500
    written = sorted(p.name for p in out.glob("*.jsonl"))
    assert 0 < len(written) < 6

    finished = cli.extract(
        "--context", CONTEXT, "--out", str(out), "--budget-tokens", "100000", str(docs)
    )
    assert finished.returncode == 0, finished.stderr
    assert len(list(out.glob("*.jsonl"))) == 6
    asked = cli.simulator.stats()["prompts"]
    assert len(asked) == 6 and set(asked.values()) == {1}  # every completion asked once


def test_a_dollar_budget_needs_a_price_and_a_priced_run_shows_its_cost(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    refused = cli.extract("--context", CONTEXT, "--out", str(out), "--budget-usd", "1", str(docs))
    assert refused.returncode == 2
    [message] = refused.stderr.splitlines()
    assert "--budget-usd 1" in message and "--prices FILE" in message
    assert not out.exists() and cli.simulator.stats()["requests"] == 0

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"taguru-sim": {"input": 1000, "output": 1000}}))
    # At $1000 per 1M tokens each completion costs about $0.80 and is estimated at about
    # $0.95 before it goes: a $2.50 budget allows two or three (one segment is short).
    run = cli.extract(
        "--context",
        CONTEXT,
        "--out",
        str(out),
        "--prices",
        str(prices),
        "--budget-usd",
        "2.5",
        "--segment-window",
        "1",
        str(docs),
    )
    assert run.returncode == 130, run.stderr
    assert "the budget (--budget-usd 2.5) would be crossed" in run.stderr
    [summary] = [line for line in run.stderr.splitlines() if " output tokens in " in line]
    assert re.search(r"cost \$\d+\.\d\d", summary), summary
    counted = cli.simulator.stats()
    cost = (counted["prompt_tokens"] + counted["completion_tokens"]) * 1000 / 1e6
    assert 0 < counted["requests"] < 6 and 0 < cost <= 2.5  # never past the budget

    bad = tmp_path / "bad.json"
    bad.write_text('{"taguru-sim": {"input": "cheap"}}')
    refused = cli.extract("--context", CONTEXT, "--out", str(out), "--prices", str(bad), str(docs))
    assert refused.returncode == 2
    [message] = refused.stderr.splitlines()
    assert f"--prices {bad}" in message and "dollars per one million tokens" in message
