"""What the record-reading verbs share: argparse's exit turned into an exit code."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from taguru_ray.errors import EXIT_USAGE


def parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace | int:
    """The parsed arguments, or the code to exit with: --help is 0, a usage error 2
    (argparse has already printed either)."""
    try:
        return parser.parse_args(list(argv))
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
