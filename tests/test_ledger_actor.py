"""The commit order: segments are judged against every earlier one, in name order,
whatever order their proposals and the driver's settlements arrive in."""

from __future__ import annotations

import asyncio

import ray

from taguru_ray.contract.items import Alias, Association
from taguru_ray.engine.ledger import CONTEXT_INDEX, CommitOrder, Ledger
from taguru_ray.pipeline.claims import AliasItem, Proposal
from taguru_ray.pipeline.steer import Contribution


def names(*pairs: tuple[str, str]) -> Contribution:
    return Contribution.of([Association(s, "uses", o) for s, o in pairs], [])


def proposing(alias: str, canonical: str, *pairs: tuple[str, str]) -> Proposal:
    raw = {"alias": alias, "canonical": canonical, "kind": "concept"}
    return Proposal(
        Contribution.of_associations([Association(s, "uses", o) for s, o in pairs]),
        (AliasItem(0, 0, "p", raw),),
    )


def test_a_turn_waits_for_every_earlier_segment_then_sees_them_all() -> None:
    async def scenario() -> None:
        order = CommitOrder()
        order.settle([(CONTEXT_INDEX, names(("Context", "Seed")))])
        # Segment 2 proposes first; segment 1 (skipped) names "Beta" as a concept.
        turn = asyncio.ensure_future(order.commit(2, proposing("Beta", "Gamma", ("Gamma", "x"))))
        await asyncio.sleep(0)
        order.settle([(1, names(("Alpha", "Beta")))])
        await asyncio.sleep(0)
        assert not turn.done()  # segment 0 has not settled
        zero = await order.commit(0, Proposal(names(("a", "b"))))
        assert zero is not None and zero.pruned == ()
        verdict = await turn
        assert verdict is not None and verdict.pruned == ((0, 0),)
        assert verdict.contribution.concept_aliases == ()
        assert order.next == 3

    asyncio.run(scenario())


def test_a_resubmitted_segment_gets_the_same_verdict() -> None:
    async def scenario() -> None:
        order = CommitOrder()
        order.settle([(0, names(("Alpha", "Beta")))])
        first = await order.commit(1, proposing("Beta", "Gamma", ("Gamma", "x")))
        again = await order.commit(1, proposing("Beta", "Gamma", ("Gamma", "x")))
        assert first == again and first is not None and first.pruned == ((0, 0),)
        # What segment 1 settled is not judged against itself.
        assert order.claims.resolve("concept", "Gamma", upto=1) is None

    asyncio.run(scenario())


def test_after_an_abandoned_segment_no_later_turn_commits() -> None:
    async def scenario() -> None:
        order = CommitOrder()
        later = asyncio.ensure_future(order.commit(2, Proposal(names(("a", "b")))))
        await asyncio.sleep(0)
        order.settle([(0, Contribution())])
        order.abandon(1)  # segment 1 stopped: 2 must not be written before it
        assert await later is None
        assert await order.commit(3, Proposal(names(("c", "d")))) is None
        assert order.next == 1

    asyncio.run(scenario())


def test_a_failed_segment_settles_nothing_and_unblocks_the_next() -> None:
    async def scenario() -> None:
        order = CommitOrder()
        turn = asyncio.ensure_future(order.commit(1, Proposal(names(("a", "b")))))
        await asyncio.sleep(0)
        order.settle([(0, Contribution())])
        verdict = await turn
        assert verdict is not None and order.next == 2

    asyncio.run(scenario())


def test_in_arrival_order_a_turn_is_judged_at_once_the_benchmarks_baseline() -> None:
    async def scenario() -> None:
        order = CommitOrder(ordered=False)
        # Segment 0 never settled: judged on arrival, segment 2 sees nothing to prune.
        verdict = await order.commit(2, proposing("Beta", "Gamma", ("Gamma", "x")))
        assert verdict is not None and verdict.pruned == ()

    asyncio.run(scenario())


def test_the_actor_answers_turns_in_order(ray_address: str) -> None:
    ledger = Ledger.remote()  # type: ignore[attr-defined]
    # Awaited, as the run awaits it: an async actor's calls may start out of order.
    ray.get(ledger.settle.remote([(CONTEXT_INDEX, names(("Context", "Seed")))]), timeout=30)
    pending = ledger.commit.remote(1, proposing("Context", "Gamma", ("Gamma", "x")))
    ready, _ = ray.wait([pending], timeout=0.5)
    assert ready == []  # segment 0 has not settled: the turn waits
    aliased = Contribution.of([Association("a", "uses", "b")], [Alias("A", "a", "concept")])
    ledger.settle.remote([(0, aliased)])
    verdict = ray.get(pending, timeout=30)
    assert verdict.pruned == ((0, 0),)  # "Context" names the context's own concept


def test_a_batch_of_turns_is_answered_turn_by_turn(ray_address: str) -> None:
    ledger = Ledger.remote()  # type: ignore[attr-defined]
    turns = [(0, Proposal(names(("a", "b")))), (2, proposing("a", "Gamma", ("Gamma", "x")))]
    stream = ledger.commit_many.options(num_returns="streaming").remote(turns)
    first = ray.get(next(stream), timeout=30)
    assert [index for index, _ in first] == [0]  # segment 2 waits for segment 1
    ledger.settle.remote([(1, Contribution())])
    [(index, verdict)] = ray.get(next(stream), timeout=30)
    assert index == 2 and verdict.pruned == ((0, 0),)  # "a" is segment 0's concept
