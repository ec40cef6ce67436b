"""The run's inputs (`RunInputs`), shipped once to every worker by their own actor.

The driver puts one copy in the object store and hands its reference to this
actor; a segment worker — a restarted one too — asks it once. The reference
travels inside a list so Ray passes it on as a reference, never resolved here.
"""

from __future__ import annotations

from typing import Any

import ray


@ray.remote(num_cpus=0)
class SharedInputs:
    def __init__(self, inputs: list[Any]) -> None:  # [ObjectRef of the run's RunInputs]
        self._inputs = inputs

    def reference(self) -> list[Any]:
        return self._inputs
