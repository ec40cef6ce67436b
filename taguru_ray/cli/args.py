"""What the record-reading verbs share: argparse's exit turned into an exit code."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

import fsspec

from taguru_ray.errors import EXIT_USAGE


def write_report(path: str, data: object) -> str | None:
    """Write a JSON report (pretty, UTF-8) to a path or fsspec URL; the error, if any."""
    body = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    try:
        with fsspec.open(path, "w", encoding="utf-8") as handle:
            handle.write(body)
    except OSError as error:
        return f"writing {path}: {error}"
    return None


def parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace | int:
    """The parsed arguments, or the code to exit with: --help is 0, a usage error 2
    (argparse has already printed either)."""
    try:
        return parser.parse_args(list(argv))
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
