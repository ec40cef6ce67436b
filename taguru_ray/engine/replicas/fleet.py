"""The driver's part for `--engine`: the run's own replicas, from start to stop.

A part of the run like the gateway (ADR 0080): `ExtractRun` starts it before the
first request, hands the gateway its replicas' URLs as the run's endpoints, lets
it watch them while the run goes, and stops it however the run ends.

- **start**: one `Replica` actor per replica, each asking Ray for its GPUs (and
  the accelerator type, when one is named) and spread over the nodes. Ray places
  it when a node has them free; until then the run says, now and then, which GPUs
  it waits for (an autoscaler may be adding the node). A run on a Ray it started
  itself — no autoscaler — that has too few GPUs is one line, at once. Once
  placed, the server starts and is asked its health path until it answers or the
  start deadline passes; a replica that cannot start ends the run before any
  request with one line holding its log's last lines (`StartupError`, exit 1).
- **watch**: each replica's actor returns from `watch` when its server is gone
  (it exited, or stopped answering); an actor that dies (its node taken back)
  fails the call — which Ray says only once it has declared the node dead, so
  the driver also asks each server's health path itself, and MISSES answers
  missed in a row are as good as a death. Either way the replica is **lost**:
  its endpoint is retired at the gateway, the workers abandon its requests on
  the wire (asked again at once on the replicas up — nothing checkpointed is
  asked again), its actor is ended (its GPUs given back), and another is
  started wherever Ray finds the GPUs; it joins the gateway as a new endpoint
  when it answers. A replacement that cannot
  start is tried STARTS_IN_A_ROW times, then stops the run (exit 1, its line).
- **stop**: every server ended (SIGTERM, then its grace), every actor killed —
  its GPUs given back. The run calls it once nothing is in flight (the end, a
  Ctrl+C's drain, a failure); a driver that dies without calling it leaves the
  guards to end the servers when Ray reaps its actors (`guard.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import ray

from taguru_ray.contract.engines import ServerSpec, split_args, split_template
from taguru_ray.contract.records.sidecar import EngineRecord
from taguru_ray.engine.replicas.actor import (
    MISSES,
    WATCH_S,
    NotStarted,
    Placed,
    Started,
)
from taguru_ray.engine.replicas.server import answers
from taguru_ray.engine.replicas.words import (
    Ledger,
    SlotView,
    Start,
    accelerator_types,
    death,
    lost_line,
    no_gpu_line,
    not_started_line,
    progress_words,
    starting_line,
    up_line,
    waiting_line,
)
from taguru_ray.errors import MESSAGE_PREFIX, StartupError
from taguru_ray.settings import Settings

STARTS_IN_A_ROW = 3  # a replacement that cannot start this often stops the run
WAIT_LINE_S = 15.0  # a replica not placed by then is said to wait, and again every
WAIT_AGAIN_S = 60.0
POLL_S = 0.5  # how often a start looks whether the run was stopped meanwhile
STOP_WAIT_S = 20.0  # the servers' grace and then some, before their actors are killed
REPLICA_DEATHS = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)


class EngineFailed(StartupError):
    """A replica could not start: the line names it, with its log's last lines."""


@dataclass
class Slot:
    """One replica of the run: the server in it now, and how it came to be."""

    index: int
    generation: int = 0
    actor: Any = None
    state: str = "placing"  # placing | starting | up | lost | stopped
    since: float = 0.0
    node: str | None = None
    url: str | None = None
    endpoint: int | None = None  # its index at the gateway while up


async def _resolved(ref: Any) -> Any:
    return await ref


class Fleet:
    def __init__(self, settings: Settings, run_id: str, say: Callable[[str], None]) -> None:
        serving = settings.serving
        assert serving.engine is not None
        command = split_template(serving.engine_command) if serving.engine_command else ()
        self.spec = ServerSpec(
            serving.engine,
            settings.transport.model,
            serving.engine_gpus,
            split_args(serving.engine_args),
            command,
        )
        self.accelerator = serving.engine_accelerator
        self._start_secs = serving.engine_start_secs
        self.own_ray = False  # the run started its Ray: no autoscaler will add a GPU
        self._run_id = run_id
        self._say = lambda line: say(f"{MESSAGE_PREFIX}{line}")  # every line of extract's
        self.slots = [Slot(index) for index in range(serving.engine_replicas)]
        self.ledger = Ledger()
        self.started = False
        self._gateway: Any = None
        self._abandon: Callable[[int], None] = lambda endpoint: None
        self._fatal: Callable[[str], None] = lambda line: None
        self._watching: list[asyncio.Task[None]] = []
        self._stopping = False

    @property
    def urls(self) -> list[str]:
        """The replicas' OpenAI base URLs, in replica order, while up."""
        return [slot.url for slot in self.slots if slot.url is not None]

    async def start(self, stopped: Callable[[], bool]) -> list[str]:
        """Every replica placed, started and answering: their URLs. An empty list when the
        run was stopped meanwhile (`stopped`); `EngineFailed` when one could not start."""
        self._check_local()
        self._say(starting_line(self.spec, len(self.slots), self.accelerator))
        tasks = [asyncio.ensure_future(self._bring_up(slot, again=False)) for slot in self.slots]
        try:
            while not all(task.done() for task in tasks):
                done, _ = await asyncio.wait(tasks, timeout=POLL_S)
                for task in done:
                    if task.exception() is not None:
                        raise task.exception()  # type: ignore[misc]
                if stopped():
                    return []
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self.started = True
        return self.urls

    def _check_local(self) -> None:
        """On a Ray this run started (no autoscaler), too few GPUs for every replica at once
        is one line, at once: a replica that does not fit would wait for ever."""
        gpus = self.spec.gpus
        if not self.own_ray or (gpus == 0 and not self.accelerator):
            return
        total = ray.cluster_resources()
        types = accelerator_types(total)
        found = total.get("GPU", 0.0)
        fits = found >= gpus * len(self.slots)
        if self.accelerator:
            fits = fits and self.accelerator in types
        if not fits:
            line = no_gpu_line(gpus, len(self.slots), self.accelerator, found, types)
            raise EngineFailed(line)

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"num_gpus": self.spec.gpus, "scheduling_strategy": "SPREAD"}
        if self.accelerator:
            options["accelerator_type"] = self.accelerator
        return options

    async def _bring_up(self, slot: Slot, *, again: bool) -> None:
        """A server in `slot`, answering; `EngineFailed` when it cannot start (a first start
        at once, a replacement after STARTS_IN_A_ROW tries)."""
        from taguru_ray.engine.replicas.actor import Replica

        failures = deaths = 0
        while True:
            slot.generation += 1
            slot.url, slot.node = None, None
            slot.actor = Replica.options(**self._options()).remote(
                slot.index, slot.generation, self.spec, self._run_id, self._start_secs
            )
            self._enter(slot, "placing")
            try:
                placed = await self._placed(slot)
                slot.node = placed.node_ip
                self._enter(slot, "starting")
                result: Started | NotStarted = await slot.actor.start.remote()
            except REPLICA_DEATHS as error:
                # Its node went while it started (spot), or its actor could not be made at
                # all: the one is tried again, the other would be for ever.
                self._kill(slot.actor)
                deaths += 1
                if deaths >= STARTS_IN_A_ROW:
                    raise EngineFailed(
                        f"--engine {self.spec.engine}: replica {slot.index} could not start: "
                        f"its actor died {deaths} times in a row ({death(error)})"
                    ) from None
                self._say(
                    f"engine: replica {slot.index} was lost while starting "
                    f"({death(error)}); starting another"
                )
                continue
            except ray.exceptions.RayTaskError as error:  # `start` itself failed
                why = f"its actor failed ({death(error.cause or error)})"
                result = NotStarted(why, (), "(no log)")
            if isinstance(result, NotStarted):
                self._kill(slot.actor)
                where = f"{slot.node or 'its node'}:{result.log}"
                line = not_started_line(self.spec, slot.index, result.why, result.tail, where)
                failures += 1
                if not again or failures >= STARTS_IN_A_ROW:
                    raise EngineFailed(line)
                self._say(f"engine: {line} — trying again ({failures} of {STARTS_IN_A_ROW})")
                continue
            slot.url = result.url
            self._enter(slot, "up")
            self.ledger.starts.append(
                Start(
                    slot.index,
                    slot.generation,
                    placed.node_ip,
                    placed.accelerator,
                    result.version,
                    result.seconds,
                )
            )
            self._say(
                up_line(slot.index, placed.node_ip, placed.accelerator, result.seconds, again)
            )
            return

    async def _placed(self, slot: Slot) -> Placed:
        """Where Ray put the slot's actor; a line now and then while no node has its GPUs."""
        waiting = asyncio.ensure_future(_resolved(slot.actor.where.remote()))
        try:
            wait = WAIT_LINE_S
            while True:
                done, _ = await asyncio.wait({waiting}, timeout=wait)
                if done:
                    placed: Placed = waiting.result()
                    return placed
                seen = accelerator_types(ray.cluster_resources())
                self._say(
                    waiting_line(
                        slot.index,
                        self.spec.gpus,
                        self.accelerator,
                        time.monotonic() - slot.since,
                        seen,
                    )
                )
                wait = WAIT_AGAIN_S
        finally:
            waiting.cancel()

    def attach(
        self,
        gateway: Any,
        abandon: Callable[[int], None],
        fatal: Callable[[str], None],
    ) -> None:
        """Watch the replicas now the gateway has them as its endpoints 0..N-1: `abandon`
        ends the workers' requests on a lost one's endpoint, `fatal` stops the run."""
        self._gateway, self._abandon, self._fatal = gateway, abandon, fatal
        for index, slot in enumerate(self.slots):
            slot.endpoint = index
        self._watching = [asyncio.create_task(self._watch(slot)) for slot in self.slots]

    async def _watch(self, slot: Slot) -> None:
        while not self._stopping:
            why, tail = await self._gone(slot)
            if self._stopping:
                return
            await self._replace(slot, why, tail)

    async def _gone(self, slot: Slot) -> tuple[str, tuple[str, ...]]:
        """Why `slot`'s replica is lost, once it is: its actor's word (its server exited or
        stopped answering, with its log's last lines), its actor's death, or — first when
        its node vanished — its server unanswered from here."""
        watching = asyncio.ensure_future(_resolved(slot.actor.watch.remote()))
        probing = asyncio.ensure_future(self._unanswered(slot))
        try:
            await asyncio.wait({watching, probing}, return_when=asyncio.FIRST_COMPLETED)
            if probing.done():
                return probing.result(), ()
            try:
                gone = watching.result()
            except REPLICA_DEATHS as error:
                return f"its actor died: {death(error)}", ()
            except ray.exceptions.RayError as error:  # `watch` failed: as good as lost
                return f"its actor failed: {death(error)}", ()
            return gone.why, gone.tail
        finally:
            watching.cancel()
            probing.cancel()

    async def _unanswered(self, slot: Slot) -> str:
        """Return once `slot`'s server missed MISSES health questions in a row from here."""
        url = (slot.url or "").removesuffix("/v1") + self.spec.kind.health
        misses = 0
        async with aiohttp.ClientSession(trust_env=False) as http:  # cluster addresses: direct
            while misses < MISSES:
                await asyncio.sleep(WATCH_S)
                misses = 0 if await answers(http, url) else misses + 1
        return f"its server stopped answering {self.spec.kind.health} at {url}"

    async def _replace(self, slot: Slot, why: str, tail: tuple[str, ...]) -> None:
        """Retire the lost replica's endpoint, abandon its requests, start another."""
        self._enter(slot, "lost")
        self.ledger.lost += 1
        self._say(lost_line(slot.index, why, tail))
        if slot.endpoint is not None:
            with contextlib.suppress(ray.exceptions.RayError):
                await self._gateway.retire_endpoint.remote(slot.endpoint)
            self._abandon(slot.endpoint)
            slot.endpoint = None
        self._kill(slot.actor)  # its GPUs back to Ray, for the one that replaces it
        try:
            await self._bring_up(slot, again=True)
        except EngineFailed as failed:
            self._fatal(str(failed))
            return
        with contextlib.suppress(ray.exceptions.RayError):
            slot.endpoint = await self._gateway.add_endpoint.remote(slot.url)

    def _enter(self, slot: Slot, state: str) -> None:
        slot.state, slot.since = state, time.monotonic()

    @staticmethod
    def _kill(actor: Any) -> None:
        if actor is not None:
            with contextlib.suppress(Exception):  # already gone is as good as ended
                ray.kill(actor, no_restart=True)

    def words(self) -> str | None:
        """The progress line's part while a replica is not up (None when all are)."""
        if not self.started or self._stopping:
            return None
        now = time.monotonic()
        views = [SlotView(s.index, s.state, now - s.since, s.node) for s in self.slots]
        return progress_words(views, self.spec.gpus, self.accelerator)

    async def stop(self) -> None:
        """Every server ended and every actor killed; nothing of the engine outlives it."""
        self._stopping = True
        for task in self._watching:
            task.cancel()
        await asyncio.gather(*self._watching, return_exceptions=True)
        actors = [slot.actor for slot in self.slots if slot.actor is not None]
        # A replica Ray has placed has a server to end; one still waiting for its GPUs has
        # none, and its call would wait for a node that may never come.
        placed = [slot.actor for slot in self.slots if slot.actor is not None and slot.node]
        calls = [asyncio.ensure_future(_resolved(actor.stop.remote())) for actor in placed]
        if calls:
            await asyncio.wait(calls, timeout=STOP_WAIT_S)
        for call in calls:
            call.cancel()
        for actor in actors:
            self._kill(actor)
        for slot in self.slots:
            slot.actor = None
            self._enter(slot, "stopped")

    def record(self, run_id: str) -> EngineRecord:
        """The sidecar's `engine` record."""
        return self.ledger.record(run_id, self.spec, len(self.slots), self.accelerator)

    def summary(self) -> str | None:
        """The closing line on the engine, once a replica ever answered."""
        if not self.ledger.starts:
            return None
        return self.ledger.summary(self.spec, len(self.slots))
