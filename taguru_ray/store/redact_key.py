"""The key --redact's placeholders are digested under, kept outside every --out.

A placeholder is a keyed digest of the masked value (ADR 0014, issue 16): with
the key, the same secret masks the same way in every run, so reruns write the
same bytes; without it, nobody holding an --out can check a guess at what a
placeholder hides. The key is ``TAGURU_EXTRACT_REDACT_KEY`` when set (any
string: give every machine of a fleet the same one, from a secret store), else
32 random bytes in ``$XDG_CONFIG_HOME/taguru-ray/redact.key`` (``~/.config/...``),
made on first use, readable by its owner only. Another key re-masks every
segment differently, so the manifest re-extracts them all.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from taguru_ray.errors import StartupError

KEY_BYTES = 32


def key_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config")
    return Path(base) / "taguru-ray" / "redact.key"


def redaction_key(configured: str | None) -> bytes:
    """The key: derived from the variable when set, else the key file's (made if missing)."""
    if configured:
        return hashlib.sha256(b"taguru-ray redact key\0" + configured.encode("utf-8")).digest()
    path = key_path()
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags, 0o600)
    except FileExistsError:  # another run made it first: use theirs
        return _read(path)
    except OSError as error:
        raise StartupError(
            f"--redact: cannot make its key file {path} ({error.strerror}) — set "
            "TAGURU_EXTRACT_REDACT_KEY, or make that folder writable"
        ) from None
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(secrets.token_hex(KEY_BYTES) + "\n")
    return _read(path)


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, encoding="ascii", errors="replace") as handle:
        text = handle.read(4 * KEY_BYTES).strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise StartupError(
            f"--redact: its key file {path} does not hold {KEY_BYTES} hex-encoded bytes — "
            "remove it (a new one is made; every segment then re-extracts) or set "
            "TAGURU_EXTRACT_REDACT_KEY"
        )
    return key
