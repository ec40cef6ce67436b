"""Reading a ``POST /contexts/{name}/sources/search`` result, from any server.

The typed shape ``{plan: {contexts: [...]}, hits: [{source, paragraph, score,
text, lanes}]}`` is preferred; an older or non-conforming server's bare hit
array, or ``{hits}`` whose hits lack that shape, still gives locators (source
and paragraph required), without lanes or a plan — as the reference reads it
for both `evaluate` and `benchmark search`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_HIT_KEYS = ("source", "paragraph", "score", "text", "lanes")


class SearchShapeError(ValueError):
    """A result with no recognisable hits."""


@dataclass(frozen=True)
class SearchPage:
    hits: list[dict[str, Any]]  # {source, paragraph, score, text, lanes | None}
    plan: dict[str, Any] | None  # the first plan.contexts entry, when typed


def read_search_result(result: Any) -> SearchPage:
    typed = _typed(result)
    if typed is not None:
        return typed
    if isinstance(result, list):
        raw = result
    elif isinstance(result, Mapping) and isinstance(result.get("hits"), list):
        raw = result["hits"]
    else:
        raise SearchShapeError("response carries no recognizable hits (plan/hits shape mismatch)")
    hits = []
    for item in raw:
        if not isinstance(item, Mapping) or not isinstance(item.get("source"), str):
            raise SearchShapeError("a hit is missing 'source'")
        paragraph = item.get("paragraph")
        if not _count(paragraph):
            raise SearchShapeError("a hit is missing 'paragraph'")
        score = item.get("score")
        text = item.get("text")
        hits.append(
            {
                "source": item["source"],
                "paragraph": paragraph,
                "score": score if _number(score) else 0.0,
                "text": text if isinstance(text, str) else "",
                "lanes": None,
            }
        )
    return SearchPage(hits, None)


def _typed(result: Any) -> SearchPage | None:
    if not isinstance(result, Mapping) or set(result) != {"plan", "hits"}:
        return None
    plan, hits = result["plan"], result["hits"]
    contexts = plan.get("contexts") if isinstance(plan, Mapping) else None
    if not isinstance(contexts, list) or not isinstance(hits, list):
        return None
    if not all(
        isinstance(entry, Mapping) and _lanes_plan(entry.get("lanes")) for entry in contexts
    ):
        return None
    for hit in hits:
        if not (
            isinstance(hit, Mapping)
            and all(key in hit for key in _HIT_KEYS)
            and isinstance(hit["source"], str)
            and _count(hit["paragraph"])
            and _number(hit["score"])
            and isinstance(hit["text"], str)
            and isinstance(hit["lanes"], Mapping)
        ):
            return None
    first = dict(contexts[0]) if contexts else None
    return SearchPage([{key: hit[key] for key in _HIT_KEYS} for hit in hits], first)


def _lanes_plan(lanes: Any) -> bool:
    return isinstance(lanes, Mapping) and all(
        isinstance(lanes.get(name), Mapping) and isinstance(lanes[name].get("ran"), bool)
        for name in ("bm25", "vector")
    )


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
