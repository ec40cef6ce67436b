"""Shared fixtures: one Ray runtime and one simulator per test session.

Integration tests run the real CLI in a subprocess against the real simulator
(a real HTTP server on loopback), joined to the session's Ray runtime with
``--address`` so each run does not pay for starting Ray.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from taguru_ray.simulate.harness import SimulatorProcess
from tests.support import Cli

# Property tests (hypothesis): `make test` runs a bounded number of examples per
# property, with no deadline (a shared 2-core machine is slow at random moments);
# `make fuzz` runs many more (HYPOTHESIS_PROFILE=fuzz).
settings.register_profile(
    "ci", max_examples=40, deadline=None, derandomize=True, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile(
    "fuzz", max_examples=2000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session", autouse=True)
def own_config_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """--redact's key file (and anything else under the config home) stays in the test
    session's own folder, never the user's ~/.config."""
    import os

    before = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("config"))
    yield
    if before is None:
        os.environ.pop("XDG_CONFIG_HOME", None)
    else:
        os.environ["XDG_CONFIG_HOME"] = before


@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    import ray

    # "local": a new Ray of its own, never the cluster another suite (or `ray start`) left
    # in Ray's current-cluster file — two suites at once must not share one. Ray gives its
    # raylet a fixed 30 s to register; on a machine loaded past 20 that is missed now and
    # then, and one missed start would fail every test of this worker: try three times.
    for attempt in range(3):
        try:
            ray.init(
                address="local",
                num_cpus=2,
                include_dashboard=False,
                logging_level=logging.ERROR,
                log_to_driver=False,
            )
            break
        except Exception as error:
            if attempt == 2 or "timed out during startup" not in str(error):
                raise
            ray.shutdown()
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


@pytest.fixture
def cli(ray_address: str, simulator: SimulatorProcess) -> Cli:
    return Cli(ray_address, simulator)
