"""What a run leaves in --out before its first request, so a refused start can take it back.

Before a run has asked the model anything it has made at most the --out folder
(and its missing parents), the record folders `OutDir.ensure` creates and the
lock file. A run the preflight refuses (ADR 0037) — a wrong key, a server that
is not up — removes again what it made and nothing else: a folder only while
it is empty (``rmdir``), so anything another writer put there stays; whatever
existed before the run is never touched. An object store has no folders, and
its lease object is deleted by the lock's release.
"""

from __future__ import annotations

import os

from taguru_ray.contract.names import CHECKPOINTS, LOCK, TRACE
from taguru_ray.store.outdir import OutDir


class Footprint:
    """The paths a run is about to create under --out, noted before it creates them."""

    def __init__(self, out: OutDir) -> None:
        self._made: list[str] = []  # outermost first
        if not out.local:
            return
        missing = []
        path = os.path.abspath(out.root)
        while not os.path.lexists(path):
            missing.append(path)
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
        self._made = missing[::-1]
        for name in (CHECKPOINTS, TRACE, LOCK):
            inside = os.path.abspath(out.local_path(name))
            if not os.path.lexists(inside):
                self._made.append(inside)

    def take_back(self) -> None:
        """Remove what the run made, innermost first; the first folder that is not empty
        (someone wrote there) ends it, with it and everything above it kept."""
        for path in reversed(self._made):
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    os.rmdir(path)
                else:
                    os.unlink(path)
            except FileNotFoundError:
                continue
            except OSError:
                return
