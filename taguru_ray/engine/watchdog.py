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
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import ray

from taguru_ray.engine.segment import FAILURE_PREFIX

LONGEST_PAUSE = 10.0  # seconds between rounds of questions, at the most


class Watchdog:
    def __init__(self, workers: list[Any], hang_seconds: float, say: Callable[[str], None]) -> None:
        self._workers = workers
        self._hang = hang_seconds  # 0: off
        self._say = say
        self.busy = [0] * len(workers)  # segments each worker holds now
        self._restarted: dict[int, float] = {}  # worker -> when the watchdog restarted it

    async def run(self) -> None:
        """Watch until cancelled (the run's end)."""
        if not self._hang:
            return
        while True:
            await asyncio.sleep(min(self._hang / 4, LONGEST_PAUSE))
            await asyncio.gather(*(self._check(i) for i in range(len(self._workers))))

    async def _check(self, index: int) -> None:
        now = asyncio.get_running_loop().time()
        if not self.busy[index] or now - self._restarted.get(index, -self._hang) < self._hang:
            return  # idle, or given its restart's time
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
            self._restarted[index] = asyncio.get_running_loop().time()
            ray.kill(worker, no_restart=False)
        except ray.exceptions.RayError:
            return  # dead or restarting already: the driver resubmits its segments
