"""`taguru-ray serve`: answer Taguru's HTTP surface for an embedded context store.

Parsing and start-up only; the server is `taguru_ray.serve`. Once it accepts
connections, stdout's one line is `listening on HOST:PORT` (flushed), as the
reference server says it, so a parent process can read the port `--port 0`
picked. SIGINT/SIGTERM stop it cleanly. Exit codes: 0 after a signal, 1 when
the address cannot be bound or SQLite cannot open the store (locked, read-only:
`sqlite_wal.opening`), 2 for a bad flag, a `--store` that does not exist
or is not a store, or a malformed `TAGURU_API_TOKEN(S)`/`TAGURU_KEY_SCOPES`/
`TAGURU_EMBED_*`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from taguru_ray.cli.args import OneLineParser
from taguru_ray.context.embeddings import embedder_from_env
from taguru_ray.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, TaguruRayError
from taguru_ray.serve import ServeConfig, serve
from taguru_ray.serve.auth import KeyringError, keyring_from_env
from taguru_ray.serve.state import max_body_bytes_from_env

PROG = "taguru-ray serve"
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def main(argv: list[str]) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse's usage error (2) or --help (0)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        config = ServeConfig(
            writable=args.writable,
            keyring=keyring_from_env(os.environ),
            max_body_bytes=max_body_bytes_from_env(os.environ),
        )
    except (KeyringError, ValueError) as exc:
        return _say(str(exc), EXIT_USAGE)
    folder = Path(args.store)
    if not folder.is_dir():
        return _say(f"--store {args.store}: no such folder", EXIT_USAGE)
    try:
        embedder = embedder_from_env(os.environ)
    except ValueError as exc:
        return _say(str(exc), EXIT_USAGE)
    try:
        store = _open_store(folder, embedder)
    except _NoStore as exc:
        return _say(str(exc), EXIT_USAGE)
    except TaguruRayError as exc:  # the store's own line: a file, no database, read-only
        return _say(str(exc), exc.exit_code)
    except ImportError as exc:
        return _say(f"the embedded context store is not available: {exc}", EXIT_FAILED)
    except Exception as exc:  # the store names what is wrong with the folder
        return _say(f"--store {args.store}: not a context store: {exc}", EXIT_USAGE)
    if config.keyring.disabled and args.host not in LOOPBACK:
        print(
            f"{PROG}: TAGURU_API_TOKEN(S) is not set: {args.host} accepts unauthenticated requests",
            file=sys.stderr,
        )
    try:
        asyncio.run(_run(store, args.host, args.port, config))
    except OSError as exc:
        return _say(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", 1)
    finally:
        _close(store)
    return EXIT_OK


class _NoStore(Exception):
    pass


def _open_store(folder: Path, embedder: Any = None) -> Any:
    """The folder's store, never a new one: serving an empty folder is a mistake."""
    from taguru_ray.context.store import SqliteStore

    try:
        return SqliteStore(folder, create=False, embedder=embedder)
    except FileNotFoundError:
        raise _NoStore(
            f"--store {folder}: no context store here "
            f"(taguru-ray import PATH --store {folder} makes one)"
        ) from None


async def _run(store: Any, host: str, port: int, config: ServeConfig) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await serve(store, host, port, config=config, on_ready=_announce, stop=stop)


def _announce(host: str, port: int) -> None:
    shown = f"[{host}]" if ":" in host else host
    print(f"listening on {shown}:{port}", flush=True)


def _close(store: Any) -> None:
    close = getattr(store, "close", None)
    if callable(close):
        close()


def _say(message: str, code: int) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return code


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port 0..65535, got {text!r}")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog=PROG,
        label="serve",
        description="Answer Taguru's HTTP API (search, resolve, query, citations, import) "
        "for an embedded context store.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--store", required=True, metavar="DIR", help="the store folder to serve")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=_port,
        default=8248,
        help="port; 0 picks a free one (default 8248). Ready when stdout says "
        "`listening on HOST:PORT`",
    )
    p.add_argument(
        "--writable",
        action="store_true",
        help="accept POST /import (read-only without it; a dry run is always answered)",
    )
    return p


EPILOG = """\
auth: bearer keys as the reference server reads them. TAGURU_API_TOKEN is the
key "default"; TAGURU_API_TOKENS adds named keys ("ci:tokA,laptop:tokB");
TAGURU_KEY_SCOPES grants roles by key name ({"ci": "read", "bot": {"role":
"admin", "contexts": ["sake"]}}; read < write < admin; an unnamed key is
admin). No key set: the API is open. Reads need read; POST /import needs
--writable and, with keys, an admin key. /health is always open.
TAGURU_MAX_BODY_BYTES caps a request body (default 8 MiB).

embeddings: TAGURU_EMBED_URL (an OpenAI-compatible …/v1/embeddings endpoint) and
TAGURU_EMBED_MODEL configure a provider (TAGURU_EMBED_API_KEY its key,
TAGURU_EMBED_TIMEOUT_SECS its per-call ceiling, default 60). Then resolve adds the
semantic tier and, with TAGURU_EMBED_PASSAGES=1, search runs the vector lane over
the paragraph vectors `import` stored, fused with BM25 by reciprocal rank;
TAGURU_SEMANTIC_FLOOR is the cosine floor (default 0.35). POST /import embeds what
it writes. Without a provider the vector lane says `no embedding provider is
configured`.
"""
