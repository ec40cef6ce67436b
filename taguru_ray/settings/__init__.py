"""The settings of `extract`: declared once (`groups`), resolved from flags, variables and
``--config`` (`resolve`), and the compute inputs derived from them (`fingerprint`)."""

from taguru_ray.settings.fingerprint import (
    PROMPT_VERSION,
    checkpoint_fingerprint,
    compute_inputs,
    settings_record,
)
from taguru_ray.settings.model import Settings, declarations
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
