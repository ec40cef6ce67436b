"""The variables a Taguru server and its clients read, as the reference names them.

`serve` (the embedded context's server) and the clients that talk to any Taguru
server (`import --url`) read these; extract's own settings are declared in
`contract/settings`. Declared here once, with what each means.
"""

from __future__ import annotations

from collections.abc import Mapping

API_TOKEN = "TAGURU_API_TOKEN"
API_TOKENS = "TAGURU_API_TOKENS"
KEY_SCOPES = "TAGURU_KEY_SCOPES"
MAX_BODY_BYTES = "TAGURU_MAX_BODY_BYTES"

SERVER_VARIABLES: Mapping[str, str] = {
    API_TOKEN: "one bearer key, named `default`",
    API_TOKENS: "named bearer keys, `name:token,name:token`",
    KEY_SCOPES: "roles per key name, JSON: read < write < admin, optionally per context",
    MAX_BODY_BYTES: "the largest request body the server reads (default 8 MiB)",
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
