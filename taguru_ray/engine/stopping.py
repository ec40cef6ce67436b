"""How a run stops early: a signal, fail-fast, the budget, a lost lease.

The first SIGINT or SIGTERM stops dispatching and stops the gateway granting
permits — completions already on the wire finish and are checkpointed — and the
run exits 130; a second signal exits 130 at once. Fail-fast (an endpoint that
keeps refusing the run's requests the same way) stops it as a signal does and
exits 1 with its line, said last; a spent budget stops it to be resumed (130). A
segment whose writes were fenced (the lease lapsed) stops it too: no later
segment can be written.

A replica of the run's own engine that cannot be replaced (`engine/replicas/`)
stops it as fail-fast does: exit 1 with its line, said last.

`requested` is the one flag the other parts read: the early settling and the
dispatch loop stop taking segments, the summary says the run stopped.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Callable

import ray

from taguru_ray.engine.head_actors import HeadActors
from taguru_ray.engine.scan import Console
from taguru_ray.engine.segment import FAILURE_PREFIX
from taguru_ray.engine.workers import Workers
from taguru_ray.errors import EXIT_INTERRUPTED


class Stopping:
    def __init__(
        self,
        console: Console,
        lift: Callable[[], None],
        actors: HeadActors,
        workers: Workers,
    ) -> None:
        self.requested = False
        self.fatal: str | None = None  # fail-fast's line: the run stopped on it, exit 1
        self._console = console
        self._lift = lift  # the progress bar off the terminal, before a line of our own
        self._actors = actors
        self._workers = workers

    def trap_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # a run from a thread (the Python API in a notebook): the caller's signals
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, self._on_signal)

    def _on_signal(self) -> None:
        if self.requested:
            self._lift()
            print(f"{FAILURE_PREFIX}stopping at once (second signal)", file=sys.stderr, flush=True)
            os._exit(EXIT_INTERRUPTED)
        self.requested = True
        self._console.err(
            f"{FAILURE_PREFIX}stopping: completions in flight finish and are checkpointed, "
            "nothing new starts (a second Ctrl+C stops at once)"
        )
        self.halt()

    def halt(self) -> None:
        """Nothing new starts: the gateway refuses permits, the workers their kept ones."""
        gateway = self._actors.gateway  # a signal may come before it exists
        if gateway is not None:
            gateway.stop.remote()
        self._workers.halt()

    def lease_lost(self, source: str) -> None:
        """Segment `source` came back fenced (a lapsed lease) while the run goes on:
        nothing later can be written — stop. A stop's own interruptions (a signal, a
        budget) are said by that stop."""
        if self.requested:
            return
        self.requested = True
        self._console.err(
            f"{FAILURE_PREFIX}stopping: {source} was interrupted, and no later "
            "segment can be written in this run — rerun to resume"
        )
        self.halt()

    def engine_failed(self, line: str) -> None:
        """A lost replica could not be started again: stop, and exit 1 with `line`."""
        if self.fatal is None:
            self.fatal = line
        if not self.requested:
            self.requested = True
            self.halt()

    async def fail_fast(self) -> None:
        """Wait for the gateway's word that an endpoint keeps refusing the run's requests
        the same way (`gateway/fail_fast.py`): stop as a Ctrl+C does, and exit 1 with
        that line, said once, last — below the lines of the segments that failed on it."""
        try:
            line, code = await self._actors.gateway.tripped.remote()
        except ray.exceptions.RayError:
            return
        if code == EXIT_INTERRUPTED:  # the budget: a stop to resume, said as it happens
            self._console.err(
                f"{FAILURE_PREFIX}stopping: {line} — completions in flight finish and are "
                "checkpointed; rerun with a higher budget to resume, nothing is asked twice"
            )
        else:
            self.fatal = line
        self.requested = True
        self.halt()
