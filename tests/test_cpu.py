"""CPU readings (taguru_ray/cpu.py): a container's quota caps the cores; /proc/stat reads."""

import os
import sys
from pathlib import Path

import pytest

from taguru_ray import cpu


def test_a_cgroup_quota_caps_the_cores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    quota = tmp_path / "cpu.max"
    monkeypatch.setattr(cpu, "CGROUP_CPU_MAX", quota)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(64)), raising=False)
    quota.write_text("150000 100000\n")
    assert cpu.cores() == 2  # 1.5 CPUs of quota: a second core is partly there
    quota.write_text("max 100000\n")
    assert cpu.cores() == 64
    quota.write_text("garbled\n")
    assert cpu.cores() == 64


def test_own_cpu_grows_with_work() -> None:
    host, pid, cores, before = cpu.own_cpu()
    sum(i * i for i in range(200_000))
    assert host and pid == os.getpid() and cores >= 1 and cpu.own_cpu().seconds > before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/stat is Linux's")
def test_the_host_busy_time_reads_proc_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3\n")
    monkeypatch.setattr(cpu, "PROC_STAT", stat)
    busy, cores = cpu.host_busy() or (None, None)
    assert busy == 150 / os.sysconf("SC_CLK_TCK") and cores == os.cpu_count()
    monkeypatch.setattr(cpu, "PROC_STAT", tmp_path / "missing")
    assert cpu.host_busy() is None
