"""Credentials out of every message and record: what an endpoint echoes back is scrubbed.

A server (or a proxy in front of it) may echo the request's headers in an error
body, and an error text then travels into the failure line, the attempts log
and the sidecar. The client knows the key it sends: every text it hands on
passes through `Scrubber`, which replaces the key wherever it appears and the
value of any ``Authorization``/``api-key`` header it sees.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MASK = "«redacted credential»"
# `authorization: Bearer sk-…`, `"api-key": "…"`, `X-Api-Key=…`: the value after the name.
_HEADER = re.compile(
    r"(?i)((?:proxy-)?authorization|x-api-key|api[-_]?key)"
    r"(\"?\s*[:=]\s*\"?)((?:bearer|basic|token)\s+)?([^\s\",;}\]]+)"
)


@dataclass(frozen=True)
class Scrubber:
    secrets: tuple[str, ...] = ()

    @staticmethod
    def of(*secrets: str | None) -> Scrubber:
        # Longest first, so a secret that contains another is masked whole.
        kept = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
        return Scrubber(tuple(kept))

    def __call__(self, text: str) -> str:
        """An error text: the secrets, and any credential header's value."""
        return _HEADER.sub(lambda m: f"{m[1]}{m[2]}{m[3] or ''}{MASK}", self.secrets_in(text))

    def secrets_in(self, text: str) -> str:
        """An answer: only the secrets themselves (a model may well write "api-key: …")."""
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text
