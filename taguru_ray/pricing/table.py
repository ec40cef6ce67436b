"""Dollars per one million input and output tokens, per model name.

The bundled table (`prices.json`) is generated from a maintained source —
LiteLLM's price file, its version and the date it was taken recorded in the
table (`refresh.py`, ADR 0059); a ``--prices FILE`` of
``{"<model>": {"input": $, "output": $}}`` replaces it, and may add
``"batch_input"``/``"batch_output"`` (a batch API's prices) beside them.
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
    batch: dict[str, tuple[float, float]] = field(default_factory=dict)  # a batch API's

    def price(self, model: str | None) -> tuple[float, float] | None:
        """(input, output) dollars per 1M tokens for `model`, or None when not listed."""
        return _find(self.per_model, model)

    def batch_price(self, model: str | None) -> tuple[float, float] | None:
        """(input, output) dollars per 1M tokens through the vendor's batch API, or None
        when the table lists none for `model`."""
        return _find(self.batch, model)

    def cost(self, model: str | None, input_tokens: int, output_tokens: int) -> float | None:
        price = self.price(model)
        if price is None:
            return None
        return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000


def _find(
    table: dict[str, tuple[float, float]], model: str | None
) -> tuple[float, float] | None:
    for candidate in _names(model or ""):
        if candidate in table:
            return table[candidate]
    return None


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
    """Read ``{"<model>": {"input": <$ per 1M>, "output": <$ per 1M>}, ...}``, each with
    ``"batch_input"``/``"batch_output"`` when a batch API's prices are known; the bundled
    table's own form (its models under ``"models"``) is taken too."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise PricesError(f"{name}: not JSON ({error})") from None
    if not isinstance(data, dict):
        raise PricesError(f'{name}: expected {{"<model>": {{"input": $, "output": $}}}}')
    table = data.get("models") if isinstance(data.get("models"), dict) else data
    prices, batch = {}, {}
    for model, entry in table.items():
        pair = _pair(entry, ("input", "output"))
        if pair is None:
            raise PricesError(
                f'{name}: model {model!r} needs {{"input": $, "output": $}} — dollars per one '
                "million tokens, numbers of 0 or more"
            )
        prices[model] = pair
        if isinstance(entry, dict) and ("batch_input" in entry or "batch_output" in entry):
            batched = _pair(entry, ("batch_input", "batch_output"))
            if batched is None:
                raise PricesError(
                    f'{name}: model {model!r}: "batch_input" and "batch_output" go together, '
                    "dollars per one million tokens, numbers of 0 or more"
                )
            batch[model] = batched
    return Prices(prices, _basis(data, name), batch)


def _pair(entry: object, keys: tuple[str, str]) -> tuple[float, float] | None:
    values = [entry.get(k) if isinstance(entry, dict) else None for k in keys]
    if not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < math.inf
        for v in values
    ):
        return None
    return float(values[0]), float(values[1])  # type: ignore[arg-type]


def _basis(data: dict[str, object], name: str) -> str:
    """Where the prices come from: the file, and the source and date it names."""
    version, retrieved = data.get("source_version"), data.get("retrieved", data.get("as_of"))
    said = [version] if isinstance(version, str) else []
    said += [f"as of {retrieved}"] if isinstance(retrieved, str) else []
    return f"{name}, {', '.join(said)}" if said else name


@cache
def bundled() -> Prices:
    """The table shipped with taguru-ray (its source's prices on its `retrieved` date)."""
    text = resources.files("taguru_ray.pricing").joinpath("prices.json").read_text("utf-8")
    return load_prices(text, BUNDLED)
