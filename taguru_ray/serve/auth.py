"""Bearer tokens and roles, read the way the reference server reads them.

Keys are named: `TAGURU_API_TOKEN` is the key "default", `TAGURU_API_TOKENS`
adds `name:token` entries (comma-separated; a trailing comma is tolerated).
`TAGURU_KEY_SCOPES` grants a key a role — `{"ci": "read", "bot": {"role":
"write", "contexts": ["sake"]}}` — roles nest read ⊂ write ⊂ admin, and a key
the variable does not name keeps the full grant (admin, every context). No key
configured → the API is open (development mode). A malformed variable refuses
to start: a credential that silently failed to arm is an auth hole. Error texts
name entries by position, never a token.

Routes need the role the reference's table gives them (`required_role`):
the retrieval loop `read`, the ingest loop `write`, operator verbs (delete,
rename, flush, `POST /import`) `admin`. On top of that a server started with
`--store` is read-only unless `--writable` (app.py). The probes (`/health`,
`/live`, `/metrics`, `/version`) answer without credentials. Presented tokens are compared with
`hmac.compare_digest` against every key, so timing says nothing about which.
"""

from __future__ import annotations

import enum
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taguru_ray.contract.server_variables import API_TOKEN, API_TOKENS, KEY_SCOPES

# The probes: answered without a token and never rate-limited (the reference's list).
EXEMPT_PATHS = frozenset({"/health", "/live", "/metrics", "/version"})
_BEARER = "bearer "


class KeyringError(ValueError):
    """A credential variable is malformed; the server must not start."""


class Role(enum.IntEnum):
    READ = 1
    WRITE = 2
    ADMIN = 3

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Scope:
    role: Role = Role.ADMIN
    contexts: frozenset[str] | None = None  # None: every context

    def allows(self, context: str) -> bool:
        return self.contexts is None or context in self.contexts


@dataclass(frozen=True)
class Keyring:
    keys: tuple[tuple[str, str], ...] = ()  # (name, token)
    scopes: Mapping[str, Scope] | None = None

    @property
    def disabled(self) -> bool:
        return not self.keys

    def authenticate(self, presented: str) -> str | None:
        """The name of the key whose token is `presented`, comparing every key."""
        matched = None
        for name, token in self.keys:
            if hmac.compare_digest(presented.encode("utf-8"), token.encode("utf-8")):
                matched = name
        return matched

    def scope_of(self, name: str) -> Scope:
        return (self.scopes or {}).get(name, Scope())


def keyring_from_env(env: Mapping[str, str]) -> Keyring:
    """The keyring of `TAGURU_API_TOKEN`, `TAGURU_API_TOKENS` and `TAGURU_KEY_SCOPES`."""
    keys: list[tuple[str, str]] = []
    single = env.get(API_TOKEN)
    if single is not None:
        if not single:
            raise KeyringError("TAGURU_API_TOKEN is set but empty")
        keys.append(("default", single))
    ring = env.get(API_TOKENS)
    if ring is not None:
        keys.extend(_named_keys(ring, taken={name for name, _ in keys}))
    return Keyring(tuple(keys), _scopes(env.get(KEY_SCOPES), {n for n, _ in keys}))


def _named_keys(ring: str, taken: set[str]) -> list[tuple[str, str]]:
    if not ring.strip():
        raise KeyringError("TAGURU_API_TOKENS is set but holds no entries")
    keys: list[tuple[str, str]] = []
    for position, entry in enumerate(ring.split(","), start=1):
        entry = entry.strip()
        if not entry:
            continue
        name, colon, token = entry.partition(":")
        name = name.strip()
        if not colon:
            raise KeyringError(f"TAGURU_API_TOKENS entry #{position} is not name:token")
        if not name or not token:
            raise KeyringError(f"TAGURU_API_TOKENS entry #{position} has an empty name or token")
        if name in taken:
            raise KeyringError(f"key name '{name}' is configured twice")
        taken.add(name)
        keys.append((name, token))
    if not keys:
        raise KeyringError("TAGURU_API_TOKENS is set but holds no entries")
    return keys


def _scopes(text: str | None, names: set[str]) -> dict[str, Scope]:
    if text is None:
        return {}
    if not text.strip():
        raise KeyringError("TAGURU_KEY_SCOPES is set but empty")
    shape = '{"name": "role" | {"role": …, "contexts": […]}}'
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise KeyringError(
            f"TAGURU_KEY_SCOPES is not the documented JSON shape {shape}: {exc}"
        ) from None
    if not isinstance(raw, dict):
        raise KeyringError(f"TAGURU_KEY_SCOPES is not the documented JSON shape {shape}")
    return {name: _scope(name, spec, names, shape) for name, spec in raw.items()}


def _scope(name: str, spec: Any, names: set[str], shape: str) -> Scope:
    if name not in names:
        raise KeyringError(f"TAGURU_KEY_SCOPES names '{name}', which is no configured key")
    contexts: Any = None
    if isinstance(spec, dict):
        role, contexts = spec.get("role"), spec.get("contexts")
    else:
        role = spec
    if role not in ("read", "write", "admin"):
        raise KeyringError(
            f"TAGURU_KEY_SCOPES key '{name}': unknown role {role!r} (read, write, or admin)"
        )
    if contexts is not None:
        if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
            raise KeyringError(f"TAGURU_KEY_SCOPES key '{name}' is not the shape {shape}")
        if not contexts:
            raise KeyringError(
                f"TAGURU_KEY_SCOPES key '{name}': an empty contexts list grants nothing — "
                "omit the field to grant every context"
            )
        contexts = frozenset(contexts)
    return Scope(Role[role.upper()], contexts)


def presented_token(values: list[str]) -> str | None:
    """The token of the one `Authorization: Bearer …` header (scheme case-insensitive);
    None when absent, doubled (a smuggling shape) or of another scheme."""
    if len(values) != 1 or values[0][: len(_BEARER)].lower() != _BEARER:
        return None
    return values[0][len(_BEARER) :]


_READ_ROUTES = frozenset(
    [("GET", r) for r in ("/contexts", "/contexts/{name}", "/contexts/{name}/labels",
                          "/contexts/{name}/aliases", "/contexts/{name}/sources",
                          "/contexts/{name}/embeddings", "/contexts/{name}/export",
                          "/contexts/{name}/changes", "/contexts/{name}/communities",
                          "/groups", "/groups/{name}")]
    + [("POST", r) for r in ("/recall", "/query", "/sources/search")]
    + [("POST", f"/contexts/{{name}}/{r}") for r in (
        "recall", "query", "describe", "explore", "activate", "paths", "resolve",
        "resolve_label", "sources/lookup", "sources/search", "sources/search/explain",
        "citations", "unreachable_from", "vocabulary/audit", "drift/audit",
        "communities/search", "evidence")]
)  # fmt: skip
_WRITE_ROUTES = frozenset(
    [("PUT", "/contexts/{name}"), ("PATCH", "/contexts/{name}"), ("PUT", "/groups/{name}"),
     ("PATCH", "/groups/{name}"), ("DELETE", "/contexts/{name}/aliases")]
    + [("POST", f"/contexts/{{name}}/{r}") for r in (
        "associations", "associations/retract", "aliases", "sources", "sources/retract",
        "promote", "embeddings/refresh")]
)  # fmt: skip


def required_role(method: str, route: str) -> Role:
    """The least role a (method, route template) needs, the reference's table: the
    retrieval loop reads, the ingest loop writes, operator verbs (delete, rename,
    flush, import) and anything unclassified need admin — fail closed."""
    if (method, route) in _READ_ROUTES:
        return Role.READ
    if (method, route) in _WRITE_ROUTES:
        return Role.WRITE
    return Role.ADMIN
