"""CPU per completion by process role: what one core of each role could sustain.

The processes of a run are grouped into the roles issue 23 budgets — the
driver, the gateway, the segment workers — with the ledger and Ray's own
processes beside them. A role's cost is its marginal CPU: the difference
between a large and a small run of the same flags over the difference in
completions, so start-up (imports, actor creation) is paid once and left out —
or, read inside one run, between two moments of its steady state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Process kinds (benchmarks.run._process_kind) by role; everything else is Ray's.
ROLES = {
    "driver": ("driver",),
    "gateway": ("ray::Gateway",),
    "segment_workers": ("ray::SegmentWorker",),
    "ledger": ("ray::Ledger",),
}
# Issue 23: each single process could then sustain 3 000+ completions/s on one core;
# the workers scale out, so theirs is per completion across all of them.
TARGETS_MS = {"driver": 0.3, "gateway": 0.3, "segment_workers": 2.0}


_OWNER = {kind: role for role, kinds in ROLES.items() for kind in kinds}


def role_of(kind: str) -> str:
    """The role a process kind belongs to (`ray` for every process of Ray's own)."""
    return _OWNER.get(kind, "ray")


def by_role(cpu_sampled_s: Mapping[str, float]) -> dict[str, float]:
    """A run's sampled CPU seconds, summed per role (`ray` holds the rest)."""
    totals: dict[str, float] = dict.fromkeys([*ROLES, "ray"], 0.0)
    for kind, seconds in cpu_sampled_s.items():
        totals[role_of(kind)] += seconds
    return totals


def marginal_by_role(
    small: Mapping[str, float], small_done: float, large: Mapping[str, float], large_done: float
) -> dict[str, dict[str, Any]]:
    """Per role: CPU ms per completion (the slope between the runs), the completions/s
    one core of it could sustain, and its target when it has one, met or not. The two
    ends may as well be two moments of one run: its CPU and completions so far."""
    extra = large_done - small_done
    a, b = by_role(small), by_role(large)
    # A role none of whose processes was sampled (the runs joined a cluster with
    # --address, whose processes are not the run's) has no figure, not a zero.
    sampled = {role_of(kind) for kind in large}
    out: dict[str, dict[str, Any]] = {}
    for role in b:
        ms = 1000.0 * (b[role] - a[role]) / extra if extra > 0 and role in sampled else None
        target = TARGETS_MS.get(role)
        out[role] = {
            "cpu_ms_per_completion": ms,
            "completions_per_s_per_core": 1000.0 / ms if ms and ms > 0 else None,
            "target": f"<= {target}" if target is not None else None,
            # Below zero the slope is noise (the small run cost more): no claim either way.
            "met": None if ms is None or target is None or ms < 0 else ms <= target,
        }
    return out


def steady_by_role(steady: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """`marginal_by_role` between the two ends of a run's steady window (`SteadyCpu` as
    the JSON holds it), each role with the kernel's part of its CPU beside it
    (`system_ms_per_completion`) when the window has it."""
    done = steady["completions"]
    table = marginal_by_role(steady["cpu_start_s"], 0, steady["cpu_end_s"], done)
    if steady.get("system_end_s"):
        system = marginal_by_role(steady["system_start_s"], 0, steady["system_end_s"], done)
        for role, entry in table.items():
            entry["system_ms_per_completion"] = system[role]["cpu_ms_per_completion"]
    return table
