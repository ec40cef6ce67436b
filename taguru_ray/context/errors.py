"""A context's refusals with their wire form (`api.ContextStore`'s failures), and the
positions a query names: what the store's modules and its interface share, below both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Namespace = Literal["concept", "label"]
Position = str | Sequence[str] | None  # a query position: one spelling, any of several, or free


@dataclass
class ContextError(Exception):
    """A refusal with its wire form: `{"status":"error","code","error",…}` at `status`."""

    status: int
    code: str
    message: str
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. an import's issues[]

    def __str__(self) -> str:
        return self.message


def no_context(name: str) -> ContextError:
    return ContextError(404, "no_context", f"context '{name}' not found")


def invalid_argument(message: str) -> ContextError:
    return ContextError(400, "invalid_argument", message)
