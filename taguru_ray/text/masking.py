"""One masking of what is shown: URLs, paths and settings, before any print, file or log.

A URL may carry a credential (``https://user:pass@host/…``, ``?api-key=…``), a path a
secret (Claude Code names a project folder after the working directory, and a
working directory can hold a token). What the tool prints, writes or logs of either
goes through here, so one set of rules decides what is a credential:

- `url_origin` — ``scheme://host[:port]``: what a message, an artifact or a log line
  shows of a server (never the userinfo, the path or the query, where keys sit).
- `url_without_credentials` — the URL as a file the user keeps may hold it
  (``--print-config``): the userinfo and every credential-named query parameter left
  out, and what was left out, so the caller can say where to give it instead; a URL
  whose path or query still trips a secret rule (a key in a path) is not shown at all.
- `secrets_in` — the rules a path or any text trips (extract's ``--redact`` secrets
  group by default): extract refuses such a segment path; sessions refuse such a
  session file, or mask it.
- `masked` — the text with each secret replaced: with a salt (and a key), by the
  placeholder ``«redacted <rule> <hex>»`` extract writes (for what is stored); without
  one, by ``«redacted <rule>»``, which carries no digest a guess could be checked
  against (for a line printed once).

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from taguru_ray.text.redact import (
    CREDENTIAL_NAMES,
    CREDENTIAL_SHORT_NAMES,
    Rule,
    builtin_rules,
    groups_from_setting,
    redact,
    scan_answer_text,
)

UNPARSEABLE = "<unparseable-url>"
# A query parameter is a credential when its name ends in a credential's name (the rules'
# own list: api_key, access_token, client_secret, X-Api-Key, …) or is one of the bare
# names signed URLs and key-in-URL APIs use.
_BARE_NAMES = ("key", "sig", "signature", "auth", "credential", "credentials", "code")
_CREDENTIAL_PARAMETER = re.compile(
    rf"(?:[a-z0-9_.-]*(?:{'|'.join(CREDENTIAL_NAMES)})"
    rf"|(?:[a-z0-9_.-]*[_-])?(?:{'|'.join(CREDENTIAL_SHORT_NAMES)})"
    rf"|(?:x-[a-z]+-)?(?:{'|'.join(_BARE_NAMES)}))",
    re.IGNORECASE,
)
_SECRETS: list[Rule] = builtin_rules(groups_from_setting("secrets"))


def url_origin(url: str) -> str:
    """``scheme://host[:port]`` only (the port when it is not the scheme's default)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return UNPARSEABLE
    if not parts.scheme or not parts.hostname:
        return UNPARSEABLE
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default = {"http": 80, "https": 443}.get(parts.scheme)
    shown = f":{port}" if port is not None and port != default else ""
    return f"{parts.scheme}://{host}{shown}"


def url_without_credentials(url: str) -> tuple[str | None, tuple[str, ...]]:
    """The URL with its userinfo and credential-named query parameters left out, and
    what was left out (``user:password@``, ``?api-key=``); (None, what) when what is
    left still holds a secret, or the URL cannot be read — then nothing of it is shown."""
    if "://" not in url:
        return url, ()
    try:
        parts = urlsplit(url)
        host_port = parts.netloc.rpartition("@")[2]
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return None, ("the URL, which does not parse",)
    removed: list[str] = []
    if "@" in parts.netloc:
        removed.append("user:password@")
    kept = []
    for name, value in query:
        if _CREDENTIAL_PARAMETER.fullmatch(name):
            removed.append(f"?{name}=")
        else:
            kept.append((name, value))
    query_text = urlencode(kept) if len(kept) < len(query) else parts.query
    shown = urlunsplit((parts.scheme, host_port, parts.path, query_text, parts.fragment))
    tripped = secrets_in(shown)
    if tripped:
        return None, (*removed, f"a secret ({', '.join(tripped)})")
    return shown, tuple(removed)


def secrets_in(text: str, rules: Sequence[Rule] | None = None) -> list[str]:
    """The rules `text` trips, distinct, in order (extract's secrets group by default)."""
    return scan_answer_text(text, _SECRETS if rules is None else rules)


def masked(
    text: str, rules: Sequence[Rule] | None = None, salt: str | None = None, key: bytes = b""
) -> str:
    """`text` with each secret replaced: by extract's placeholder salted with `salt`
    (and keyed with `key`) when a salt is given, else by ``«redacted <rule>»``."""
    chosen = _SECRETS if rules is None else rules
    if not scan_answer_text(text, chosen):
        return text
    out, redactions = redact(text, salt or "0" * 64, chosen, key)
    if salt is not None:
        return out
    for found in redactions:
        if not found.preexisting:
            out = out.replace(found.placeholder, f"«redacted {found.rule}»", 1)
    return out
