"""How a run is charged, and when its next completion would cross a budget.

A hosted model is charged per token (its price from the table or --prices);
a self-hosted one per hour of the GPUs behind the endpoint (--price-per-hour),
whatever the tokens. A budget (--budget-usd, --budget-tokens) counts what
this invocation spends — completions reused from checkpoints cost nothing —
and is checked before each request goes on the wire: the spent, the reserved
(requests on the wire, at their estimates) and the next request's estimate
together may not cross it (ADR 0040). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from taguru_ray.pricing.table import Prices

HOUR = 3600.0


@dataclass(frozen=True)
class Tariff:
    """Dollars per 1M input and output tokens, or per hour; neither: cost unknown."""

    per_token: tuple[float, float] | None = None
    per_hour: float | None = None
    basis: str = "no price"

    @property
    def known(self) -> bool:
        return self.per_token is not None or self.per_hour is not None

    def cost(self, input_tokens: int, output_tokens: int, seconds: float) -> float | None:
        if self.per_hour is not None:
            return self.per_hour * seconds / HOUR
        if self.per_token is not None:
            return (input_tokens * self.per_token[0] + output_tokens * self.per_token[1]) / 1e6
        return None

    def most_per_token(self) -> float:
        """Dollars a token may cost at most: an estimate not yet split into input and
        output is priced as the dearer."""
        return max(self.per_token) / 1e6 if self.per_token is not None else 0.0


def tariff_for(model: str, prices: Prices, per_hour: float | None) -> Tariff:
    if per_hour is not None:
        return Tariff(per_hour=per_hour, basis=f"${per_hour:g} per hour (--price-per-hour)")
    price = prices.price(model)
    if price is None:
        return Tariff(basis=f"no price for model {model!r} in {prices.basis}")
    return Tariff(
        per_token=price,
        basis=f"${price[0]:g} in / ${price[1]:g} out per 1M tokens ({prices.basis})",
    )


@dataclass(frozen=True)
class Budget:
    """What this invocation may spend: tokens, dollars, or both (None: no ceiling)."""

    tokens: int | None = None
    usd: float | None = None

    @property
    def set(self) -> bool:
        return self.tokens is not None or self.usd is not None

    def crossing(
        self,
        tariff: Tariff,
        spent: tuple[int, int],
        reserved: int,
        next_tokens: int,
        seconds: float,
    ) -> str | None:
        """Why the next request may not go (it would cross a budget), or None.

        `spent`: (input, output) tokens answered so far; `reserved`: the estimates of
        the requests on the wire; `next_tokens`: the next request's estimate."""
        used = spent[0] + spent[1]
        if self.tokens is not None and used + reserved + next_tokens > self.tokens:
            return (
                f"the token budget (--budget-tokens {self.tokens}) would be crossed by the next "
                f"completion: {used} token(s) spent, {reserved + next_tokens} more asked"
            )
        if self.usd is None:
            return None
        paid = tariff.cost(spent[0], spent[1], seconds) or 0.0
        coming = 0.0 if tariff.per_hour is not None else (reserved + next_tokens)
        if paid + coming * tariff.most_per_token() > self.usd:
            return (
                f"the budget (--budget-usd {self.usd:g}) would be crossed by the next "
                f"completion: ${paid:.4f} spent ({tariff.basis})"
            )
        return None
