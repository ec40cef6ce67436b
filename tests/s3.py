"""An S3 API on loopback for the object-storage tests: moto's server mode, one per session.

A real HTTP S3 endpoint (not an in-process mock), so the code under test, the
CLI subprocess and its Ray workers all reach the same bucket the way they
would reach AWS: through s3fs and botocore, configured by environment
variables only. botocore honours ``AWS_ENDPOINT_URL`` wherever it creates a
client, including a worker that received the variable after importing fsspec;
``FSSPEC_S3_ENDPOINT_URL`` is read once, when fsspec is imported, so it would
miss those workers.

A test module registers the fixtures by binding them to module names
(``s3, s3_env = server.s3, server.s3_env`` after ``from tests import s3 as
server``); ``tests/conftest.py`` is left alone. ``s3_env`` also points this
process's environment at the server for one test.
"""

from __future__ import annotations

import atexit
import logging
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

BUCKET = "taguru-ray-tests"


@dataclass(frozen=True)
class S3:
    """The running server: its endpoint, its bucket, and the env a process needs to reach it."""

    endpoint: str
    bucket: str
    env: dict[str, str] = field(default_factory=dict)

    def url(self, *parts: str) -> str:
        """``s3://<bucket>/<parts joined>``."""
        return "/".join([f"s3://{self.bucket}", *parts])

    def prefix(self, name: str) -> str:
        """A fresh prefix URL per test, so tests share the bucket but no object."""
        return self.url(f"{name}-{secrets.token_hex(4)}")


_RUNNING: S3 | None = None


def _start() -> S3:
    """Start the server once per process: every module that imports the fixture shares it.

    (Each importing module registers its own copy of a session fixture, and
    moto's state is process-wide, so a second server would only see the same
    buckets.) The server thread is a daemon; it stops at interpreter exit.
    """
    global _RUNNING
    if _RUNNING is not None:
        return _RUNNING
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    atexit.register(server.stop)
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()
        s3fs.S3FileSystem().mkdir(BUCKET)
        s3fs.S3FileSystem.clear_instance_cache()
    _RUNNING = S3(endpoint, BUCKET, env)
    return _RUNNING


@pytest.fixture(scope="session")
def s3() -> S3:
    """The session's S3 server (started on first use)."""
    return _start()


@pytest.fixture
def s3_env(s3: S3) -> Iterator[S3]:
    """The server, with this process's environment pointed at it for the test's duration."""
    import s3fs

    with pytest.MonkeyPatch.context() as patch:
        for key, value in s3.env.items():
            patch.setenv(key, value)
        s3fs.S3FileSystem.clear_instance_cache()
        try:
            yield s3
        finally:
            s3fs.S3FileSystem.clear_instance_cache()
