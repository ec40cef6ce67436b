"""`GET /metrics`: the server's counters in the Prometheus text format (0.0.4).

Requests are counted by method, route template (never the raw path: a context
name in a label would grow the series without bound) and status; the store's
contexts are a gauge read at scrape time. Names carry the `taguru_` prefix a
Taguru dashboard or probe looks for.
"""

from __future__ import annotations

import threading
from collections import Counter

from aiohttp import web

from taguru_ray import __version__

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: Counter[tuple[str, str, int]] = Counter()

    def count(self, request: web.Request, status: int) -> None:
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else "unmatched"
        with self._lock:
            self._requests[(request.method, route, status)] += 1

    def render(self, contexts: int) -> str:
        lines = [
            "# HELP taguru_build_info The server's version (taguru-ray serve).",
            "# TYPE taguru_build_info gauge",
            f'taguru_build_info{{version="{__version__}",server="taguru-ray"}} 1',
            "# HELP taguru_contexts Contexts in the store.",
            "# TYPE taguru_contexts gauge",
            f"taguru_contexts {contexts}",
            "# HELP taguru_http_requests_total Requests answered, by route template and status.",
            "# TYPE taguru_http_requests_total counter",
        ]
        with self._lock:
            counted = sorted(self._requests.items())
        for (method, route, status), value in counted:
            route = route.replace("\\", "\\\\").replace('"', '\\"')
            lines.append(
                f'taguru_http_requests_total{{method="{method}",route="{route}",'
                f'status="{status}"}} {value}'
            )
        return "\n".join(lines) + "\n"
