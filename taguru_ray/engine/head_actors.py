"""The run's actors beside the driver: the gateway, the claims ledger, the diagnostics writer.

The run's state (permits, rung, claims, the sidecar) lives on the driver's node —
on a cluster, the head node — never on a spot worker that may vanish. Each actor
is named, so a worker (a restarted one too) finds it without a handle. They start
once Ray is up and the run's starting rung is known, and a run ends them whatever
way it ends (`end`): a run from Python (a notebook, a Ray task) lives on in the
caller's Ray, where an actor left behind would stay.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from taguru_ray.engine.spend import budget_of
from taguru_ray.llm.endpoint_check import Blame
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.pipeline.steer import Contribution
from taguru_ray.pricing.tariff import Tariff
from taguru_ray.settings import Settings
from taguru_ray.store.lease import LeaseLock


class HeadActors:
    def __init__(
        self, settings: Settings, run_id: str, tariff: Tariff, lock: object | None
    ) -> None:
        self._settings = settings
        self._run_id = run_id
        self._tariff = tariff
        self._lock = lock
        # None until `start`: a signal, or a lease renewal, may come before.
        self.gateway: Any = None
        self.ledger: Any = None
        self.diagnostics: Any = None
        self._inputs: Any = None  # the object-store copy of the run's inputs: ours to hold

    async def start(
        self,
        rung: str | None,
        inputs: RunInputs,
        seed: Contribution | None,
        replicas: list[str] | None = None,
    ) -> None:
        """Start the gateway, the ledger (told the lease's deadline, and the target
        context's `seed` as one more settled segment) and, with --diagnostics-out, the
        sidecar's writer. `replicas`: the URLs of the run's own replicas (`--engine`),
        the gateway's endpoints instead of the settings'."""
        # Imported here: the actor classes register with Ray only when a run needs them.
        from taguru_ray.engine.ledger import CONTEXT_INDEX, Ledger
        from taguru_ray.engine.worker import DiagnosticsWriter, run_actor_name
        from taguru_ray.gateway.actor import Gateway

        settings = self._settings
        limit = (
            settings.transport.max_inflight
            if isinstance(settings.transport.max_inflight, int)
            else None
        )
        node = ray.get_runtime_context().get_node_id()

        def here(role: str) -> dict[str, Any]:
            return {
                "scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=False),
                "name": run_actor_name(self._run_id, role),
            }

        # One copy of the run's inputs in the object store however many workers.
        inputs_ref = self._inputs = ray.put(inputs)
        self.gateway = Gateway.options(**here("gateway")).remote(
            list(settings.transport.endpoints) if replicas is None else replicas,
            limit,
            settings.transport.rpm,
            settings.transport.tpm,
            rung,
            run_id=self._run_id,
            model=settings.transport.model,
            tariff=self._tariff,
            budget=budget_of(settings),
            blame=Blame.of(settings.transport),
            ceiling=settings.inflight_ceiling,
            replicas=settings.serving.engine_replicas if settings.serving.engine else 0,
        )
        self.ledger = Ledger.options(**here("ledger")).remote(
            settings.scale.commit_order == "name", [inputs_ref]
        )
        if isinstance(self._lock, LeaseLock):
            self.ledger.set_deadline.remote(self._lock.write_deadline)
        if seed is not None:
            await self.ledger.settle.remote([(CONTEXT_INDEX, seed)])
        self.diagnostics = (
            DiagnosticsWriter.options(**here("diagnostics")).remote(
                settings.records.diagnostics_out, self._run_id, dict(settings.storage_env)
            )
            if settings.records.diagnostics_out
            else None
        )

    def set_deadline(self, deadline: float) -> None:
        """The lease's new write deadline, for the ledger's writes (the lease's thread)."""
        if self.ledger is not None:
            self.ledger.set_deadline.remote(deadline)

    async def final_stats(self, flushes: Callable[[], Iterable[Any]]) -> dict[str, Any]:
        """The gateway's counters as the run ends, its in-flight count back to 0; empty
        when it cannot be asked. Outcomes on kept permits reach the gateway in batches:
        `flushes` sends the workers' last ones first."""
        try:
            await asyncio.gather(*flushes(), return_exceptions=True)  # a dead one has no say
            stats: dict[str, Any] = await self.gateway.stats.remote()
            await self.gateway.finish.remote()
        except ray.exceptions.RayError:
            stats = {}
        return stats

    def others(self) -> list[tuple[str, Any]]:
        """The actors beside the gateway, by role (None where not started)."""
        return [("ledger", self.ledger), ("diagnostics", self.diagnostics)]

    def end(self) -> None:
        for actor in (self.gateway, self.ledger, self.diagnostics):
            if actor is not None:
                with contextlib.suppress(Exception):  # already gone is as good as ended
                    ray.kill(actor, no_restart=True)
