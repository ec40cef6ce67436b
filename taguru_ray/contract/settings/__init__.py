"""The settings of `extract`, declared once (`groups`), and the compute inputs they give
(`fingerprint`): the command line's contract (seeds 000 and 002). Resolving them from
flags, variables and ``--config`` is `taguru_ray.settings`."""

from taguru_ray.contract.settings.digests import InputDigests
from taguru_ray.contract.settings.fingerprint import (
    PROMPT_VERSION,
    checkpoint_fingerprint,
    compute_inputs,
    settings_record,
)
from taguru_ray.contract.settings.model import Settings, declarations

__all__ = [
    "PROMPT_VERSION",
    "InputDigests",
    "Settings",
    "checkpoint_fingerprint",
    "compute_inputs",
    "declarations",
    "settings_record",
]
