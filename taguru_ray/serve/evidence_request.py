"""The body of `POST /contexts/{name}/evidence`, read as the reference reads it.

`origins` (required) and `labels` are one string or a list (≤ 1000 items, else 400
`over_limit`); counts are non-negative whole numbers, clamped, never refused:
`search_limit` default 5 ceiling 200, `activate_limit` default 20 ceiling 1000,
budget `max_items` 40/1000, `max_bytes` 65536/1 MiB, `max_tokens` 4000/none; a zero
budget is valid and admits nothing. Floors and the decay are clamped to 0..1. Shape
errors are 422 `malformed_request` as for every other body (requests.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taguru_ray.context import evidence_request as ev
from taguru_ray.serve import requests
from taguru_ray.serve.requests import MAX_POSITION_ITEMS, U64_MAX


def evidence(body: Mapping[str, Any]) -> ev.EvidenceRequest:
    if "origins" not in body:
        raise requests.shape("missing field `origins`")
    budget = body.get("budget")
    if budget is None:
        budget = {}
    if not isinstance(budget, dict):
        raise requests.invalid("budget", budget, "a budget object")
    rerank = body.get("rerank")
    if rerank is not None and (
        not isinstance(rerank, dict) or not isinstance(rerank.get("model"), str)
    ):
        raise requests.invalid("rerank", rerank, 'an object {"model": string}')
    communities = body.get("include_communities", False)
    if not isinstance(communities, bool):
        raise requests.invalid("include_communities", communities, "a boolean")
    query = body.get("text_fallback_query")
    if query is not None and not isinstance(query, str):
        raise requests.invalid("text_fallback_query", query, "a string")
    decay = requests.floor(body, "activate_decay")
    return ev.EvidenceRequest(
        origins=_cues(body, "origins"),
        labels=_cues(body, "labels"),
        dice_floor=requests.floor(body, "dice_floor"),
        semantic_floor=requests.floor(body, "semantic_floor"),
        resolve_limit=_optional(body, "resolve_limit", ev.MATCH_LIMIT_CEILING),
        activate_decay=0.5 if decay is None else decay,
        activate_limit=_clamped(
            body, "activate_limit", ev.ACTIVATE_LIMIT_DEFAULT, ev.MATCH_LIMIT_CEILING
        ),
        text_fallback_query=query,
        search_limit=_clamped(
            body, "search_limit", ev.SEARCH_LIMIT_DEFAULT, ev.SEARCH_LIMIT_CEILING
        ),
        include_communities=communities,
        max_items=_clamped(budget, "max_items", ev.DEFAULT_ITEMS, ev.CEILING_ITEMS),
        max_bytes=_clamped(budget, "max_bytes", ev.DEFAULT_BYTES, ev.CEILING_BYTES),
        max_tokens=_clamped(budget, "max_tokens", ev.DEFAULT_TOKENS, U64_MAX),
        rerank_model=None if rerank is None else rerank["model"],
    )


def _cues(body: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = body.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        raise requests.invalid(key, value, "a string or a sequence of strings")
    for item in value:
        if not isinstance(item, str):
            raise requests.invalid(key, item, "a string")
    if len(value) > MAX_POSITION_ITEMS:
        raise requests.over_limit(
            f"{key} carries {len(value)} items, past the per-request limit of "
            f"{MAX_POSITION_ITEMS}; split the request"
        )
    return tuple(value)


def _optional(body: Mapping[str, Any], key: str, ceiling: int) -> int | None:
    value = requests.count(body, key)
    return None if value is None else min(value, ceiling)


def _clamped(body: Mapping[str, Any], key: str, default: int, ceiling: int) -> int:
    value = _optional(body, key, ceiling)
    return default if value is None else value
