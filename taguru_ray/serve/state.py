"""What one server holds: its settings, the store, the reader pool and the import lock,
and the keys its middlewares leave on a request for the handlers."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiohttp import web

from taguru_ray.context.api import ContextStore
from taguru_ray.contract.server_variables import MAX_BODY_BYTES
from taguru_ray.serve.auth import Keyring, Scope
from taguru_ray.serve.deadlines import BODY_READ_SECONDS, HEADER_READ_SECONDS
from taguru_ray.serve.metrics import Metrics
from taguru_ray.serve.rate_limit import RateLimiter

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024  # the reference's TAGURU_MAX_BODY_BYTES default
DEFAULT_READERS = 32
T = TypeVar("T")


@dataclass(frozen=True)
class ServeConfig:
    writable: bool = False
    keyring: Keyring = field(default_factory=Keyring)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    readers: int = DEFAULT_READERS  # threads answering store calls at once
    header_timeout: float = HEADER_READ_SECONDS  # deadlines.py says why
    rate_limit_per_min: int = 0  # TAGURU_RATE_LIMIT_PER_MIN, per key; 0 = off
    body_timeout: float = BODY_READ_SECONDS


class ServerState:
    """Store calls run on `readers` threads, so readers are answered at once; imports
    take `import_lock` first, so they run one at a time (reads go on meanwhile)."""

    def __init__(self, store: ContextStore, config: ServeConfig) -> None:
        self.store = store
        self.config = config
        self.executor = ThreadPoolExecutor(config.readers, thread_name_prefix="taguru-serve")
        self.import_lock = asyncio.Lock()
        self.limiter = RateLimiter(config.rate_limit_per_min)
        self.metrics = Metrics()
        self.dirty: set[str] = set()  # contexts written since the last POST /flush

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, functools.partial(fn, *args, **kwargs))


STATE = web.AppKey("state", ServerState)
STARTED = web.RequestKey("started", float)  # monotonic time the request arrived
SCOPE = web.RequestKey("scope", Scope)  # the bearer key's grant (absent when auth is off)
KEY_NAME = web.RequestKey("key_name", str)


def max_body_bytes_from_env(env: Mapping[str, str]) -> int:
    text = env.get(MAX_BODY_BYTES)
    if text is None:
        return DEFAULT_MAX_BODY_BYTES
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"TAGURU_MAX_BODY_BYTES must be a whole number >= 1, got {text!r}")
    return int(text)
