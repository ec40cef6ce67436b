"""Attempt numbering: `attempt_seq` is run-wide, in issue order (CONTRACT.md section 4)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class AttemptNumbers:
    """The run's attempt counter, held by the gateway actor beside the permits."""

    issued: int = 0

    def next(self) -> int:
        self.issued += 1
        return self.issued

    def take(self, count: int) -> int:
        """Number `count` attempts in a row; the first one's number."""
        first = self.issued + 1
        self.issued += count
        return first
