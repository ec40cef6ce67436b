"""The embedding provider: an OpenAI-compatible ``/embeddings`` endpoint, configured as the
reference server configures it (``TAGURU_EMBED_URL``, ``TAGURU_EMBED_MODEL``,
``TAGURU_EMBED_API_KEY``, ``TAGURU_EMBED_TIMEOUT_SECS``, ``TAGURU_EMBED_PASSAGES``,
``TAGURU_PASSAGE_VECTOR_LIMIT``, ``TAGURU_SEMANTIC_FLOOR``; contract/server_variables).

`Embedder.embed` sends texts in batches of 128 as ``{"model", "input": [...]}`` and returns
one float32 row per text, L2-normalised, so a cosine is a dot product. A 429, a 5xx or a
transport error is tried again twice (0.5 s, then 1 s); anything else, a malformed answer
included, fails at once with `EmbeddingsError`, whose message names the endpoint and the
cause. The client is synchronous (urllib): the store calls it from `serve`'s thread pool
or from the CLI, never on an event loop.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from taguru_ray.contract.server_variables import (
    EMBED_API_KEY,
    EMBED_MODEL,
    EMBED_PASSAGES,
    EMBED_TIMEOUT_SECS,
    EMBED_URL,
    PASSAGE_VECTOR_LIMIT,
    SEMANTIC_FLOOR,
)

BATCH = 128
TRIES = 3
DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_PASSAGE_VECTOR_LIMIT = 20_000
DEFAULT_SEMANTIC_FLOOR = 0.35
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})
# A proxy in the environment applies to a remote provider, never to one on loopback.
_OPENER = urllib.request.build_opener()
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


class EmbeddingsError(Exception):
    """The provider could not embed: unreachable, refused, or answered something unusable."""


class _Transient(EmbeddingsError):
    """A failure worth another try (429, 5xx, transport)."""


@dataclass(frozen=True)
class EmbeddingsConfig:
    """What the variables say; `from_env` returns None when no provider is configured."""

    url: str
    model: str
    api_key: str | None = None
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    passages: bool = False
    passage_vector_limit: int = DEFAULT_PASSAGE_VECTOR_LIMIT
    semantic_floor: float = DEFAULT_SEMANTIC_FLOOR

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> EmbeddingsConfig | None:
        """The provider the variables configure, or None without ``TAGURU_EMBED_URL``.
        Raises ValueError naming the variable that is malformed (a usage error)."""
        url = environ.get(EMBED_URL, "").strip()
        if not url:
            return None
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"{EMBED_URL}: expected an http(s) URL of an embeddings endpoint, "
                             f"got {url!r}")  # fmt: skip
        model = environ.get(EMBED_MODEL, "").strip()
        if not model:
            raise ValueError(f"{EMBED_MODEL} is not set: {EMBED_URL} needs the model's name")
        key = environ.get(EMBED_API_KEY, "").strip() or None
        if key is not None and any(c in key for c in "\r\n"):
            raise ValueError(f"{EMBED_API_KEY}: holds a line break")
        return cls(
            url=url,
            model=model,
            api_key=key,
            timeout_seconds=_number(environ, EMBED_TIMEOUT_SECS, DEFAULT_TIMEOUT_SECONDS, 1.0),
            passages=_flag(environ, EMBED_PASSAGES),
            passage_vector_limit=int(
                _number(environ, PASSAGE_VECTOR_LIMIT, DEFAULT_PASSAGE_VECTOR_LIMIT, 0.0)
            ),
            semantic_floor=min(1.0, _number(environ, SEMANTIC_FLOOR, DEFAULT_SEMANTIC_FLOOR, 0.0)),
        )


def _number(environ: Mapping[str, str], name: str, default: float, least: float) -> float:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}: expected a number, got {raw!r}") from None
    if math.isnan(value) or value < least:
        raise ValueError(f"{name}: expected a number of at least {least:g}, got {raw!r}")
    return value


def _flag(environ: Mapping[str, str], name: str) -> bool:
    raw = environ.get(name, "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ValueError(f"{name}: expected 1/true or 0/false, got {raw!r}")


class Embedder:
    """One configured provider."""

    def __init__(self, config: EmbeddingsConfig) -> None:
        self.config = config
        self.width: int | None = None  # the width it last answered, once it has

    @property
    def model(self) -> str:
        return self.config.model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), width) float32, rows L2-normalised; raises `EmbeddingsError`."""
        rows = [self._batch(list(texts[i : i + BATCH])) for i in range(0, len(texts), BATCH)]
        if not rows:
            return np.zeros((0, 0), np.float32)
        widths = {r.shape[1] for r in rows}
        if len(widths) > 1:
            raise EmbeddingsError(f"{self.config.url} answered vectors of widths {sorted(widths)}")
        self.width = rows[0].shape[1]
        return normalise(np.concatenate(rows))

    def _batch(self, texts: list[str]) -> np.ndarray:
        retrying = Retrying(
            stop=stop_after_attempt(TRIES),
            wait=wait_exponential(multiplier=0.5, max=2.0),
            retry=retry_if_exception_type(_Transient),
            reraise=True,
        )
        try:
            return retrying(self._call, texts)
        except _Transient as error:
            raise EmbeddingsError(f"{error} (after {TRIES} tries)") from None

    def _call(self, texts: list[str]) -> np.ndarray:
        body = json.dumps({"model": self.model, "input": texts}, ensure_ascii=False)
        request = urllib.request.Request(self.config.url, data=body.encode(), method="POST")
        request.add_header("Content-Type", "application/json")
        if self.config.api_key:
            request.add_header("Authorization", f"Bearer {self.config.api_key}")
        where = self.config.url
        opener = _DIRECT if urllib.parse.urlsplit(where).hostname in _LOOPBACK else _OPENER
        try:
            with opener.open(request, timeout=self.config.timeout_seconds) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            detail = error.read()[:200].decode("utf-8", "replace")
            failure = f"{where} answered {error.code}: {detail}".rstrip(": ")
            if error.code == 429 or error.code >= 500:
                raise _Transient(failure) from None
            raise EmbeddingsError(failure) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise _Transient(f"{where} could not be reached: {reason}") from None
        return parse_response(raw, len(texts), where)


def parse_response(raw: bytes, count: int, where: str) -> np.ndarray:
    """The answer's vectors in input order (by each item's `index`), as float32 rows."""
    try:
        data = json.loads(raw)["data"]
        items = sorted(data, key=lambda item: item.get("index", 0)) if len(data) > 1 else data
        matrix = np.array([item["embedding"] for item in items], dtype=np.float32)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise EmbeddingsError(f"{where} answered no usable embeddings ({error})") from None
    if matrix.ndim != 2 or matrix.shape[0] != count or matrix.shape[1] == 0:
        raise EmbeddingsError(
            f"{where} answered {matrix.shape[0] if matrix.ndim else 0} vectors for {count} "
            "inputs (or vectors of no width)"
        )
    if not np.isfinite(matrix).all():
        raise EmbeddingsError(f"{where} answered a vector with a non-finite component")
    return matrix


def normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero), float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def embedder_from_env(environ: Mapping[str, str]) -> Embedder | None:
    """The provider the variables configure, None without one; ValueError names a bad
    variable."""
    config = EmbeddingsConfig.from_env(environ)
    return None if config is None else Embedder(config)
