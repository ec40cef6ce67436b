"""Shared fixtures: one Ray runtime and one simulator per test session.

Integration tests run the real CLI in a subprocess against the real simulator
(a real HTTP server on loopback), joined to the session's Ray runtime with
``--address`` so each run does not pay for starting Ray.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from taguru_ray.simulate.harness import SimulatorProcess

REPO = Path(__file__).resolve().parents[1]
CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"


@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    address = ray.get_runtime_context().gcs_address
    yield address
    ray.shutdown()


@pytest.fixture(scope="session")
def simulator_process() -> Iterator[SimulatorProcess]:
    with SimulatorProcess("--slots", "16") as process:
        yield process


@pytest.fixture
def simulator(simulator_process: SimulatorProcess) -> SimulatorProcess:
    """The session's simulator with no script rules and zeroed counters."""
    simulator_process.set_script([])
    simulator_process.reset()
    return simulator_process


@dataclass
class Cli:
    """Runs ``taguru-ray extract`` as a user would, against the simulator."""

    address: str
    simulator: SimulatorProcess

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TAGURU_")}
        env.update(
            TAGURU_EXTRACT_URL=self.simulator.chat_url,
            TAGURU_EXTRACT_MODEL="taguru-sim",
            PYTHONPATH=str(REPO),
        )
        env.update(extra)
        return env

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "taguru_ray", "extract", "--address", self.address, *args]

    def extract(self, *args: str, env: dict[str, str] | None = None,
                timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args),
            env=env or self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO,
        )


@pytest.fixture
def cli(ray_address: str, simulator: SimulatorProcess) -> Cli:
    return Cli(ray_address, simulator)
