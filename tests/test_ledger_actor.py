"""The claims ledger actor: batches the driver does not wait for, folded in index order."""

from __future__ import annotations

import ray

from taguru_ray.contract.items import Alias, Association
from taguru_ray.engine.ledger import CONTEXT_INDEX, Ledger
from taguru_ray.pipeline.steer import Contribution


def names(*pairs: tuple[str, str]) -> Contribution:
    return Contribution.of([Association(s, "uses", o) for s, o in pairs], [])


def test_a_lookup_waits_for_every_segment_it_may_see_and_order_is_kept(ray_address: str) -> None:
    ledger = Ledger.remote()  # type: ignore[attr-defined]
    ledger.absorb.remote([(CONTEXT_INDEX, names(("Context", "Seed")))])
    # Segment 1's batch arrives first; 0 claims "A" as an alias of "a" before 1 names "A".
    ledger.absorb.remote([(1, names(("A", "c")))])
    pending = ledger.lookups.remote([("concept", "A"), ("concept", "Context")], 2)
    ready, _ = ray.wait([pending], timeout=0.5)
    assert ready == []  # segment 0 is not folded yet: the lookup waits
    aliased = Contribution.of([Association("a", "uses", "b")], [Alias("A", "a", "concept")])
    ledger.absorb.remote([(0, aliased)])
    found = ray.get(pending, timeout=30)
    assert found == {("concept", "A"): "a", ("concept", "Context"): "Context"}
    # A segment that sees only segment 0 and the context is answered at once.
    assert ray.get(ledger.lookups.remote([("concept", "c")], 1), timeout=30) == {}
