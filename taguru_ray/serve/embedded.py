"""``--store DIR``: an embedded store served in-process for one run (`benchmark search
--store`, `jobs/gate.py --store`).

Rather than a second code path that calls the store directly, the run starts
`taguru_ray.serve` (writable, no keys) on a loopback port 0 in a background thread
and talks to it with the same `TaguruClient` as any server: import, the ownership
check and search go over the same wire, so ``--store`` and ``--url`` measure the
same thing. The server lives for the ``with`` block; the folder is created if
missing, and the store embeds with ``TAGURU_EMBED_*`` as ``taguru-ray serve`` does.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from taguru_ray.context.embeddings import embedder_from_env
from taguru_ray.context.store import SqliteStore
from taguru_ray.errors import StartupError, UsageError
from taguru_ray.serve import ServeConfig, serve

LOOPBACK = "127.0.0.1"
START_SECONDS = 30.0


@contextmanager
def embedded_server(folder: str, environ: Mapping[str, str]) -> Iterator[str]:
    """Serve the store at `folder` on loopback; yields its base URL.

    UsageError (exit 2) for a folder that is not a local directory or holds no usable
    store, or a malformed ``TAGURU_EMBED_*``; StartupError (exit 1) if the server does
    not come up.
    """
    if "://" in folder:
        raise UsageError(f"--store {folder}: must be a local folder (not a URL)")
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--store {folder}: not a folder")
    try:
        embedder = embedder_from_env(environ)
    except ValueError as error:
        raise UsageError(str(error)) from None
    try:
        path.mkdir(parents=True, exist_ok=True)
        store = SqliteStore(path, create=True, embedder=embedder)
    except Exception as error:  # the store names what is wrong with the folder
        raise UsageError(f"--store {folder}: not a context store: {error}") from None
    server = _Thread(store)
    try:
        yield server.start()
    finally:
        server.stop()
        store.close()


class _Thread:
    """`serve` on its own event loop in a daemon thread, stopped through its event."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self.ready = threading.Event()
        self.port: int | None = None
        self.error: BaseException | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stop_event: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._run, name="taguru-embedded", daemon=True)

    def start(self) -> str:
        self.thread.start()
        if not self.ready.wait(START_SECONDS) or self.port is None:
            raise StartupError(f"the embedded server did not start: {self.error or 'timed out'}")
        return f"http://{LOOPBACK}:{self.port}"

    def stop(self) -> None:
        if self.loop is not None and self.stop_event is not None:
            self.loop.call_soon_threadsafe(self.stop_event.set)
        self.thread.join(START_SECONDS)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # reported by start(); the thread just ends
            self.error = error
        finally:
            self.ready.set()

    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.stop_event = asyncio.Event()
        config = ServeConfig(writable=True)
        await serve(
            self.store, LOOPBACK, 0, config=config, on_ready=self._ready, stop=self.stop_event
        )

    def _ready(self, _host: str, port: int) -> None:
        self.port = port
        self.ready.set()
