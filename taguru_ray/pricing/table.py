"""Dollars per one million input and output tokens, per model name.

The bundled table (`prices.json`) holds the list prices of common hosted
models on its `as_of` date, with the vendor pages they were read from; a
``--prices FILE`` of ``{"<model>": {"input": $, "output": $}}`` replaces it.
A model is found by its name as the endpoint takes it, less a router's
``vendor/`` prefix (``openai/gpt-4o-mini``) and a dated snapshot suffix
(``gpt-4o-mini-2024-07-18``) — never by a looser guess: a model not found is
said so, and its cost is unknown rather than wrong.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from taguru_ray.errors import UsageError

BUNDLED = "the bundled price table"
# A snapshot suffix: -2024-07-18, -20250514, -0613, -latest, -preview-06-17.
_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest|preview(?:-[\d-]+)?)$")


class PricesError(UsageError):
    """A --prices file that is not ``{"<model>": {"input": $, "output": $}}`` per 1M tokens."""


@dataclass(frozen=True)
class Prices:
    """Dollars per one million input and output tokens, per model name; `basis` says
    where they come from (a file, or the bundled table and its date)."""

    per_model: dict[str, tuple[float, float]] = field(default_factory=dict)
    basis: str = ""

    def price(self, model: str | None) -> tuple[float, float] | None:
        """(input, output) dollars per 1M tokens for `model`, or None when not listed."""
        name = model or ""
        for candidate in _names(name):
            if candidate in self.per_model:
                return self.per_model[candidate]
        return None

    def cost(self, model: str | None, input_tokens: int, output_tokens: int) -> float | None:
        price = self.price(model)
        if price is None:
            return None
        return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000


def _names(model: str) -> list[str]:
    """`model`, then without a router's vendor prefix, then without a snapshot suffix."""
    names = [model]
    bare = model.rsplit("/", 1)[-1]
    names.append(bare)
    while (shorter := _SNAPSHOT.sub("", bare)) != bare:
        names.append(shorter)
        bare = shorter
    return list(dict.fromkeys(names))


def load_prices(text: str, name: str) -> Prices:
    """Read ``{"<model>": {"input": <$ per 1M>, "output": <$ per 1M>}, ...}``; the bundled
    table's own form (its models under ``"models"``) is taken too."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise PricesError(f"{name}: not JSON ({error})") from None
    if not isinstance(data, dict):
        raise PricesError(f'{name}: expected {{"<model>": {{"input": $, "output": $}}}}')
    table = data.get("models") if isinstance(data.get("models"), dict) else data
    prices = {}
    for model, entry in table.items():
        values = [entry.get(k) if isinstance(entry, dict) else None for k in ("input", "output")]
        if not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < math.inf
            for v in values
        ):
            raise PricesError(
                f'{name}: model {model!r} needs {{"input": $, "output": $}} — dollars per one '
                "million tokens, numbers of 0 or more"
            )
        prices[model] = (float(values[0]), float(values[1]))  # type: ignore[arg-type]
    as_of = data.get("as_of")
    basis = f"{name}, as of {as_of}" if isinstance(as_of, str) else name
    return Prices(prices, basis)


@cache
def bundled() -> Prices:
    """The table shipped with taguru-ray (list prices on its `as_of` date)."""
    text = resources.files("taguru_ray.pricing").joinpath("prices.json").read_text("utf-8")
    return load_prices(text, BUNDLED)
