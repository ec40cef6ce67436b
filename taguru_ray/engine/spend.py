"""A run's tariff and budget, from its settings: read before anything is written."""

from __future__ import annotations

from taguru_ray.errors import UsageError
from taguru_ray.pipeline.estimate import Estimate, basis, measured
from taguru_ray.pipeline.tokens import HEURISTIC_COUNTER, Counter
from taguru_ray.pricing.table import Prices, bundled, load_prices
from taguru_ray.pricing.tariff import Budget, Tariff, tariff_for
from taguru_ray.settings import Settings
from taguru_ray.store.inputs import NotRegularFile, read_regular

PRICES_LIMIT = 1 << 20  # a price table is a few KiB


def tariff_of(settings: Settings) -> Tariff:
    """How this run is charged; a --budget-usd with no price to count it is a usage error."""
    spending = settings.spending
    tariff = tariff_for(settings.transport.model, _prices(spending.prices), spending.price_per_hour)
    if spending.budget_usd is not None and not tariff.known:
        raise UsageError(
            f"--budget-usd {spending.budget_usd:g}: no dollars to count ({tariff.basis}) — give "
            "--prices FILE naming the model, or --price-per-hour for a self-hosted endpoint"
        )
    return tariff


def budget_of(settings: Settings) -> Budget:
    return Budget(settings.spending.budget_tokens, settings.spending.budget_usd)


def _prices(path: str | None) -> Prices:
    if path is None:
        return bundled()
    try:
        text = read_regular(path, PRICES_LIMIT).decode("utf-8")
    except (OSError, NotRegularFile, UnicodeDecodeError) as error:
        raise UsageError(
            f'--prices {path}: cannot read it ({error}) — give a JSON file of {{"<model>": '
            '{"input": $, "output": $}} in dollars per 1M tokens'
        ) from None
    return load_prices(text, f"--prices {path}")


def money(usd: float) -> str:
    """Dollars to the cent, and to a hundredth of a cent below a dollar."""
    return f"${usd:.2f}" if usd >= 1 else f"${usd:.4f}"


def estimate_line(
    estimate: Estimate, tariff: Tariff, counter: Counter = HEURISTIC_COUNTER
) -> str:
    """What --dry-run says the planned segments will cost: an estimate, with its basis
    (how the tokens were counted) and the error measured for that way of counting."""
    cost = tariff.cost(estimate.input_tokens, estimate.output_tokens, 0.0)
    if tariff.per_hour is not None:
        priced = f"cost by the hour ({tariff.basis}): not estimated from tokens"
    elif cost is None:
        priced = f"cost unknown: {tariff.basis} (--prices FILE or --price-per-hour)"
    else:
        priced = f"about {money(cost)} at {tariff.basis}"
    return (
        f"estimate, not a measurement: {estimate.completions} completion(s), "
        f"{estimate.input_tokens} input + {estimate.output_tokens} output tokens; {priced} — "
        f"{basis(counter)}; {measured(counter)}"
    )
