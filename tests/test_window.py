import asyncio

import pytest

from taguru_ray.contract.items import Association
from taguru_ray.engine.window import OrderedReport, SegmentWindow
from taguru_ray.pipeline.steer import Contribution


def labels(*names: str) -> Contribution:
    return Contribution.of([Association("a", name, "b") for name in names], [])


def test_window_one_offers_every_earlier_segment() -> None:
    async def scenario() -> list[list[str]]:
        window = SegmentWindow(1)
        seen = []
        for index, label in enumerate(["uses", "part of", "uses"]):
            window.dispatched(index)
            await window.wait_eligible(index)
            seen.append([u.label for u in window.vocabulary_for(index)])
            window.finish(index, labels(label))
        return seen

    assert asyncio.run(scenario()) == [[], ["uses"], ["uses", "part of"]]


def test_window_two_lets_neighbours_overlap_and_offers_the_older_fold() -> None:
    async def scenario() -> list[list[str]]:
        window = SegmentWindow(2)
        window.dispatched(0)
        await window.wait_eligible(0)
        window.dispatched(1)
        await window.wait_eligible(1)  # segment 1 needs nothing finished
        first = [u.label for u in window.vocabulary_for(0)]
        second = [u.label for u in window.vocabulary_for(1)]
        window.finish(1, labels("late"))
        window.finish(0, labels("early"))
        window.dispatched(2)
        await window.wait_eligible(2)
        third = [u.label for u in window.vocabulary_for(2)]
        return [first, second, third]

    assert asyncio.run(scenario()) == [[], [], ["early"]]


def test_asking_out_of_order_is_refused() -> None:
    async def scenario() -> None:
        window = SegmentWindow(1)
        for index, label in enumerate("xy"):
            window.dispatched(index)
            window.finish(index, labels(label))
        window.vocabulary_for(2)
        window.vocabulary_for(1)

    with pytest.raises(RuntimeError):
        asyncio.run(scenario())


def test_report_lines_come_out_in_name_order() -> None:
    out: list[str] = []
    report = OrderedReport(out.append, out.append)
    report.add(2, [("out", "c")])
    report.add(0, [("err", "a1"), ("out", "a2")])
    assert out == ["a1", "a2"]
    report.add(1, [("out", "b")])
    assert out == ["a1", "a2", "b", "c"]


def test_skipped_segments_are_read_only_when_a_later_fold_needs_them() -> None:
    read: list[int] = []

    def existing(index: int) -> Contribution:
        read.append(index)
        return labels(f"old-{index}")

    window = SegmentWindow(2, existing)
    for index in range(3):
        window.skipped(index)
    assert read == [] and window.low_water == 3
    vocabulary = window.vocabulary_for(3)  # sees segments 0 .. 1
    assert read == [0, 1]
    assert sorted(use.label for use in vocabulary) == ["old-0", "old-1"]


def test_the_claims_ledger_is_handed_every_segment_no_worker_commits() -> None:
    window = SegmentWindow(8)
    window.skipped(0)
    window.refused(1)
    window.skipped(2)
    window.dispatched(3)
    assert window.unshared(3, limit=2) == [(0, False), (1, True)]
    assert window.unshared(3, limit=2) == [(2, False)]
    assert window.unshared(3, limit=2) == []
    window.commits(3)
    window.skipped(4)
    window.dispatched(5)
    assert window.unshared(5, limit=64) == [(4, False)]


def test_a_skipped_segment_read_for_the_ledger_is_not_read_again_for_the_fold() -> None:
    read: list[int] = []

    def existing(index: int) -> Contribution:
        read.append(index)
        return labels(f"old-{index}")

    window = SegmentWindow(1, existing)
    window.skipped(0)
    window.dispatched(1)
    window.resolved([(0, labels("shared"))])
    assert [use.label for use in window.vocabulary_for(1)] == ["shared"]
    assert read == []


def test_the_low_water_mark_is_the_first_segment_in_flight() -> None:
    window = SegmentWindow(4)
    window.dispatched(0)
    window.skipped(1)
    window.dispatched(2)
    assert window.low_water == 0
    window.finish(2, Contribution())
    assert window.low_water == 0
    window.finish(0, Contribution())
    assert window.low_water == 3
