"""`taguru-ray serve`: answer Taguru's HTTP surface for an embedded context store.

Parsing and start-up only; the server is `taguru_ray.serve`. With no arguments it
starts as Taguru does, from TAGURU_ADDR, TAGURU_DATA_DIR and the key variables
(`serve.startup`), so a harness written for Taguru runs it unchanged. Once it
accepts connections, stdout's one line is `listening on HOST:PORT` (flushed), as
the reference server says it, so a parent process can read the port `--port 0`
(or `TAGURU_ADDR=…:0`) picked. SIGINT/SIGTERM stop it cleanly. Exit codes: 0 after a signal, 1 when
the address cannot be bound or SQLite cannot open the store (locked, read-only:
`sqlite_wal.opening`), 2 for a bad flag, a `--store` that does not exist
or is not a store, a TAGURU_DATA_DIR holding other files, or a malformed
`TAGURU_ADDR`/`TAGURU_API_TOKEN(S)`/`TAGURU_KEY_SCOPES`/`TAGURU_RATE_LIMIT_PER_MIN`/
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
from taguru_ray.serve import ServeConfig, serve, startup
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
        listen = startup.listen_address(os.environ)
        # Started the way Taguru is (no --store): TAGURU_DATA_DIR, writable as Taguru is.
        folder = Path(args.store) if args.store else startup.data_dir(os.environ)
        config = ServeConfig(
            writable=args.writable or not args.store,
            keyring=keyring_from_env(os.environ),
            max_body_bytes=max_body_bytes_from_env(os.environ),
            rate_limit_per_min=startup.rate_limit(os.environ),
        )
    except (KeyringError, ValueError) as exc:  # StartupError included
        return _say(str(exc), EXIT_USAGE)
    host = args.host if args.host is not None else listen.host
    port = args.port if args.port is not None else listen.port
    if not folder.is_dir():
        return _say(f"--store {args.store}: no such folder", EXIT_USAGE)
    try:
        embedder = embedder_from_env(os.environ)
    except ValueError as exc:
        return _say(str(exc), EXIT_USAGE)
    try:
        store = _open_store(folder, embedder, create=not args.store)
    except _NoStore as exc:
        return _say(str(exc), EXIT_USAGE)
    except TaguruRayError as exc:  # the store's own line: a file, no database, read-only
        return _say(str(exc), exc.exit_code)
    except ImportError as exc:
        return _say(f"the embedded context store is not available: {exc}", EXIT_FAILED)
    except Exception as exc:  # the store names what is wrong with the folder
        return _say(f"{folder}: not a context store: {exc}", EXIT_USAGE)
    if config.keyring.disabled and host not in LOOPBACK:
        print(
            f"{PROG}: TAGURU_API_TOKEN(S) is not set: {host} accepts unauthenticated requests",
            file=sys.stderr,
        )
    try:
        asyncio.run(_run(store, host, port, config))
    except OSError as exc:
        return _say(f"cannot listen on {host}:{port}: {exc.strerror or exc}", 1)
    finally:
        _close(store)
    return EXIT_OK


class _NoStore(Exception):
    pass


def _open_store(folder: Path, embedder: Any = None, *, create: bool = False) -> Any:
    """The folder's store; a new one only for TAGURU_DATA_DIR (startup.data_dir checked
    the folder is empty): `--store` serving an empty folder is a mistake."""
    from taguru_ray.context.store import SqliteStore

    try:
        return SqliteStore(folder, create=create, embedder=embedder)
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
    p.add_argument(
        "--store",
        metavar="DIR",
        help="the store folder to serve, read-only unless --writable (default: "
        "TAGURU_DATA_DIR, else ./data — created if empty, writable, as Taguru starts)",
    )
    p.add_argument("--host", help="address to listen on (default: TAGURU_ADDR's, else 127.0.0.1)")
    p.add_argument(
        "--port",
        type=_port,
        help="port; 0 picks a free one (default: TAGURU_ADDR's, else 8248). Ready when "
        "stdout says `listening on HOST:PORT`",
    )
    p.add_argument(
        "--writable",
        action="store_true",
        help="with --store: accept writes and POST /import (a dry run is always answered)",
    )
    return p


EPILOG = """\
auth: bearer keys as the reference server reads them. TAGURU_API_TOKEN is the
key "default"; TAGURU_API_TOKENS adds named keys ("ci:tokA,laptop:tokB");
TAGURU_KEY_SCOPES grants roles by key name ({"ci": "read", "bot": {"role":
"admin", "contexts": ["sake"]}}; read < write < admin; an unnamed key is
admin). No key set: the API is open. Roles as the reference's table: reads need
read, context writes write, delete/rename/flush/POST /import admin; a --store
server also needs --writable for any write. /health, /live, /metrics and
/version are always open and never rate-limited. TAGURU_RATE_LIMIT_PER_MIN
meters each key (429 + Retry-After past it; 0 = off). TAGURU_MAX_BODY_BYTES caps
a request body (default 8 MiB).

start-up: with no --store, TAGURU_DATA_DIR (default ./data) is the store — an
empty or missing folder becomes one — and TAGURU_ADDR (default 127.0.0.1:8248;
port 0 picks one) the address; the server is writable, as Taguru is.

embeddings: TAGURU_EMBED_URL (an OpenAI-compatible …/v1/embeddings endpoint) and
TAGURU_EMBED_MODEL configure a provider (TAGURU_EMBED_API_KEY its key,
TAGURU_EMBED_TIMEOUT_SECS its per-call ceiling, default 60). Then resolve adds the
semantic tier and, with TAGURU_EMBED_PASSAGES=1, search runs the vector lane over
the paragraph vectors `import` stored, fused with BM25 by reciprocal rank;
TAGURU_SEMANTIC_FLOOR is the cosine floor (default 0.35). POST /import embeds what
it writes. Without a provider the vector lane says `no embedding provider is
configured`.
"""
