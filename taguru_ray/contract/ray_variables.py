"""Ray's own variables taguru-ray reads (it sets none of them), declared once.

`RAY_ADDRESS` is a setting (``--address``, `contract/settings`); these are read to
behave well beside Ray, never to configure taguru-ray.
"""

from __future__ import annotations

from collections.abc import Mapping

USE_TLS = "RAY_USE_TLS"

RAY_VARIABLES: Mapping[str, str] = {
    USE_TLS: "Ray's TLS switch; when on, the --address check skips its plaintext gRPC "
    "greeting (the TCP connect is still bounded)",
}
