"""What a --batch-api run costs and how many rounds it takes at least, said before it runs."""

from __future__ import annotations

import json
from pathlib import Path

from taguru_ray.cli.extract import parse_flags
from taguru_ray.engine.batch_price import chain, rounds_floor, run_tariff
from taguru_ray.settings import Settings
from taguru_ray.settings.resolve import resolve_settings
from taguru_ray.store.config_file import read_config_file

ENV = {"TAGURU_EXTRACT_URL": "http://127.0.0.1:9/v1", "TAGURU_EXTRACT_MODEL": "m-1"}


def settings(tmp_path: Path, *args: str) -> Settings:
    flags = parse_flags(["--context", "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f", "--out",
                         str(tmp_path / "out"), *args, str(tmp_path)])  # fmt: skip
    return resolve_settings(flags, ENV, read_config_file)


def prices(tmp_path: Path, **entry: float) -> str:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"m-1": {"input": 2.0, "output": 8.0, **entry}}))
    return str(path)


def test_the_table_s_batch_price_is_the_run_s_tariff(tmp_path: Path) -> None:
    table = prices(tmp_path, batch_input=1.0, batch_output=3.0)
    tariff = run_tariff(settings(tmp_path, "--batch-api", "openai", "--prices", table))
    assert tariff.per_token == (1.0, 3.0) and "through the batch API" in tariff.basis


def test_without_a_batch_price_half_the_list_price_is_counted_and_said(tmp_path: Path) -> None:
    table = prices(tmp_path)
    tariff = run_tariff(settings(tmp_path, "--batch-api", "anthropic", "--prices", table))
    assert tariff.per_token == (1.0, 4.0) and "50% of the list price" in tariff.basis


def test_a_live_run_keeps_the_list_price(tmp_path: Path) -> None:
    table = prices(tmp_path, batch_input=1.0, batch_output=3.0)
    assert run_tariff(settings(tmp_path, "--prices", table)).per_token == (2.0, 8.0)


def test_the_rounds_floor_is_the_longest_chain_of_segments_a_window_apart() -> None:
    assert rounds_floor([3, 1, 2], 1) == 6  # one at a time: every chain in turn
    assert rounds_floor([3, 1, 2], 2) == 5  # 0 then 2 (W apart), beside 1
    assert rounds_floor([3, 1, 2], 8) == 3  # all at once: the longest segment
    assert rounds_floor([], 4) == 0


def test_a_segment_s_rounds_follow_carryover_parallel_and_gleanings(tmp_path: Path) -> None:
    assert chain(settings(tmp_path), 10) == 10  # carryover on: one chunk a round
    assert chain(settings(tmp_path, "--carryover", "0", "--parallel", "4"), 10) == 3
    assert chain(settings(tmp_path, "--gleanings", "1"), 10) == 20
    assert chain(settings(tmp_path), 0) == 0
