"""The segment workers' watchdog: a worker that stops answering is restarted.

Ray notices a worker process that dies, and the driver resubmits its segments
(ADR 0010). A process that is alive but no longer answers is another matter:
frozen, swapped out for good, or on a node cut off without Ray declaring it
dead. Its segments would be waited on for ever. So while a worker holds
segments, the driver asks it a trivial question now and then; a worker silent
for `TAGURU_RAY_WORKER_HANG_SECS` is killed and restarted through Ray, which
fails its segments as a death would, and the driver resubmits them to resume
from their checkpoints. One line names it. A request slow at the endpoint
never trips it: the worker's event loop answers while its requests wait.

A worker is judged only once it has answered, when it first starts and after
each restart: starting a process (imports, Ray's registration) on a busy node
can take longer than the hang, and a worker killed for being slow to start
would be killed for ever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import ray

from taguru_ray.engine.segment import FAILURE_PREFIX

LONGEST_PAUSE = 10.0  # seconds between rounds of questions, at the most
STARTUP_S = 120.0  # a (re)started worker's time to come up before it is judged
RETRY_S = 0.5  # between questions to a worker Ray still reports unavailable


class Watchdog:
    def __init__(
        self,
        workers: list[Any],
        hang_seconds: float,
        say: Callable[[str], None],
        restart: Callable[[Any], None] = lambda worker: ray.kill(worker, no_restart=False),
    ) -> None:
        self._workers = workers
        self._hang = hang_seconds  # 0: off
        self._say = say
        self._restart = restart
        self.busy = [0] * len(workers)  # segments each worker holds now
        self._starting: dict[int, asyncio.Task[None]] = {}  # (re)started, not yet answering

    async def run(self) -> None:
        """Watch until cancelled (the run's end)."""
        if not self._hang:
            return
        # A worker is judged once it has answered: the first start counts as a restart.
        for index in range(len(self._workers)):
            self._starting[index] = asyncio.create_task(self._come_up(index))
        try:
            while True:
                await asyncio.sleep(min(self._hang / 4, LONGEST_PAUSE))
                await asyncio.gather(*(self._check(i) for i in range(len(self._workers))))
        finally:
            for task in list(self._starting.values()):
                task.cancel()

    async def _check(self, index: int) -> None:
        if not self.busy[index] or index in self._starting:
            return  # idle, or still coming up after a (re)start
        worker = self._workers[index]
        try:
            await asyncio.wait_for(worker.alive.remote(), self._hang)
        except TimeoutError:
            if not self.busy[index]:
                return  # its segments came back meanwhile
            self._say(
                f"{FAILURE_PREFIX}segment worker {index} has not answered for "
                f"{self._hang:g} s (TAGURU_RAY_WORKER_HANG_SECS); restarting it — its "
                "segments are resubmitted and resume from their checkpoints"
            )
            self._restart(worker)
            self._starting[index] = asyncio.create_task(self._come_up(index))
        except ray.exceptions.RayError:
            # Dead or restarting already (a crash, a lost node): the driver resubmits its
            # segments, and its successor is judged once up, as after a restart of ours.
            self._starting[index] = asyncio.create_task(self._come_up(index))

    async def _come_up(self, index: int) -> None:
        """Wait until the (re)started worker answers (or `STARTUP_S` passes); until then
        it is not judged. After a restart, the first questions may still reach the
        instance being killed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STARTUP_S
        try:
            while (left := deadline - loop.time()) > 0:
                try:
                    await asyncio.wait_for(self._workers[index].alive.remote(), left)
                    return
                except TimeoutError:
                    return
                except ray.exceptions.RayError:
                    await asyncio.sleep(RETRY_S)
        finally:
            self._starting.pop(index, None)
