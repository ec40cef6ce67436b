"""CPU readings: a process's own CPU time, the cores it may use, its host's busy time.

What `engine/pacing.py` samples to tell a client short of CPU from an endpoint
short of capacity (ADR 0048). Each of a run's processes reads its own figures
(an actor on another node reads its node's), so the readings hold on a cluster
as on one machine.
"""

from __future__ import annotations

import math
import os
import platform
import time
from pathlib import Path
from typing import NamedTuple

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")  # cgroup v2: "<quota> <period>" or "max …"
PROC_STAT = Path("/proc/stat")


def cores() -> int:
    """The cores this process may run on: its CPU affinity, capped by a container's
    CPU quota (a Kubernetes limit shows every core of the node to affinity)."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    try:
        quota, period = CGROUP_CPU_MAX.read_text().split()[:2]
        if quota != "max":
            count = min(count, max(math.ceil(int(quota) / int(period)), 1))
    except (OSError, ValueError):
        pass
    return max(count, 1)


class CpuReading(NamedTuple):
    """One process's CPU so far: where it runs, which process, the cores it may use."""

    host: str
    pid: int
    cores: int
    seconds: float


def own_cpu() -> CpuReading:
    """This process's CPU reading."""
    return CpuReading(platform.node(), os.getpid(), cores(), time.process_time())


def host_busy() -> tuple[float, int] | None:
    """(busy CPU seconds of this host since boot, its cores), or None where /proc/stat
    is not there to read (not Linux)."""
    try:
        with PROC_STAT.open() as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(value) for value in fields[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle and iowait
    per_second = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return (sum(ticks[:8]) - idle) / per_second, os.cpu_count() or 1
