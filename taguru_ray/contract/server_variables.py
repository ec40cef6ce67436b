"""The variables a Taguru server and its clients read, as the reference names them.

`serve` (the embedded context's server) and the clients that talk to any Taguru
server (`import --url`) read these; extract's own settings are declared in
`contract/settings`. Declared here once, with what each means.
"""

from __future__ import annotations

from collections.abc import Mapping

ADDR = "TAGURU_ADDR"
DATA_DIR = "TAGURU_DATA_DIR"
RATE_LIMIT_PER_MIN = "TAGURU_RATE_LIMIT_PER_MIN"
FLUSH_SECS = "TAGURU_FLUSH_SECS"
API_TOKEN = "TAGURU_API_TOKEN"
API_TOKENS = "TAGURU_API_TOKENS"
KEY_SCOPES = "TAGURU_KEY_SCOPES"
MAX_BODY_BYTES = "TAGURU_MAX_BODY_BYTES"
EMBED_URL = "TAGURU_EMBED_URL"
EMBED_MODEL = "TAGURU_EMBED_MODEL"
EMBED_API_KEY = "TAGURU_EMBED_API_KEY"
EMBED_TIMEOUT_SECS = "TAGURU_EMBED_TIMEOUT_SECS"
EMBED_PASSAGES = "TAGURU_EMBED_PASSAGES"
PASSAGE_VECTOR_LIMIT = "TAGURU_PASSAGE_VECTOR_LIMIT"
SEMANTIC_FLOOR = "TAGURU_SEMANTIC_FLOOR"

SERVER_VARIABLES: Mapping[str, str] = {
    ADDR: "the server's address, HOST:PORT (default 127.0.0.1:8248); clients read it "
    "when --url is not given",
    DATA_DIR: "`serve` with no --store: the store folder (default ./data; a missing or "
    "empty folder becomes a store, and the server is writable)",
    RATE_LIMIT_PER_MIN: "requests per minute per key (0 or unset = off); past it 429 with "
    "Retry-After; probes are exempt",
    FLUSH_SECS: "the reference's image flush interval; accepted by `serve`, which commits "
    "every write before answering and has nothing to flush later",
    API_TOKEN: "one bearer key, named `default`",
    API_TOKENS: "named bearer keys, `name:token,name:token`",
    KEY_SCOPES: "roles per key name, JSON: read < write < admin, optionally per context",
    MAX_BODY_BYTES: "the largest request body the server reads (default 8 MiB)",
    EMBED_URL: "an OpenAI-compatible embeddings endpoint, the full URL (…/v1/embeddings); "
    "unset, no vector lane and no semantic resolve tier",
    EMBED_MODEL: "the embedding model's name (needed with TAGURU_EMBED_URL)",
    EMBED_API_KEY: "the embedding provider's bearer key (optional)",
    EMBED_TIMEOUT_SECS: "one embedding call's ceiling in seconds (default 60); transient "
    "failures retry twice",
    EMBED_PASSAGES: "1/true also embeds paragraphs and their questions: the passage vector "
    "lane (off; glosses are embedded whenever a provider is set)",
    PASSAGE_VECTOR_LIMIT: "most paragraph and question vectors per context (default 20000); "
    "past it the BM25 lane still serves every paragraph",
    SEMANTIC_FLOOR: "the cosine floor of the vector lane and the semantic resolve tier when "
    "neither the call nor the context sets one (default 0.35)",
}


def client_token(environ: Mapping[str, str]) -> str | None:
    """The bearer a client sends: TAGURU_API_TOKEN, else the first key of
    TAGURU_API_TOKENS (the reference client's rule)."""
    token = environ.get(API_TOKEN, "").strip()
    if token:
        return token
    first = environ.get(API_TOKENS, "").split(",")[0].strip()
    if ":" in first:
        return first.split(":", 1)[1] or None
    return first or None
