"""The price table's refresh from LiteLLM's price file (ADR 0059): literals in, the
bundled form out, read back by the runtime's own loader."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from taguru_ray.pricing.refresh import dumps, main, read_source, table
from taguru_ray.pricing.table import bundled, load_prices

LITELLM = {
    "sample_spec": {"input_cost_per_token": 0.0, "litellm_provider": "one of …"},
    "gpt-4.1-mini": {
        "litellm_provider": "openai",
        "mode": "chat",
        "input_cost_per_token": 4e-07,
        "output_cost_per_token": 1.6e-06,
        "input_cost_per_token_batches": 2e-07,
        "output_cost_per_token_batches": 8e-07,
    },
    "openai/gpt-4.1-mini": {  # a prefixed copy never replaces the vendor's bare entry
        "litellm_provider": "openai",
        "mode": "chat",
        "input_cost_per_token": 9e-06,
        "output_cost_per_token": 9e-06,
    },
    "gemini/gemini-2.5-flash": {
        "litellm_provider": "gemini",
        "mode": "chat",
        "input_cost_per_token": 3e-07,
        "output_cost_per_token": 2.5e-06,
    },
    "azure/gpt-4o": {
        "litellm_provider": "azure",
        "mode": "chat",
        "input_cost_per_token": 1e-6,
        "output_cost_per_token": 1e-6,
    },
    "text-embedding-3-small": {
        "litellm_provider": "openai",
        "mode": "embedding",
        "input_cost_per_token": 2e-08,
        "output_cost_per_token": 0.0,
    },
    "ft:gpt-4o-mini": {
        "litellm_provider": "openai",
        "mode": "chat",
        "input_cost_per_token": 3e-07,
        "output_cost_per_token": 1.2e-06,
    },
    "o1-pro": {"litellm_provider": "openai", "mode": "responses", "input_cost_per_token": 1.5e-4},
}


def test_first_party_chat_models_are_kept_per_million_with_batch_prices() -> None:
    made = table(LITELLM, "litellm 9.9.9", "2026-12-04")
    assert made["source_version"] == "litellm 9.9.9" and made["retrieved"] == "2026-12-04"
    assert "litellm" in made["source"].lower()
    assert made["models"] == {
        "gemini-2.5-flash": {"input": 0.3, "output": 2.5, "vendor": "google"},
        "gpt-4.1-mini": {
            "input": 0.4,
            "output": 1.6,
            "batch_input": 0.2,
            "batch_output": 0.8,
            "vendor": "openai",
        },
    }


def test_the_written_table_reads_back_with_its_source_and_date() -> None:
    prices = load_prices(dumps(table(LITELLM, "litellm 9.9.9", "2026-12-04")), "t")
    assert prices.basis == "t, litellm 9.9.9, as of 2026-12-04"
    assert prices.price("openai/gpt-4.1-mini-2025-04-14") == (0.4, 1.6)
    assert prices.batch_price("gpt-4.1-mini") == (0.2, 0.8)


def test_a_wheel_and_a_json_file_are_both_sources(tmp_path: Path) -> None:
    wheel = tmp_path / "litellm-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("litellm/model_prices_and_context_window_backup.json", json.dumps(LITELLM))
        archive.writestr("litellm-9.9.9.dist-info/METADATA", "Name: litellm\nVersion: 9.9.9\n")
    assert read_source(str(wheel), None) == (LITELLM, "litellm 9.9.9")
    plain = tmp_path / "prices.json"
    plain.write_text(json.dumps(LITELLM))
    data, version = read_source(str(plain), None)
    assert data == LITELLM and version.startswith("prices.json sha256:")
    out = tmp_path / "table.json"
    assert main([str(wheel), "--retrieved", "2026-01-02", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["retrieved"] == "2026-01-02"


def test_the_bundled_table_is_the_generated_form() -> None:
    text = Path("taguru_ray/pricing/prices.json").read_text("utf-8")
    data = json.loads(text)
    assert dumps(data) == text  # as the tool writes it: regenerate it, never hand-edit it
    assert data["source_version"].startswith("litellm ") and data["retrieved"]
    assert len(bundled().per_model) == len(data["models"])
