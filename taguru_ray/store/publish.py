"""A whole file or none: staged under a hidden temporary name, then renamed over
its target, on a local folder or any fsspec URL.

A report a CI job reads next (``evaluation.json``, ``changes.jsonl``,
``retrieval.json``) is never seen half-written, and a failed write leaves no
``.tmp`` behind.
"""

from __future__ import annotations

import contextlib
import posixpath
import secrets

import fsspec


def publish(url: str, data: bytes) -> None:
    """Write `data` to `url` atomically; OSError (with the path) when it cannot be."""
    fs, path = fsspec.core.url_to_fs(url)
    parent, name = posixpath.split(path)
    temp = posixpath.join(parent, f".{name}.{secrets.token_hex(4)}.tmp")
    if fs.isdir(path):  # a rename would land inside it, not over it
        raise OSError(f"{url}: is a directory")
    try:
        with fs.open(temp, "wb") as handle:
            handle.write(data)
        fs.mv(temp, path)
    except Exception as error:  # any failure: leave nothing of this attempt behind
        with contextlib.suppress(Exception):
            if fs.exists(temp):
                fs.rm(temp)
        raise OSError(f"{url}: {getattr(error, 'strerror', None) or error}") from None
