"""Where an endpoint's requests go: its URL completed, its proxy, netrc and key style."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import aiohttp
from aiohttp.helpers import basicauth_from_netrc, get_env_proxy_for_url, netrc_from_env
from yarl import URL


@dataclass(frozen=True)
class Route:
    """How requests reach one endpoint: its URL, and what the environment adds."""

    url: str
    proxy: URL | None = None
    proxy_auth: aiohttp.BasicAuth | None = None
    auth: aiohttp.BasicAuth | None = None  # from ~/.netrc (NETRC), when no API key is set

    @property
    def key_header(self) -> str:
        """How the API key is sent: Azure OpenAI takes an ``api-key`` header, every other
        OpenAI-compatible server a Bearer ``Authorization``."""
        host = URL(self.url).host or ""
        return "api-key" if host.endswith(AZURE_HOSTS) else "Authorization"

    @classmethod
    def from_environment(cls, url: str, *, api_key: bool) -> Route:
        """What aiohttp's `trust_env` would apply: HTTP(S)_PROXY unless NO_PROXY names
        the host, and the host's netrc entry unless a Bearer key is sent."""
        target = URL(url)
        proxy, proxy_auth = None, None
        with contextlib.suppress(LookupError):
            proxy, proxy_auth = get_env_proxy_for_url(target)
        auth = None
        if not api_key and target.host is not None:
            with contextlib.suppress(LookupError):
                auth = basicauth_from_netrc(netrc_from_env(), target.host)
        return cls(url, proxy, proxy_auth, auth)


AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com")


def endpoint_url(url: str) -> str:
    """TAGURU_EXTRACT_URL names the /chat/completions endpoint; a bare base URL
    (``…/v1``) is completed so Ollama- and vLLM-style base URLs work as typed. The
    query (Azure's ``?api-version=…``) stays where it was, after the path."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    return urlunsplit(parts._replace(path=path))
