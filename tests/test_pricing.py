"""Prices, tariffs, budgets and the --dry-run estimate: pure, with literals."""

from __future__ import annotations

import asyncio
import json

import pytest

from taguru_ray.gateway.pool import PermitPool
from taguru_ray.llm.client import Usage
from taguru_ray.pipeline.estimate import OUTPUT_RATIO, Estimate, estimate_segment
from taguru_ray.pipeline.plan import plan_chunks
from taguru_ray.pricing.table import Prices, PricesError, bundled, load_prices
from taguru_ray.pricing.tariff import Budget, Tariff, tariff_for
from taguru_ray.text.paragraphs import split_paragraphs


def test_the_bundled_table_is_dated_and_finds_snapshots_and_router_names() -> None:
    table = bundled()
    assert "litellm " in table.basis and "as of 20" in table.basis  # its source, its date
    assert table.price("gpt-4o-mini") == (0.15, 0.6)
    assert table.price("gpt-4o-mini-2024-07-18") == (0.15, 0.6)
    assert table.price("openai/gpt-4.1-mini") == (0.4, 1.6)
    assert table.batch_price("openai/gpt-4.1-mini") == (0.2, 0.8)
    assert table.price("claude-sonnet-4-5-20250929") == (3.0, 15.0)
    assert table.price("gemini-2.5-flash") == (0.3, 2.5)
    assert table.price("gpt-4o-minix") is None  # never a looser guess
    assert table.price("taguru-sim") is None
    assert table.price(None) is None


def test_a_prices_file_is_read_and_refused_in_one_line() -> None:
    prices = load_prices(json.dumps({"local-12b": {"input": 0.02, "output": 0.08}}), "--prices p")
    assert prices.cost("local-12b", 1_000_000, 500_000) == pytest.approx(0.06)
    assert prices.basis == "--prices p"
    assert prices.batch_price("local-12b") is None
    batched = load_prices(
        json.dumps({"m": {"input": 1, "output": 2, "batch_input": 0.5, "batch_output": 1}}), "p"
    )
    assert batched.batch_price("m") == (0.5, 1.0) and batched.price("m") == (1.0, 2.0)
    for bad in (
        "[]",
        "{",
        json.dumps({"m": {"input": -1, "output": 1}}),
        json.dumps({"m": {"input": True, "output": 1}}),
        json.dumps({"m": 3}),
        json.dumps({"m": {"input": 1, "output": 1, "batch_input": 0.5}}),
    ):
        with pytest.raises(PricesError) as error:
            load_prices(bad, "--prices p")
        assert str(error.value).startswith("--prices p: ") and "\n" not in str(error.value)


def test_a_tariff_by_token_by_hour_or_unknown() -> None:
    prices = Prices({"m": (1.0, 4.0)}, "table")
    by_token = tariff_for("m", prices, None)
    assert by_token.cost(1_000_000, 250_000, 3600) == pytest.approx(2.0)
    assert by_token.basis == "$1 in / $4 out per 1M tokens (table)"
    by_hour = tariff_for("m", prices, 2.5)
    assert by_hour.cost(10**9, 10**9, 1800) == pytest.approx(1.25)
    unknown = tariff_for("other", prices, None)
    assert not unknown.known and unknown.cost(1, 1, 1) is None
    assert unknown.basis == "no price for model 'other' in table"


def test_a_budget_refuses_the_request_that_would_cross_it() -> None:
    tokens = Budget(tokens=1000)
    assert tokens.crossing(Tariff(), (400, 100), 200, 300, 0) is None  # 1000 exactly
    why = tokens.crossing(Tariff(), (400, 100), 200, 301, 0)
    assert why is not None and "--budget-tokens 1000" in why and "500 token(s) spent" in why
    usd = Budget(usd=1.0)
    tariff = Tariff(per_token=(1.0, 3.0))  # a pending token is priced at the dearer $3/1M
    assert usd.crossing(tariff, (100_000, 100_000), 0, 100_000, 0) is None  # 0.4 + 0.3
    assert usd.crossing(tariff, (100_000, 100_000), 100_000, 100_001, 0) is not None  # past 1.0
    hourly = Budget(usd=1.0)
    assert hourly.crossing(Tariff(per_hour=2.0), (0, 0), 0, 10**9, 1799) is None
    assert hourly.crossing(Tariff(per_hour=2.0), (0, 0), 0, 1, 1801) is not None
    assert not Budget().set and Budget().crossing(tariff, (10**9, 10**9), 0, 1, 0) is None


def test_the_pool_stops_the_run_before_a_request_would_cross_the_budget() -> None:
    async def scenario() -> tuple[list[str], str | None, int]:
        p = PermitPool(["http://a"], 8, budget=Budget(tokens=1000))
        outcomes = []
        for _ in range(5):
            try:
                lease = await p.acquire("w", 300)  # each estimated at 300
            except Exception as error:  # Stopped
                outcomes.append(type(error).__name__)
                break
            outcomes.append("granted")
            await p.release(lease.lease_id, Usage("ok", 0.1, 200, 50))  # 250 spent each
        return outcomes, p.halted, p.keep("w")

    outcomes, halted, keep = asyncio.run(scenario())
    # 250 + 250 + 250 spent; a fourth of 300 would reach 1050.
    assert outcomes == ["granted", "granted", "granted", "Stopped"]
    assert halted is not None and "750 token(s) spent" in halted
    assert keep == 0


def test_requests_on_the_wire_count_against_the_budget() -> None:
    async def scenario() -> bool:
        p = PermitPool(["http://a"], 8, budget=Budget(tokens=1000))
        await p.acquire("w", 600)
        second = asyncio.create_task(p.acquire("w", 600))
        await asyncio.sleep(0.01)
        return p.halted is not None and second.done()

    assert asyncio.run(scenario())


def test_the_estimate_counts_prompts_as_built_and_gleanings_as_passes() -> None:
    text = "# A\n\nThe Alpha Service stores records in Postgres.\n\nPostgres keeps a log.\n"
    chunks = plan_chunks(split_paragraphs(text), 4096)
    system = "S" * 400  # 100 tokens
    one = estimate_segment(system, "a.md", chunks, gleanings=0, questions=0)
    chunk_tokens = -(-len(chunks[0].text.encode()) // 4)
    assert one.completions == 1
    assert one.output_tokens == -(-int(chunk_tokens * OUTPUT_RATIO * 1000) // 1000)
    assert one.input_tokens > 100 + chunk_tokens  # the preamble line too
    two = estimate_segment(system, "a.md", chunks, gleanings=1, questions=0)
    assert two.completions == 2 and two.input_tokens > 2 * one.input_tokens
    asked = estimate_segment(system, "a.md", chunks, gleanings=0, questions=2)
    assert asked.output_tokens == one.output_tokens + 2 * 24 * len(chunks[0].blocks)
    assert Estimate(1, 2, 3) + Estimate(1, 1, 1) == Estimate(2, 3, 4)
