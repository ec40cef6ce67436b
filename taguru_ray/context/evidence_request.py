"""An evidence request's body, read and bounded, and its defaults and ceilings: what the
store's evidence read (evidence.py), its interface (api.py) and the server's parser
(serve/evidence_request.py) share."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

DEFAULT_ITEMS, DEFAULT_BYTES, DEFAULT_TOKENS = 40, 65536, 4000
CEILING_ITEMS, CEILING_BYTES = 1000, 1024 * 1024
SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_CEILING = 5, 200
ACTIVATE_LIMIT_DEFAULT, MATCH_LIMIT_CEILING = 20, 1000
QUERY_LIMIT_DEFAULT = 100
NO_ANCHORS = "no anchors resolved from 'origins'"


class EvidenceRequest(BaseModel):
    """The body, read and bounded (serve/evidence_request.py parses the wire)."""

    model_config = ConfigDict(frozen=True)

    origins: tuple[str, ...]
    labels: tuple[str, ...] = ()
    dice_floor: float | None = None
    semantic_floor: float | None = None
    resolve_limit: int | None = None
    activate_decay: float = 0.5
    activate_limit: int = ACTIVATE_LIMIT_DEFAULT
    text_fallback_query: str | None = None
    search_limit: int = SEARCH_LIMIT_DEFAULT
    include_communities: bool = False
    max_items: int = DEFAULT_ITEMS
    max_bytes: int = DEFAULT_BYTES
    max_tokens: int = DEFAULT_TOKENS
    rerank_model: str | None = None
