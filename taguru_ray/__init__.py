"""taguru-ray: Taguru's document extraction as a distributed batch job on Ray.

The Python API (`taguru_ray.api`): ``taguru_ray.extract(paths, out=…, context=…,
**settings) -> RunResult``. Importing the package stays light: Ray and the engine
load on the first call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["RunResult", "SegmentResult", "__version__", "extract"]

if TYPE_CHECKING:
    from taguru_ray.api import RunResult, SegmentResult, extract


def __getattr__(name: str) -> Any:
    if name in ("extract", "RunResult", "SegmentResult"):
        from taguru_ray import api

        return getattr(api, name)
    raise AttributeError(f"module 'taguru_ray' has no attribute {name!r}")
