"""What a run says of its segments and of itself: the ordered report, a row per segment,
the closing lines and the exit code.

Each segment's lines print in name order whatever order segments end in
(`OrderedReport`), so a log reads the same on every run. What the Python API hands
back is kept beside them: a row per segment that said something, and a bit per
segment skipped as unchanged, so a million-segment rerun stays small.

The summary is said once, when the gateway's last counters are in (`close`): the
stdout line is seed 000's, which scripts parse; the stderr lines say what the run
asked and cost, and how far a stopped run reached. The exit code is decided here,
over `errors.exit_code`. `gateway_record` is the same counters as the sidecar's last
record.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from typing import Any

from taguru_ray.contract.records.sidecar import GatewayRecord
from taguru_ray.engine.scan import Console, Tally
from taguru_ray.engine.segment import FAILURE_PREFIX
from taguru_ray.engine.spend import money
from taguru_ray.engine.stopping import Stopping
from taguru_ray.engine.window import OrderedReport
from taguru_ray.errors import EXIT_FAILED, exit_code
from taguru_ray.pricing.tariff import Tariff

STOPPED_TAIL = " — stopped early, chunk checkpoints saved; rerun to resume"

Lines = list[tuple[str, str]]  # ("out" | "err", line), in the order they print


@dataclass(frozen=True)
class SegmentRow:
    """How one segment ended in this run, as the Python API reports it."""

    source: str
    status: str  # written | unchanged | failed | interrupted
    report: str | None = None  # the stdout line of a written segment
    notes: tuple[str, ...] = ()  # its stderr lines, the failure line last
    completions: int = 0


class Summary:
    def __init__(
        self,
        console: Console,
        tally: Tally,
        sources: list[str],
        tariff: Tariff,
        stop: Stopping,
        out: str = "OUT",
    ) -> None:
        self.tariff = tariff  # how the run is charged (engine/spend.py)
        self.segments: dict[int, SegmentRow] = {}
        self.unchanged = bytearray(len(sources))
        self.stats: dict[str, Any] = {}  # the gateway's counters as the run ended
        self.store_failed = False  # the end-of-run writes failed: exit 1 after the summary
        self._sources = sources
        self._console = console
        self._tally = tally
        self._stop = stop
        self._out = out  # --out as given, for the command the empty-segments line names
        self._report = OrderedReport(console.out, console.err)
        self._started = time.monotonic()

    def skipped(self, index: int, lines: Lines) -> None:
        """Segment `index` was skipped as unchanged: a bit, not a row."""
        self.unchanged[index] = 1
        self._report.add(index, lines)

    def ended(self, index: int, row: SegmentRow, lines: Lines) -> None:
        """Segment `index` ended otherwise (written, failed, refused, interrupted)."""
        self._report.add(index, lines)
        self.segments[index] = row

    def row(self, index: int) -> SegmentRow | None:
        """How segment `index` ended in this run, or None when the run never reached it."""
        row = self.segments.get(index)
        if row is None and self.unchanged[index]:
            return SegmentRow(self._sources[index], "unchanged")
        return row

    def close(self, stats: dict[str, Any], paced: str | None = None) -> int:
        """Say the summary over the gateway's last counters (`stats`, empty when it could
        not be asked) and what bounded the run (`paced`, the pacing part's line, when the
        run had a steady state); the run's exit code."""
        self.stats = stats
        tally = self._tally
        stopped = self._stop.requested
        tail = STOPPED_TAIL if stopped else ""
        self._console.out(  # stdout, as seed 000's: scripts parse it
            f"extract: {tally.written} written, {tally.unchanged} unchanged, {tally.failed} failed "
            f"of {tally.total} segment(s){tail}"
        )
        elapsed = time.monotonic() - self._started
        requests = sum(stats.get("outcomes", {}).values())
        cost = stats.get("cost_usd")
        priced = (
            f"cost {money(cost)} ({self.tariff.basis})"
            if isinstance(cost, (int, float))
            else f"cost unknown: {self.tariff.basis} (--prices FILE or --price-per-hour)"
        )
        self._console.err(
            f"{FAILURE_PREFIX}{stats.get('attempts', 0)} completion(s), {requests} request(s), "
            f"{stats.get('input_tokens', 0)} input + {stats.get('output_tokens', 0)} output "
            f"tokens in {elapsed:.1f} s · {priced}"
        )
        if paced is not None:
            self._console.err(f"{FAILURE_PREFIX}{paced}")
        if tally.empty:  # written and exit 0, yet nothing to import: say it once, here
            self._console.err(
                f"{FAILURE_PREFIX}{tally.empty} segment(s) wrote 0 associations — see "
                f"taguru-ray report {shlex.quote(self._out)} (what each answer held and why it "
                "was removed)"
            )
        if stopped:
            self._console.err(
                f"{FAILURE_PREFIX}stopped after reaching {tally.reached} of {tally.total} "
                "segment(s)"
            )
        if self._stop.fatal is not None:
            self._console.err(f"{FAILURE_PREFIX}{self._stop.fatal}")
            return EXIT_FAILED  # stopped by fail-fast, whatever the tally
        if tally.unsettled and not stopped:  # never exit 0 short of a segment
            self._console.err(
                f"{FAILURE_PREFIX}{tally.unsettled} of {tally.total} segment(s) were neither "
                "written, unchanged nor failed, yet the run was not stopped — rerun to resume"
            )
            return EXIT_FAILED
        return exit_code(tally.failed + int(self.store_failed), stopped)


def gateway_record(
    run_id: str, stats: dict[str, Any], steady: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The sidecar's last record: the gateway's counters as the run ends (none when the
    gateway could not be asked — a record of zeros says so), and what the steady state
    kept in flight and what bounded it (`pacing.record_fields`), when it had one."""
    outcomes = {str(name): int(count) for name, count in stats.get("outcomes", {}).items()}
    limit = stats.get("limit")
    return GatewayRecord(
        run_id=run_id,
        completions=int(stats.get("attempts", 0)),
        requests=sum(outcomes.values()),
        outcomes=dict(sorted(outcomes.items())),
        inflight_limit=int(limit) if isinstance(limit, int) else None,
        inflight_adaptive=bool(stats.get("adaptive", False)),
        max_in_flight=int(stats.get("max_in_flight", 0)),
        input_tokens=int(stats.get("input_tokens", 0)),
        output_tokens=int(stats.get("output_tokens", 0)),
        **(steady or {}),
    ).record()
