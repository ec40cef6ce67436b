"""`sessions import`'s memory per byte of one long session line (issue 49, item 12).

A coding agent writes a whole tool output — a `cat` of a log, an env dump — as one
JSON line, and the secret scan reads every line at every level it encodes. The scan
once kept about 120 bytes of memory per byte of such a line (10 MB: 1.25 GB). This
writes Claude Code sessions whose one tool result is N MiB on one line (log lines,
a credential among them, so `--mask` places a replacement deep in the line) and
imports each with `taguru-ray sessions import --mask` in a fresh interpreter that
reports its own peak RSS (`ru_maxrss`) when the import returns. The marginal memory
per input byte is the difference of two sizes' peaks over the difference of their
bytes: the interpreter and its imports are in both and cancel.

    python -m benchmarks.sessions_memory [--mib 2 16]

`make bench` runs it as one of its steps (`benchmarks/run.py`); the JSON holds each
size's peak and the bytes per input byte, with the target (≤ 20, against 120 before).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SESSION_ID = "7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
MiB = 1 << 20
TARGET_BYTES_PER_BYTE = 20.0
# Run in the child: import, then say the peak resident set size (Linux: KiB).
_CHILD = (
    "import resource, sys\n"
    "from taguru_ray.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('PEAK_KIB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def session_bytes(line_bytes: int) -> bytes:
    """A Claude Code session: a question, one `cat` whose result is `line_bytes` of log on
    one JSON line (an API key set halfway through it), and an answer."""
    lines: list[dict[str, Any]] = []

    def add(kind: str, content: Any) -> None:
        n = len(lines)
        message: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            message |= {"id": f"m{n}", "type": "message", "model": "claude-x"}
        lines.append({
            "parentUuid": f"u{n - 1}" if n else None, "isSidechain": False,
            "userType": "external", "cwd": "/home/wang/src/app", "sessionId": SESSION_ID,
            "version": "2.0.46", "gitBranch": "main", "uuid": f"u{n}",
            "timestamp": f"2025-10-05T01:00:{n:02d}.000Z", "type": kind, "message": message,
        })  # fmt: skip

    add("user", "Why does build-release.sh fail? Look at the boot log.")
    command = {"command": "cat boot.log"}
    use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": command}
    add("assistant", [use])
    rows = [f"kernel: boot line {k}, nothing to see" for k in range(line_bytes // 36)]
    rows[len(rows) // 2] = "export API_KEY=Zq8vR2mK4tW9xB7nC3pL"
    add("user", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "\n".join(rows)}])
    add("assistant", [{"type": "text", "text": "config.txt is missing from the boot folder."}])
    return ("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n").encode()


def import_peak(work: Path, mib: float) -> dict[str, Any]:
    """One `sessions import --mask` of a session with an `mib` MiB line, in a fresh
    interpreter: its exit code, the file's bytes and the interpreter's peak RSS."""
    folder = work / f"line-{mib:g}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{SESSION_ID}.jsonl"
    path.write_bytes(session_bytes(int(mib * MiB)))
    argv = ["sessions", "import", str(path), "--store", str(folder / "store"), "--mask"]
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *argv], capture_output=True, text=True, timeout=1800
    )
    peak = next(
        (int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("PEAK_KIB")),
        None,
    )
    return {
        "line_mib": mib,
        "file_bytes": path.stat().st_size,
        "exit_code": done.returncode,
        "peak_rss_mb": None if peak is None else round(peak / 1024, 1),
        "stderr_tail": done.stderr[-400:],
    }


def measure(work: Path, sizes_mib: tuple[float, ...]) -> dict[str, Any]:
    """Each size's import, and the marginal bytes of memory per input byte between the
    smallest and the largest."""
    runs = [import_peak(work, mib) for mib in sorted(sizes_mib)]
    small, large = runs[0], runs[-1]
    per_byte = None
    if small["peak_rss_mb"] is not None and large["peak_rss_mb"] is not None:
        grown = (large["peak_rss_mb"] - small["peak_rss_mb"]) * MiB
        per_byte = round(grown / (large["file_bytes"] - small["file_bytes"]), 2)
    return {
        "runs": runs,
        "bytes_per_input_byte": per_byte,
        "target_bytes_per_input_byte": TARGET_BYTES_PER_BYTE,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=float, nargs="+", default=[2.0, 16.0])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="taguru-ray-bench-sessions-") as work:
        print(json.dumps(measure(Path(work), tuple(args.mib)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
