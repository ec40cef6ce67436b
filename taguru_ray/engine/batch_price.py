"""What a `--batch-api` run costs and how many rounds it takes, said before it runs.

The tariff is the price table's batch price for the model (its `batch_input` /
`batch_output`); a table that lists none for it counts half the list price —
what OpenAI's and Anthropic's batch APIs charge — and its basis says so. A
budget then counts at that tariff (the gateway counts every answer, ADR 0040).

The rounds are a floor, not a forecast: a segment's chunks wait for each other
under carryover (each chunk's prompt carries the names of the ones before), or
go --parallel at a time without it, an
overview asks one round before the extraction, each gleaning pass one more, and
segment i starts only when segment i-W has finished — so the longest chain of
segments W apart, each its own chain of rounds. Corrective turns and splits
add rounds no plan can see.
"""

from __future__ import annotations

import math

from taguru_ray.engine.spend import _prices, tariff_of
from taguru_ray.pricing.tariff import Tariff
from taguru_ray.settings import Settings

BATCH_DISCOUNT = 0.5  # the batch APIs' price against the list price, where none is listed


def run_tariff(settings: Settings) -> Tariff:
    """The run's tariff: the batch one under --batch-api, else the list one."""
    tariff = tariff_of(settings)  # first: a budget with no price is still a usage error
    if settings.transport.batch_api is None or tariff.per_token is None:
        return tariff
    prices = _prices(settings.spending.prices)
    model = settings.transport.model
    batch = prices.batch_price(model)
    if batch is not None:
        return Tariff(
            per_token=batch,
            basis=f"${batch[0]:g} in / ${batch[1]:g} out per 1M tokens through the batch API "
            f"({prices.basis})",
        )
    half = (tariff.per_token[0] * BATCH_DISCOUNT, tariff.per_token[1] * BATCH_DISCOUNT)
    return Tariff(
        per_token=half,
        basis=f"${half[0]:g} in / ${half[1]:g} out per 1M tokens: 50% of the list price, the "
        f"batch APIs' usual discount ({prices.basis} lists no batch price for {model!r})",
    )


def chain(settings: Settings, chunks: int) -> int:
    """The rounds one segment of `chunks` chunks takes at least."""
    prompt = settings.prompt
    # Carryover orders a segment's chunks; without it, --parallel of them ask at once.
    extraction = chunks if prompt.carryover > 0 else math.ceil(chunks / settings.scale.parallel)
    passes = 1 + settings.ladder.gleanings
    overview = 1 if prompt.chunk_context == "overview" and chunks else 0
    return overview + extraction * passes


def rounds_floor(chains: list[int], window: int) -> int:
    """The longest path through segments W apart (segment i waits for i-W)."""
    longest = [0] * max(window, 1)
    for index, rounds in enumerate(chains):
        longest[index % len(longest)] += rounds
    return max(longest, default=0)


def rounds_line(settings: Settings, chains: list[int]) -> str:
    window = settings.window
    floor = rounds_floor(chains, window)
    days = math.ceil(floor)  # each round may take up to the 24 h completion window
    return (
        f"batch API {settings.transport.batch_api}: at least {floor} round(s) "
        f"(--segment-window {window}, --carryover {settings.prompt.carryover}, --parallel "
        f"{settings.scale.parallel}), each answered "
        f"within 24 h — up to {days} day(s); corrective turns and splits add rounds"
    )
