"""Ray's own variables taguru-ray reads or sets, declared once.

`RAY_ADDRESS` is a setting (``--address``, `contract/settings`); these are read to
behave well beside Ray, never to configure taguru-ray. The one it sets is set by
the console script, for itself only, and only when the user has not set it.
"""

from __future__ import annotations

from collections.abc import Mapping

USE_TLS = "RAY_USE_TLS"
AUTO_CONNECT = "RAY_ENABLE_AUTO_CONNECT"

RAY_VARIABLES: Mapping[str, str] = {
    USE_TLS: "Ray's TLS switch; when on, the --address check skips its plaintext gRPC "
    "greeting (the TCP connect is still bounded)",
    AUTO_CONNECT: "set to 0 by the console script: a stray Ray call after a verb's Ray "
    "is gone raises instead of starting a second local Ray",
}
