"""``--config FILE``: the file read, its ``KEY=VALUE`` lines parsed (`settings.resolve`)."""

from __future__ import annotations

from taguru_ray.errors import UsageError
from taguru_ray.settings.resolve import parse_config
from taguru_ray.store.inputs import read_regular


def read_config_file(path: str) -> dict[str, str]:
    """The variables a ``--config`` file sets; unreadable or malformed is a usage error."""
    try:
        text = read_regular(path).decode("utf-8")
    except OSError as error:
        raise UsageError(
            f"--config {path}: cannot read it ({error.strerror or error}) — give a KEY=VALUE file"
        ) from None
    except UnicodeDecodeError:
        raise UsageError(f"--config {path}: not UTF-8 text") from None
    return parse_config(text, path)
