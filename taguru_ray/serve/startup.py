"""How `taguru-ray serve` reads the variables a Taguru server is started with.

A harness written for Taguru starts the executable with no arguments and sets
`TAGURU_ADDR` (HOST:PORT, default 127.0.0.1:8248; port 0 picks a free one),
`TAGURU_DATA_DIR` (default ./data: a missing or empty folder becomes a store, a
folder holding anything but a store is refused — it may be a real Taguru's data),
the keys (auth.py), `TAGURU_RATE_LIMIT_PER_MIN` (per key; 0 or unset = off) and
`TAGURU_MAX_BODY_BYTES`. Started that way the server is writable, as Taguru is;
`--store DIR` keeps the read-only default (`--writable` opens it). Variables that
tune only the reference's own persistence (`TAGURU_FLUSH_SECS`, `TAGURU_WAL`, …)
are accepted and have nothing to tune here: every write commits when answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from taguru_ray.context.schema import FILE_NAME
from taguru_ray.contract.server_variables import ADDR, DATA_DIR, RATE_LIMIT_PER_MIN

DEFAULT_HOST, DEFAULT_PORT, DEFAULT_DATA_DIR = "127.0.0.1", 8248, "./data"


class StartupError(ValueError):
    """A variable that cannot start the server; the message names it and the fix."""


class Listen(BaseModel):
    model_config = ConfigDict(frozen=True)

    host: str
    port: int


def listen_address(env: Mapping[str, str]) -> Listen:
    """`TAGURU_ADDR` as HOST:PORT (`[::1]:0` for IPv6), else the reference's default."""
    raw = env.get(ADDR, "").strip()
    if not raw:
        return Listen(host=DEFAULT_HOST, port=DEFAULT_PORT)
    host, colon, port = raw.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        raise StartupError(f"{ADDR}={raw!r} is not HOST:PORT (e.g. 127.0.0.1:8248, port 0 = any)")
    return Listen(host=host, port=int(port))


def data_dir(env: Mapping[str, str]) -> Path:
    """`TAGURU_DATA_DIR` made ready to hold a store: created if missing; refused when it
    is not a folder, or holds files and no store (never write beside foreign data)."""
    folder = Path(env.get(DATA_DIR) or DEFAULT_DATA_DIR)
    if folder.exists() and not folder.is_dir():
        raise StartupError(f"{DATA_DIR}={folder}: not a folder")
    if folder.is_dir() and not (folder / FILE_NAME).is_file() and any(folder.iterdir()):
        raise StartupError(
            f"{DATA_DIR}={folder}: the folder holds files but no taguru-ray store "
            f"({FILE_NAME}) — give an empty folder, or the store's own"
        )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def rate_limit(env: Mapping[str, str]) -> int:
    text = env.get(RATE_LIMIT_PER_MIN, "").strip()
    if not text:
        return 0
    if not text.isdigit():
        raise StartupError(f"{RATE_LIMIT_PER_MIN} must be a whole number >= 0, got {text!r}")
    return int(text)
