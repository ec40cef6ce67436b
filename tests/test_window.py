import asyncio

import pytest

from taguru_ray.contract.items import Association
from taguru_ray.engine.window import SKIPPED, OrderedReport, SegmentWindow
from taguru_ray.pipeline.steer import Contribution


def labels(*names: str) -> Contribution:
    return Contribution.of([Association("a", name, "b") for name in names], [])


def test_window_one_offers_every_earlier_segment() -> None:
    async def scenario() -> list[list[str]]:
        window = SegmentWindow(1)
        seen = []
        for index, label in enumerate(["uses", "part of", "uses"]):
            await window.wait_eligible(index)
            seen.append([u.label for u in window.vocabulary_for(index)])
            window.finish(index, labels(label))
        return seen

    assert asyncio.run(scenario()) == [[], ["uses"], ["uses", "part of"]]


def test_window_two_lets_neighbours_overlap_and_offers_the_older_fold() -> None:
    async def scenario() -> list[list[str]]:
        window = SegmentWindow(2)
        await window.wait_eligible(0)
        await window.wait_eligible(1)  # segment 1 needs nothing finished
        first = [u.label for u in window.vocabulary_for(0)]
        second = [u.label for u in window.vocabulary_for(1)]
        window.finish(1, labels("late"))
        window.finish(0, labels("early"))
        await window.wait_eligible(2)
        third = [u.label for u in window.vocabulary_for(2)]
        return [first, second, third]

    assert asyncio.run(scenario()) == [[], [], ["early"]]


def test_a_lazy_contribution_is_read_only_when_folded() -> None:
    calls = []

    async def scenario() -> None:
        window = SegmentWindow(1)
        window.finish(0, lambda: calls.append(0) or labels("x"))
        assert calls == []
        assert [u.label for u in window.vocabulary_for(1)] == ["x"]

    asyncio.run(scenario())
    assert calls == [0]


def test_asking_out_of_order_is_refused() -> None:
    async def scenario() -> None:
        window = SegmentWindow(1)
        window.finish(0, labels("x"))
        window.finish(1, labels("y"))
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
        window.finish(index, SKIPPED)
    assert read == [] and window.low_water == 3
    assert not window._finished  # nothing per segment beyond the in-order queue
    vocabulary = window.vocabulary_for(3)  # sees segments 0 .. 1
    assert read == [0, 1]
    assert sorted(use.label for use in vocabulary) == ["old-0", "old-1"]
