"""The console script's own variables (not settings of a run), declared once."""

from __future__ import annotations

from collections.abc import Mapping

DEBUG = "TAGURU_RAY_DEBUG"

CLI_VARIABLES: Mapping[str, str] = {
    DEBUG: "1 prints the traceback of an unexpected error under its one line (as --debug "
    "before the verb does)",
}
