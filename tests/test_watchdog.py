"""The workers' watchdog (engine/watchdog.py) on fake workers: who is restarted, when."""

from __future__ import annotations

import asyncio
from typing import Any

import ray

from taguru_ray.engine import watchdog as watchdog_module
from taguru_ray.engine.watchdog import Watchdog

HANG = 0.5  # wide enough for a busy machine: a prompt answer takes no time
NEVER = None
DIED = "died"  # the question fails: Ray reports the worker dead or restarting


class FakeWorker:
    """Answers its questions after the given delays in turn (the last one repeats; NEVER:
    no answer). A restart starts over with `after_restart`."""

    def __init__(
        self, *delays: float | str | None, after_restart: tuple[float | str | None, ...] = (0.0,)
    ) -> None:
        self._delays = list(delays)
        self._after_restart = after_restart
        self.restarts = 0
        self.alive = self

    def remote(self) -> Any:
        delay = self._delays.pop(0) if len(self._delays) > 1 else self._delays[0]
        return self._answer(delay)

    async def _answer(self, delay: float | str | None) -> bool:
        if delay == DIED:
            raise ray.exceptions.ActorDiedError()
        if delay is None:
            await asyncio.Event().wait()
        await asyncio.sleep(delay or 0)
        return True

    def restart(self) -> None:
        self.restarts += 1
        self._delays = list(self._after_restart)

    def freeze(self) -> None:
        self._delays = [NEVER]


async def _watch(workers: list[FakeWorker], seconds: float) -> list[str]:
    lines: list[str] = []
    dog = Watchdog(workers, HANG, lines.append, restart=lambda worker: worker.restart())
    dog.busy = [1] * len(workers)
    task = asyncio.create_task(dog.run())
    await asyncio.sleep(seconds)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return lines


def test_a_worker_that_falls_silent_is_restarted_and_an_answering_one_is_left_alone() -> None:
    silent, fine = FakeWorker(0.0, NEVER), FakeWorker(0.0)
    lines = asyncio.run(_watch([silent, fine], 2.0))
    assert (silent.restarts, fine.restarts) == (1, 0)
    assert len(lines) == 1 and "segment worker 0 has not answered for 0.5 s" in lines[0]


def test_a_worker_slow_to_start_is_not_restarted() -> None:
    # Its first answer takes five hangs (a busy node importing), then it answers at once.
    slow_start = FakeWorker(5 * HANG, 0.0)
    asyncio.run(_watch([slow_start], 4.0))
    assert slow_start.restarts == 0


def test_a_restarted_worker_slow_to_come_up_is_not_restarted_again() -> None:
    worker = FakeWorker(0.0, NEVER, after_restart=(5 * HANG, 0.0))
    asyncio.run(_watch([worker], 5.0))
    assert worker.restarts == 1


def test_once_up_a_restarted_worker_that_freezes_again_is_restarted_again() -> None:
    worker = FakeWorker(0.0, NEVER)

    async def scenario() -> None:
        dog = Watchdog([worker], HANG, lambda line: None, restart=lambda w: w.restart())
        dog.busy = [1]
        task = asyncio.create_task(dog.run())
        await asyncio.sleep(2.0)
        assert worker.restarts == 1
        worker.freeze()
        await asyncio.sleep(2.0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    assert worker.restarts == 2


def test_a_worker_that_never_comes_up_is_judged_after_the_startup_bound(monkeypatch: Any) -> None:
    monkeypatch.setattr(watchdog_module, "STARTUP_S", 1.0)
    never = FakeWorker(NEVER, after_restart=(NEVER,))
    asyncio.run(_watch([never], 4.5))
    assert never.restarts >= 2


def test_an_idle_worker_is_never_asked() -> None:
    idle = FakeWorker(0.0, NEVER)

    async def scenario() -> None:
        dog = Watchdog([idle], HANG, lambda line: None, restart=lambda w: w.restart())
        task = asyncio.create_task(dog.run())  # busy stays [0]
        await asyncio.sleep(2.0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    assert idle.restarts == 0


def test_a_worker_ray_restarts_on_its_own_is_given_its_time_to_come_up() -> None:
    # Up, then its process crashes: Ray says so once, and its successor takes five
    # hangs to answer. The watchdog restarts nothing itself.
    crashed = FakeWorker(0.0, DIED, 5 * HANG, 0.0)
    lines = asyncio.run(_watch([crashed], 5.0))
    assert crashed.restarts == 0 and lines == []
