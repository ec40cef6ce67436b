"""`Replica`: the Ray actor that holds one replica's GPUs and runs its model server.

Ray places it on a node with the GPUs it asks for (`num_gpus`, and the
accelerator type when one is named) and gives it those GPUs
(`CUDA_VISIBLE_DEVICES`), which the server inherits. The actor reserves them
for as long as it lives; ending it gives them back. It does not restart on its
own (`max_restarts=0`): a lost replica is replaced by the driver's fleet
(`fleet.py`), which knows where the new one listens and tells the gateway.

Its calls, in the order the fleet makes them:

- `where` — answered once Ray has placed it: the node, its address and the GPU
  type the node declares (read from the node, never taken from the settings);
- `start` — the server under its guard, asked its health path until it answers
  (`Started`, with the version it states) or until the start deadline, or until
  it exits (`NotStarted`, with its log's last lines);
- `watch` — returns when the server is gone (it exited, or stopped answering its
  health path): `Gone`, with its log's last lines;
- `stop` — the server ended (SIGTERM, its grace, SIGKILL), then the actor may go.

A replica whose actor dies (its node taken back, the driver gone) takes the
server with it: the guard sees its parent go and ends the server's process
group (`guard.py`).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from dataclasses import dataclass

import aiohttp
import ray

from taguru_ray.contract.engines import ServerSpec
from taguru_ray.engine.replicas.server import Server, free_port, url_host
from taguru_ray.engine.replicas.words import ACCELERATOR_PREFIX

ACCELERATOR_LABEL = "ray.io/accelerator-type"
POLL_S = 0.5  # between health questions while a server starts
WATCH_S = 2.0  # between health questions while it serves
MISSES = 3  # health questions in a row unanswered: the server is gone


@dataclass(frozen=True)
class Placed:
    """Where Ray put a replica."""

    node_id: str
    node_ip: str
    accelerator: str | None  # the node's Ray accelerator type, as the node declares it


@dataclass(frozen=True)
class Started:
    """A server that answers: its OpenAI base URL and what it said of itself."""

    url: str  # http://HOST:PORT/v1
    version: str | None
    seconds: float  # from spawn to the first healthy answer
    log: str  # the log file on its node


@dataclass(frozen=True)
class NotStarted:
    """A server that never answered: why, and its log's last lines."""

    why: str
    tail: tuple[str, ...]
    log: str


@dataclass(frozen=True)
class Gone:
    """A server that stopped serving: why, and its log's last lines."""

    why: str
    tail: tuple[str, ...]


def log_path(run_id: str, index: int, generation: int) -> str:
    """Where replica `index`'s `generation`-th server logs, on its node."""
    folder = os.path.join(tempfile.gettempdir(), "taguru-ray-engine", run_id)
    return os.path.join(folder, f"replica-{index}.{generation}.log")


def node_accelerator(node_id: str) -> str | None:
    """The Ray accelerator type of node `node_id`: its `accelerator_type:X` resource (Ray
    sets it from the GPUs it detects; a cluster may declare it), else its label."""
    for node in ray.nodes():
        if node.get("NodeID") != node_id:
            continue
        found = sorted(
            key.removeprefix(ACCELERATOR_PREFIX)
            for key in (node.get("Resources") or {})
            if key.startswith(ACCELERATOR_PREFIX)
        )
        if found:
            return ", ".join(found)
        label = (node.get("Labels") or {}).get(ACCELERATOR_LABEL)
        return str(label) if label else None
    return None


@ray.remote(num_cpus=0, max_concurrency=8, max_restarts=0)
class Replica:
    def __init__(
        self, index: int, generation: int, spec: ServerSpec, run_id: str, start_secs: float
    ) -> None:
        self._index = index
        self._spec = spec
        self._start_secs = start_secs
        context = ray.get_runtime_context()
        self._placed = Placed(
            context.get_node_id(),
            ray.util.get_node_ip_address(),
            node_accelerator(context.get_node_id()),
        )
        self._log = log_path(run_id, index, generation)
        self._server: Server | None = None
        self._http: aiohttp.ClientSession | None = None

    def _session(self) -> aiohttp.ClientSession:
        # Made in the actor's event loop, on first use; no proxy between it and its server.
        if self._http is None:
            self._http = aiohttp.ClientSession(trust_env=False)
        return self._http

    async def where(self) -> Placed:
        return self._placed

    async def start(self) -> Started | NotStarted:
        """Spawn the server and wait for its health path; never longer than the deadline."""
        host = self._placed.node_ip
        server = self._server = Server(self._spec, host, free_port(host), self._log)
        try:
            server.start()
        except OSError as error:  # the guard itself: a full disk, no such interpreter
            return NotStarted(f"could not be spawned ({error})", (), self._log)
        health = self._spec.kind.health
        deadline = server.started_at + self._start_secs
        http = self._session()
        while True:
            code = server.exited()
            if code is not None:
                why = f"{self._spec.program} exited with {code} before {health} answered"
                return NotStarted(why, tuple(server.tail()), self._log)
            if await server.healthy(http):
                break
            if time.monotonic() >= deadline:
                await server.stopped()
                why = (
                    f"{health} did not answer within {self._start_secs:g} s of its start "
                    "(TAGURU_RAY_ENGINE_START_SECS)"
                )
                return NotStarted(why, tuple(server.tail()), self._log)
            await asyncio.sleep(POLL_S)
        seconds = time.monotonic() - server.started_at
        version = await server.version(http)
        return Started(f"http://{url_host(host)}:{server.port}/v1", version, seconds, self._log)

    async def watch(self) -> Gone:
        """Return once the server is gone: it exited, or MISSES health questions in a row
        went unanswered (it is then stopped, so its GPUs can be given back whole)."""
        server = self._server
        if server is None:
            return Gone("it was never started", ())
        http = self._session()
        misses = 0
        while True:
            await asyncio.sleep(WATCH_S)
            code = server.exited()
            if code is not None:
                return Gone(f"{self._spec.program} exited with {code}", tuple(server.tail()))
            if await server.healthy(http):
                misses = 0
                continue
            misses += 1
            if misses >= MISSES:
                await server.stopped()
                why = f"{self._spec.program} stopped answering {self._spec.kind.health}"
                return Gone(why, tuple(server.tail()))

    async def stop(self) -> int | None:
        """End the server (its in-flight requests get its grace to finish); its exit code."""
        code = await self._server.stopped() if self._server is not None else None
        if self._http is not None:
            await self._http.close()
            self._http = None
        return code

    async def server_pid(self) -> int | None:
        """The guard's pid, whose child the server is (for tests and `ps`)."""
        return self._server.pid if self._server is not None else None
