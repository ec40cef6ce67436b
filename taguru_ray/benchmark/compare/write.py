"""Publishing compare's artifacts together or not at all (BENCHMARK.md §2).

Every artifact is staged under a temporary name in RESULTS_DIR first, then
renamed over its target in a fixed order. If staging or any rename fails,
every temp file is removed and so is every artifact this call already
renamed: the directory never holds one computation's differences next to
another's measurements, and never a ``.tmp`` file.
"""

from __future__ import annotations

import contextlib
import posixpath
import secrets
from collections.abc import Sequence
from typing import Any

from taguru_ray.benchmark.compare.manifest import CompareError


def write_artifacts(fs: Any, root: str, artifacts: Sequence[tuple[str, bytes]]) -> None:
    """Stage every (name, bytes), then rename them in order; CompareError on failure."""
    token = secrets.token_hex(4)
    staged: list[tuple[str, str]] = []  # (temp, target)
    published: list[str] = []
    current = root
    try:
        for name, data in artifacts:
            target = posixpath.join(root, name)
            current = posixpath.join(root, f".{name}.{token}.tmp")
            staged.append((current, target))
            with fs.open(current, "wb") as handle:
                handle.write(data)
        for temp, target in staged:
            current = target
            fs.mv(temp, target)
            published.append(target)
    except Exception as error:  # any failure: leave nothing of this attempt behind
        for path in [temp for temp, _ in staged] + published:
            with contextlib.suppress(Exception):
                if fs.exists(path):
                    fs.rm(path)
        raise CompareError(f"writing {current}: {error} — no artifact was written") from None
