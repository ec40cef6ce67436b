"""Errors a user can cause, typed by the exit code they end the run with.

Exit codes are decided here and nowhere else: 0 every segment written or
skipped, 1 some segment failed or a startup I/O problem, 2 a usage error,
130 a cooperative stop in which no segment failed.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

# Every stderr line about the run starts so, as the reference tool's do (users grep it).
MESSAGE_PREFIX = "taguru: extract: "
# Where the reference's wording is the contract, its prefix; every other command's lines
# start ``taguru-ray: <command>: `` with the command as typed, sub-verb included (ADR 0058).
REFERENCE_PREFIXES = {
    "extract": MESSAGE_PREFIX,  # CONTRACT.md, seed 000
    "sessions extract": MESSAGE_PREFIX,  # extract's flags, parser and engine over sessions
    "benchmark extract": "taguru: benchmark: ",  # BENCHMARK.md 1.2, 1.7
}


def prefix(command: str) -> str:
    """The start of every stderr line `command` (``sessions import``) prints."""
    return REFERENCE_PREFIXES.get(command, f"taguru-ray: {command}: ")


def exit_code(failed: int, stopped: bool) -> int:
    """A run's exit code, as the reference decides it: a failed segment (1) outranks a
    cooperative stop (130), so a script never reads "stopped safely, rerun to resume"
    over a segment that needs attention."""
    if failed:
        return EXIT_FAILED
    return EXIT_INTERRUPTED if stopped else EXIT_OK


class TaguruRayError(Exception):
    """Base of every error the CLI turns into a message and an exit code."""

    exit_code = EXIT_FAILED


class UsageError(TaguruRayError):
    """A flag, variable or argument is wrong; the message names it and the fix."""

    exit_code = EXIT_USAGE


class StartupError(TaguruRayError):
    """The run cannot start (unwritable --out, a held lock, …); nothing was changed."""

    exit_code = EXIT_FAILED
