"""The preflight: one ``GET …/models`` per endpoint before a run's first request.

A wrong key, a URL without its ``/v1``, a model the server does not have or a
server that is not up would otherwise fail every segment, one line each. The
run asks each endpoint once, all at once, with what its completions send — the
key header, the proxy and the netrc credentials of its `Route` — bounded by
PREFLIGHT_TIMEOUT_S, and `endpoint_check.verdict` judges each answer. The
first endpoint (in the order given) with a verdict stops the run with it: an
endpoint that cannot serve would fail its share of the segments, so a run with
one bad endpoint of several is refused too, naming it (ADR 0037).

A cheap request that changes nothing at the provider and costs no tokens; it is
sent only when a segment is about to need the model (`engine/run.py`), never by
a rerun that skips every segment.
"""

from __future__ import annotations

import asyncio
import socket
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from taguru_ray.contract.settings.groups import Transport
from taguru_ray.errors import UsageError
from taguru_ray.llm import endpoint_check
from taguru_ray.llm.client import ChatClient
from taguru_ray.llm.endpoint_check import Blame, Reply

PREFLIGHT_TIMEOUT_S = 10.0
MAX_LIST_BYTES = 4 * 1024 * 1024  # a hosted API lists hundreds of models; past this, unjudged
CHAT_PATH = "/chat/completions"


def models_url(chat_url: str) -> tuple[str, bool]:
    """Where the model list of a ``…/chat/completions`` URL lives, and whether its answer
    can judge the URL and the model. An Azure deployment URL
    (``/openai/deployments/NAME/chat/completions``) lists its resource's models at
    ``/openai/models``, not its deployments: there only the key is judged."""
    parts = urlsplit(chat_url)
    base = parts.path.removesuffix(CHAT_PATH)
    if "/deployments/" in base:
        root = base.split("/deployments/", 1)[0]
        return urlunsplit(parts._replace(path=f"{root}/models", fragment="")), False
    return urlunsplit(parts._replace(path=f"{base}/models", fragment="")), True


async def check(
    http: aiohttp.ClientSession, transport: Transport, timeout: float = PREFLIGHT_TIMEOUT_S
) -> str | None:
    """The line that stops the run, or None when every endpoint may serve it."""
    client = ChatClient.of(http, transport)
    blame = Blame.of(transport)
    asked = [models_url(client.route(i)[0].url) for i in range(len(transport.endpoints))]
    replies = await asyncio.gather(
        *(_ask(http, client, i, url, blame, timeout) for i, (url, _) in enumerate(asked))
    )
    for (url, judged), reply in zip(asked, replies, strict=True):
        line = endpoint_check.verdict(url, reply, blame, judge_listing=judged, timeout=timeout)
        if line is not None:
            return line
    return None


async def _ask(
    http: aiohttp.ClientSession,
    client: ChatClient,
    endpoint: int,
    url: str,
    blame: Blame,
    timeout: float,
) -> Reply:
    route, headers = client.route(endpoint)
    try:
        async with (
            asyncio.timeout(timeout),
            http.get(
                url,
                headers={k: v for k, v in headers.items() if k != "Content-Type"},
                proxy=route.proxy,
                proxy_auth=route.proxy_auth,
                auth=route.auth,
                allow_redirects=False,  # a redirect is no verdict; a key never follows one
            ) as response,
        ):
            return Reply(response.status, await response.content.read(MAX_LIST_BYTES))
    except TimeoutError:
        return Reply(failure=endpoint_check.TIMED_OUT)
    except aiohttp.InvalidURL:
        raise UsageError(
            f"{blame.endpoint}: the URL cannot be used — give the API's base "
            f"URL, e.g. {endpoint_check.EXAMPLE_BASE}"
        ) from None
    except aiohttp.ClientError as error:
        return _failure(error)


def _failure(error: aiohttp.ClientError) -> Reply:
    """Why no answer came, in the OS's words (never the URL, which may carry a key)."""
    if isinstance(error, aiohttp.ClientProxyConnectionError):
        return Reply(failure=endpoint_check.PROXY, detail=_os_words(error))
    if isinstance(error, aiohttp.ClientSSLError):
        return Reply(failure=endpoint_check.TLS, detail=type(error).__name__)
    if isinstance(error, aiohttp.ClientConnectorError):
        cause = error.os_error
        if isinstance(cause, socket.gaierror) or isinstance(error, aiohttp.ClientConnectorDNSError):
            return Reply(failure=endpoint_check.UNRESOLVED, detail=_os_words(error))
        if isinstance(cause, ConnectionRefusedError):
            return Reply(failure=endpoint_check.REFUSED)
        return Reply(failure=endpoint_check.FAILED, detail=_os_words(error))
    return Reply(failure=endpoint_check.FAILED, detail=type(error).__name__)


def _os_words(error: aiohttp.ClientConnectorError) -> str:
    return error.os_error.strerror or type(error.os_error).__name__
