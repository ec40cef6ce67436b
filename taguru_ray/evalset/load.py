"""Reading eval.jsonl from a local path or an fsspec URL: the package's only I/O.

A file that cannot be read is the same exit-2 error as one that cannot be
parsed: either way the verb has no dataset and must not start.
"""

from __future__ import annotations

import fsspec

from taguru_ray.evalset.parse import parse
from taguru_ray.evalset.records import EvalSet, EvalSetError, Mode


def load(path: str, mode: Mode) -> EvalSet:
    """Read `path` (UTF-8) and `parse` it; messages call the file by `path`."""
    try:
        with fsspec.open(path, "rb") as handle:
            data = handle.read()
    except (OSError, ValueError, ImportError) as error:
        # object stores and unknown protocols raise their own types; say what failed
        raise EvalSetError(f"{path}: cannot read: {error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise EvalSetError(f"{path}: cannot read: not UTF-8 (byte {error.start})") from None
    return parse(text, path, mode)
