"""taguru-ray: Taguru's document extraction as a distributed batch job on Ray.

The Python API: ``taguru_ray.extract(paths, out=…, context=…, **settings) -> RunResult``
(`taguru_ray.api`), its settings typed keyword arguments (`ExtractSettings`;
``help(taguru_ray.extract)`` lists them); the record readers
``taguru_ray.inspect(out) -> pyarrow.Table`` and
``taguru_ray.metrics(out, prices=None) -> MetricsTables``, and what the source files
hold, ``taguru_ray.associations(out, texts=False)`` and ``taguru_ray.concepts(out)``
(Arrow tables, `taguru_ray.readers`); and
``taguru_ray.data.extract(ds, out=…, context=…) -> ray.data.Dataset`` over a Ray Dataset
of ``{path, text}`` rows. Importing the package stays light: Ray, Arrow and the engine
load on the first call.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = [
    "ExtractSettings",
    "MetricsTables",
    "RunResult",
    "SegmentResult",
    "__version__",
    "associations",
    "concepts",
    "data",
    "extract",
    "inspect",
    "metrics",
]

if TYPE_CHECKING:
    from taguru_ray import data
    from taguru_ray.api import RunResult, SegmentResult, extract
    from taguru_ray.api_settings import ExtractSettings
    from taguru_ray.readers import MetricsTables, associations, concepts, inspect, metrics

_FROM = {
    "ExtractSettings": "api_settings",
    "extract": "api",
    "RunResult": "api",
    "SegmentResult": "api",
    "inspect": "readers",
    "associations": "readers",
    "concepts": "readers",
    "metrics": "readers",
    "MetricsTables": "readers",
}


def __getattr__(name: str) -> Any:
    if name == "data":
        return importlib.import_module("taguru_ray.data")
    if name in _FROM:
        return getattr(importlib.import_module(f"taguru_ray.{_FROM[name]}"), name)
    raise AttributeError(f"module 'taguru_ray' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The API (`__all__`), though it loads on first use; not this module's helpers."""
    return sorted(set(__all__) | {name for name in globals() if name.startswith("__")})
