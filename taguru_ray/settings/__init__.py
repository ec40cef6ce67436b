"""Resolving the settings of `extract` from flags, ``TAGURU_*`` variables and ``--config``
(`resolve`), and the README's table of them (`table`). Each setting is declared once in
`taguru_ray.contract.settings`; the names below are re-exported for the engine and tools."""

from taguru_ray.contract.settings import (
    PROMPT_VERSION,
    Settings,
    checkpoint_fingerprint,
    compute_inputs,
    declarations,
    settings_record,
)
from taguru_ray.settings.resolve import resolve_settings

__all__ = [
    "PROMPT_VERSION",
    "Settings",
    "checkpoint_fingerprint",
    "compute_inputs",
    "declarations",
    "resolve_settings",
    "settings_record",
]
