"""How a setting's text (a flag's argument, a variable's value) becomes its value.

Each parser raises ValueError with the fix; `resolve` prefixes it with where the
text came from (the flag, or the variable and the file it was in).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from urllib.parse import urlsplit

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})

Parse = Callable[[str], object]


def text(value: str) -> str:
    return value


def column(value: str) -> str:
    """A dataset column's name: any text but an empty one."""
    if not value.strip():
        raise ValueError("expected a column name, got an empty one")
    return value


def int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            raise ValueError(f"needs an integer of at least {minimum}, got {value!r}") from None
        if number < minimum:
            raise ValueError(f"needs an integer of at least {minimum}, got {number}")
        return number

    return parse


def int_between(low: int, high: int) -> Callable[[str], int]:
    def parse(value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            raise ValueError(f"takes {low}..={high}, got {value!r}") from None
        if not low <= number <= high:
            raise ValueError(f"takes {low}..={high}, got {number}")
        return number

    return parse


def seconds(value: str) -> float:
    """A time budget: 0 means unlimited."""
    try:
        number = float(value.strip())
    except ValueError:
        raise ValueError(f"needs a number of seconds (0 = unlimited), got {value!r}") from None
    if not number >= 0 or number == float("inf"):
        raise ValueError(f"needs a finite number of seconds of at least 0, got {value!r}")
    return number


def dollars(value: str) -> float:
    """An amount of US dollars: finite, at least 0."""
    try:
        number = float(value.strip().removeprefix("$"))
    except ValueError:
        number = float("nan")
    if not 0 <= number < float("inf"):
        raise ValueError(f"needs an amount of US dollars (a number of 0 or more), got {value!r}")
    return number


def positive_seconds(value: str) -> float:
    """A period: above 0 and finite."""
    try:
        number = float(value.strip())
    except ValueError:
        number = float("nan")
    if not 0 < number < float("inf"):
        raise ValueError(f"needs a positive number of seconds, got {value!r}")
    return number


def boolish(value: str) -> bool:
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"takes 1/true/yes/on or 0/false/no/off, got {value!r}")


def choice(*choices: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if value not in choices:
            raise ValueError(f"takes one of {', '.join(choices)}, got {value!r}")
        return value

    return parse


def credential(value: str) -> str | None:
    """A key as pasted: surrounding whitespace (a trailing newline from a file) dropped;
    a line break or control character inside would split the request's header, so it
    is refused — without ever echoing the value."""
    key = value.strip()
    if any(char.isspace() or not char.isprintable() for char in key):
        raise ValueError(
            "holds a line break, a space or a control character inside (not shown) — set it "
            "to the key alone"
        )
    return key or None


ENDPOINT_EXAMPLE = "e.g. http://127.0.0.1:8000/v1"


def unprintable(url: str) -> bool:
    """Whether a URL holds a space or a control character inside: no request line can
    carry it (http.client refuses it as InvalidURL once the run is under way), and a
    line that echoed it could rewrite the terminal."""
    return any(char.isspace() or not char.isprintable() for char in url)


def endpoint(value: str) -> str:
    """An endpoint URL: http:// or https://, a host, a port (if any) that is a number.

    Refused here, as a usage error, rather than by every request failing the same way
    once the run has started. The text is never echoed: a URL may carry credentials.
    """
    url = value.strip()
    if unprintable(url):
        raise ValueError(f"holds a space or a control character — {ENDPOINT_EXAMPLE}")
    if "://" not in url:
        raise ValueError(f"has no http:// or https:// in front — {ENDPOINT_EXAMPLE}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError(f"its port is not a number in 1..65535 — {ENDPOINT_EXAMPLE}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"is not an http:// or https:// URL — {ENDPOINT_EXAMPLE}")
    if not parts.hostname or port == 0:
        raise ValueError(f"names no host (or port 0) — {ENDPOINT_EXAMPLE}")
    return url


# The protocols a refusal offers instead of one nobody knows: the common ones, not fsspec's
# sixty (`fsspec.registry.known_implementations` has them all).
COMMON_PROTOCOLS = "s3://, gs://, az://, abfs://, hdfs://, http(s)://, file://"


def location(value: str) -> str:
    """A local path or an fsspec URL whose filesystem this install can open, as written.

    A protocol fsspec does not know, or one whose driver package is not installed
    (``gs://`` without gcsfs), is refused here with the fix — not met as fsspec's
    ValueError or ImportError when the run first opens it. Each link of a chained URL
    (``simplecache::s3://…``) is checked. A NUL is refused too: no file name holds
    one, and every OS call raises ValueError on it.
    """
    if "\x00" in value:
        raise ValueError(f"{_shown(value)}: holds a NUL character, which no file name can hold")
    for protocol in _protocols(value):
        problem = _filesystem_problem(protocol)
        if problem is not None:
            raise ValueError(f"{_shown(value)}: {problem}")
    return value


def _protocols(url: str) -> list[str]:
    """Every protocol a (chained) URL names; none for a local path."""
    links = url.split("::")
    found = []
    for at, link in enumerate(links):
        if "://" in link:
            found.append(link.split("://", 1)[0].lower())
        elif link and at < len(links) - 1:  # a bare protocol ahead of the target
            found.append(link.lower())
    return found


def _filesystem_problem(protocol: str) -> str | None:
    import fsspec  # here: a setting without a URL never pays for it
    from fsspec.registry import known_implementations

    try:
        fsspec.get_filesystem_class(protocol)
    except ImportError:
        package = str(known_implementations.get(protocol, {}).get("class", "")).split(".")[0]
        if not package:
            return f"{protocol}:// needs a driver package that is not installed"
        return (
            f"{protocol}:// needs the {package} package, which is not installed — "
            f"pip install {package}"
        )
    except ValueError:
        return (
            f"no filesystem for {protocol}:// — give a local path or a URL fsspec knows "
            f"({COMMON_PROTOCOLS}, …)"
        )
    return None


def _shown(url: str) -> str:
    """The URL for a message: control characters escaped, no credential (the one masker,
    `text/masking.py`: userinfo and credential parameters left out, else the origin)."""
    from taguru_ray.text.masking import url_origin, url_without_credentials
    from taguru_ray.text.terminal import printable

    shown, _ = url_without_credentials(url)
    return printable(shown if shown is not None else url_origin(url))


def passphrase(value: str) -> str | None:
    """A secret phrase (spaces allowed), trimmed; a control character inside is refused,
    never echoed."""
    phrase = value.strip()
    if any(not char.isprintable() for char in phrase):
        raise ValueError("holds a control character (not shown) — set it to the phrase alone")
    return phrase or None


def inflight(value: str) -> int | str:
    if value.strip() == "auto":
        return "auto"
    try:
        return int_at_least(1)(value)
    except ValueError:
        raise ValueError(f"takes a whole number of at least 1 or auto, got {value!r}") from None


def progress(value: str) -> str:
    word = value.strip().lower()
    if word in ("auto", "bar", "lines", "off"):
        return word
    raise ValueError(f"takes auto, bar, lines or off, got {value!r}")


def step(value: str) -> str:
    from taguru_ray.contract.steps import STEP_NAMES

    if value not in STEP_NAMES:
        raise ValueError(f"takes one of: {', '.join(STEP_NAMES)}; got {value!r}")
    return value


def trace_attempts(value: str) -> bool:
    # Seed 000: off/0/false/no disables the attempts log; anything else keeps it.
    return value.strip().lower() not in {"off", "0", "false", "no"}


def redact(value: str) -> str:
    word = value.strip().lower()
    if word in FALSE_WORDS:
        return ""
    if word in TRUE_WORDS or word == "both":
        return "both"
    if word in {"secrets", "pii"}:
        return word
    raise ValueError(f"takes 1/true (both groups), secrets, pii or 0/false, got {value!r}")


def date(value: str) -> int:
    """``YYYY-MM-DD`` (UTC midnight) or positive epoch-second digits."""
    if value.isdigit():
        epoch = int(value)
        if epoch > 0:
            return epoch
        raise ValueError("takes YYYY-MM-DD (UTC midnight) or positive epoch seconds")
    try:
        day = _dt.date.fromisoformat(value) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) else None
    except ValueError:
        day = None
    if day is None:
        raise ValueError("takes YYYY-MM-DD (UTC midnight) or positive epoch seconds")
    epoch = int(_dt.datetime(day.year, day.month, day.day, tzinfo=_dt.UTC).timestamp())
    if epoch <= 0:
        raise ValueError("takes a date after 1970-01-01 or positive epoch seconds")
    return epoch


ACCELERATOR_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")


def accelerator(value: str) -> str:
    """A Ray accelerator type (H100, A10G, L4, A100-80G, TPU-V5E): the name Ray gives a
    node's GPUs, as its `accelerator_type:<name>` resource."""
    name = value.strip()
    if not ACCELERATOR_RE.fullmatch(name):
        raise ValueError(f"takes a Ray accelerator type such as H100, A10G or L4, got {value!r}")
    return name


def engine_args(value: str) -> str:
    """Words for the model server, kept as written: they must split as a shell splits."""
    from taguru_ray.contract.engines import split_args

    split_args(value)
    return value


def engine_command(value: str) -> str:
    """A server's command line with {host}, {port} (required) and {model} in it."""
    from taguru_ray.contract.engines import split_template

    split_template(value)
    return value
