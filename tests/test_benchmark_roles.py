"""CPU per completion by process role (benchmarks/roles.py): pure, with literals."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from benchmarks.roles import by_role, marginal_by_role, steady_by_role


def test_processes_are_grouped_into_roles_and_the_rest_is_ray() -> None:
    sampled = {
        "driver": 2.0,
        "ray::Gateway": 1.0,
        "ray::SegmentWorker": 6.0,
        "ray::Ledger": 0.5,
        "raylet": 0.2,
        "gcs_server": 0.3,
    }
    assert by_role(sampled) == {
        "driver": 2.0,
        "gateway": 1.0,
        "segment_workers": 6.0,
        "ledger": 0.5,
        "ray": 0.5,
    }


def test_the_marginal_cost_leaves_start_up_out_and_says_what_a_core_sustains() -> None:
    small = {"driver": 2.0, "ray::Gateway": 1.0, "ray::SegmentWorker": 3.0}
    large = {"driver": 2.5, "ray::Gateway": 1.4, "ray::SegmentWorker": 6.0}
    roles = marginal_by_role(small, 200, large, 2200)  # 2 000 completions more
    assert roles["driver"]["cpu_ms_per_completion"] == pytest.approx(0.25)
    assert roles["driver"]["met"] is True
    assert roles["driver"]["completions_per_s_per_core"] == pytest.approx(4000)
    assert roles["gateway"]["cpu_ms_per_completion"] == pytest.approx(0.2)
    assert roles["segment_workers"]["cpu_ms_per_completion"] == pytest.approx(1.5)
    assert roles["segment_workers"]["target"] == "<= 2.0" and roles["segment_workers"]["met"]
    assert roles["gateway"]["met"] is True
    # No ledger process was sampled (as when the runs join a cluster): no figure.
    assert roles["ledger"] == {
        "cpu_ms_per_completion": None,
        "completions_per_s_per_core": None,
        "target": None,
        "met": None,
    }
    nothing = marginal_by_role(small, 200, large, 200)
    assert nothing["driver"]["cpu_ms_per_completion"] is None and nothing["driver"]["met"] is None


def test_a_run_that_sampled_only_its_driver_claims_no_target_for_the_other_roles() -> None:
    roles = marginal_by_role({"driver": 1.0}, 10, {"driver": 1.5}, 110)
    assert roles["driver"]["cpu_ms_per_completion"] == pytest.approx(5.0)
    assert roles["driver"]["met"] is False
    for role in ("gateway", "segment_workers", "ledger", "ray"):
        assert roles[role]["cpu_ms_per_completion"] is None
        assert roles[role]["met"] is None


def test_a_negative_slope_is_noise_and_meets_no_target() -> None:
    roles = marginal_by_role({"driver": 3.0}, 100, {"driver": 2.7}, 600)
    assert roles["driver"]["cpu_ms_per_completion"] == pytest.approx(-0.6)
    assert roles["driver"]["met"] is None
    assert roles["driver"]["completions_per_s_per_core"] is None


def _stats(done: int, total: int = 100) -> dict[str, int]:
    """A simulator's /stats: every request arrived, those not done still queued."""
    return {"requests": total, "in_flight": 0, "queued": total - done}


def test_the_steady_window_reads_cpu_between_the_walks_around_10_and_90_percent() -> None:
    from benchmarks.process_runs import steady_cpu

    samples = [(float(t), _stats(10 * t)) for t in range(1, 11)]  # 10 completions a second
    series = [(t + 0.5, {"driver": 0.1 * (t + 0.5), "raylet": 1.0}) for t in range(10)]
    window = steady_cpu(series, samples)
    assert window is not None
    # 10 % done at 1.0 s, 90 % at 9.0 s: the walks at 0.5 s and 9.5 s bracket them, and
    # the 9 s between those walks hold 90 completions at the window's rate.
    assert (window.from_s, window.to_s) == (0.5, 9.5)
    assert window.completions == pytest.approx(90.0)
    roles = marginal_by_role(window.cpu_start_s, 0, window.cpu_end_s, window.completions)
    assert roles["driver"]["cpu_ms_per_completion"] == pytest.approx(10.0)
    assert roles["ray"]["cpu_ms_per_completion"] == pytest.approx(0.0)


def test_the_steady_window_keeps_the_kernels_part_read_at_the_same_walks() -> None:
    from benchmarks.process_runs import steady_cpu

    samples = [(float(t), _stats(10 * t)) for t in range(1, 11)]
    series = [(t + 0.5, {"ray::SegmentWorker": 0.5 * t}) for t in range(10)]
    system = [{"ray::SegmentWorker": 0.1 * t} for t in range(10)]
    window = steady_cpu(series, samples, system)
    assert window is not None
    assert (window.system_start_s, window.system_end_s) == (
        {"ray::SegmentWorker": 0.0},
        {"ray::SegmentWorker": pytest.approx(0.9)},
    )
    table = steady_by_role(asdict(window))
    workers = table["segment_workers"]
    assert workers["cpu_ms_per_completion"] == pytest.approx(50.0)  # 4.5 s over 90
    assert workers["system_ms_per_completion"] == pytest.approx(10.0)  # 0.9 s of it
    assert steady_cpu(series, samples).system_end_s == {}  # type: ignore[union-attr]
    assert (
        "system_ms_per_completion"
        not in steady_by_role(
            asdict(steady_cpu(series, samples))  # type: ignore[arg-type]
        )["segment_workers"]
    )


def test_no_steady_window_without_a_walk_on_each_side_of_it() -> None:
    from benchmarks.process_runs import steady_cpu

    samples = [(float(t), _stats(10 * t)) for t in range(1, 11)]
    late = [(5.0, {"driver": 1.0}), (9.5, {"driver": 2.0})]  # none before 10 % was done
    assert steady_cpu(late, samples) is None
    assert steady_cpu([(0.5, {"driver": 0.0})], samples) is None  # none after 90 %
    assert steady_cpu([], []) is None
    assert steady_cpu([(0.0, {})], [(1.0, _stats(0, total=0))]) is None  # nothing asked
