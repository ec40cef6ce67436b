"""What a local Ray that a run starts for itself leaves off (ADR 0086).

A run without --address starts a Ray of its own and stops it at its end. Nobody
opens that Ray's dashboard (the run starts none), its task list or its internal
event statistics, yet by default every process of it pays for them on every
actor call: each core worker buffers a status event per call and ships them to
the GCS every second, and every C++ event loop times each of its handlers.
Both are turned off here; the metrics the run exports for Prometheus
(`llm/metrics.py`) are not touched.

On by request: a `RAY_<key>` variable in the environment wins over the value
here (for example `RAY_task_events_report_interval_ms=1000` brings the task
list back), as it does for any Ray setting. A joined cluster (--address) is
configured by whoever started it: nothing here applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Ray's system settings (`_system_config`) for a local Ray the run starts.
QUIET: dict[str, Any] = {
    # The task events behind the dashboard's task list and `ray list tasks`: 0 stops
    # recording and sending them.
    "task_events_report_interval_ms": 0,
    # Per-handler timing of every C++ event loop, read only by debug dumps.
    "event_stats": False,
}


def local_system_config(environ: Mapping[str, str]) -> dict[str, Any]:
    """`QUIET`, less every key the environment sets itself as `RAY_<key>`."""
    return {key: value for key, value in QUIET.items() if f"RAY_{key}" not in environ}
