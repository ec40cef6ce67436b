"""Which server a client talks to, and how that address may be written down.

`--url` wins; else ``TAGURU_ADDR`` (the environment, then ``--config``), else the
reference server's default ``127.0.0.1:8248``. An address holding a space or a
control character (as extract's endpoint check refuses one) or credentials is
refused before any request (they belong in ``TAGURU_API_TOKEN``), and an
artifact records only scheme, host and port (`mask_url`).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from taguru_ray.contract.server_variables import ADDR
from taguru_ray.contract.settings.values import unprintable
from taguru_ray.text.masking import url_origin

DEFAULT_ADDR = "127.0.0.1:8248"
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1"}


class AddressError(ValueError):
    """A server address that cannot be used; the message names the input and the fix."""


def base_url(
    flag: str | None, environ: Mapping[str, str], config: Mapping[str, str] | None = None
) -> str:
    """The server's base URL, no trailing ``/``: ``--url``, else ``TAGURU_ADDR``, else
    the default. A wildcard bind address (what a server was told to listen on)
    becomes loopback, as a client can only reach it there."""
    if flag is not None:
        raw, named = flag, "--url"
    else:
        named = ADDR
        raw = environ.get(ADDR) or (config or {}).get(ADDR) or DEFAULT_ADDR
    text = raw.strip().rstrip("/")
    if unprintable(text):  # extract's endpoint check: a usage error, not InvalidURL later
        raise AddressError(
            f"{named} holds a space or a control character (not shown) — give http://HOST:PORT"
        )
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise AddressError(f"{named} {raw!r} could not be parsed — give http://HOST:PORT") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AddressError(f"{named} {raw!r} could not be parsed — give http://HOST:PORT")
    if parts.username is not None or parts.password is not None:
        raise AddressError(
            f"{named} must not carry credentials — put the key in TAGURU_API_TOKEN instead"
        )
    if port == 0:
        raise AddressError(f"{named} {raw!r} names port 0 — give the port the server listens on")
    host = _WILDCARDS.get(parts.hostname, parts.hostname)
    if host != parts.hostname:
        shown = f"[{host}]" if ":" in host else host
        text = parts._replace(netloc=shown + (f":{port}" if port else "")).geturl()
    return text


def mask_url(url: str) -> str:
    """``scheme://host[:port]`` only: never userinfo, a path or a query (the one masker,
    `text/masking.py`, decides it for every URL the tool shows)."""
    return url_origin(url)
