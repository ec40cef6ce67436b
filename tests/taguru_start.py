"""Start `taguru-ray serve` the way Taguru's own test harness starts Taguru.

As the reference SDK's `SpawnedServer` does: no arguments; the caller's
environment minus every `TAGURU_*` and `OTEL_*` key, then `TAGURU_ADDR=127.0.0.1:0`,
`TAGURU_DATA_DIR=<folder>`, `TAGURU_FLUSH_SECS=1` and the extra variables; the base
URL read from the `listening on HOST:PORT` line of stdout.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.test_serve_cli import REPO, SERVE, running

ADMIN, READER = "test-admin-token", "test-reader-token"
SESSION_ENV = {
    "TAGURU_API_TOKENS": f"admin:{ADMIN},reader:{READER}",
    "TAGURU_KEY_SCOPES": '{"reader": "read"}',
    "TAGURU_FLUSH_SECS": "3600",
}


def taguru_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TAGURU_", "OTEL_"))}
    env.update(PYTHONPATH=str(REPO), TAGURU_ADDR="127.0.0.1:0", TAGURU_DATA_DIR=str(data_dir),
               TAGURU_FLUSH_SECS="1")  # fmt: skip
    env.update(extra)
    return env


@contextmanager
def spawned(data_dir: Path, **extra: str) -> Iterator[str]:
    """The base URL of a server started only by variables; killed after the block."""
    with running(*SERVE, env=taguru_env(data_dir, **extra)) as (_, base):
        yield base


def client(base: str, token: str | None = ADMIN) -> httpx.Client:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return httpx.Client(base_url=base, headers=headers, timeout=30)
