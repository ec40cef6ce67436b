"""`taguru-ray serve` as a user runs it: announce, answer, stop on a signal; its exits."""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from taguru_ray import __version__

REPO = Path(__file__).resolve().parents[1]
SERVE = (sys.executable, "-m", "taguru_ray", "serve")
LISTENING = re.compile(r"listening on (\S+):(\d+)\n")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAGURU_")}
    env.update(PYTHONPATH=str(REPO), **extra)
    return env


def _store(tmp_path: Path) -> Path:
    """A real, empty context store (the folder `taguru-ray import` would make)."""
    from taguru_ray.context.store import SqliteStore

    folder = tmp_path / "store"
    SqliteStore(folder).close()
    return folder


@contextmanager
def running(
    *command: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Start `command`, wait for its `listening on HOST:PORT` line, yield the process and
    its base URL; kill it if the test did not stop it."""
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or _env()
    )
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            assert selector.select(timeout=30), "no `listening on` line within 30 s"
        line = proc.stdout.readline()
        match = LISTENING.fullmatch(line)
        assert match, f"stdout said {line!r}; stderr: {proc.stderr.read() if proc.poll() else ''}"
        yield proc, f"http://{match[1]}:{match[2]}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def _get(url: str) -> tuple[int, dict[str, object]]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, json.loads(response.read())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_announces_answers_health_and_stops_cleanly_on_a_signal(
    tmp_path: Path, signum: signal.Signals
) -> None:
    store = _store(tmp_path)
    with running(*SERVE, "--store", str(store), "--port", "0") as (
        proc,
        base,
    ):
        assert base.startswith("http://127.0.0.1:")
        assert _get(base + "/health") == (200, {"status": "ok", "version": __version__})
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out == "" and err == ""  # the one stdout line was read above


def test_a_missing_or_non_store_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for folder in (tmp_path / "absent", tmp_path):
        done = subprocess.run(
            [*SERVE, "--store", str(folder), "--port", "0"],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("taguru-ray serve: ")


def test_a_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        done = subprocess.run(
            [*SERVE, "--store", str(_store(tmp_path)), "--port", port],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and f"127.0.0.1:{port}" in done.stderr


def test_a_malformed_keyring_refuses_to_start_without_echoing_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [*SERVE, "--store", str(_store(tmp_path))],
        capture_output=True,
        text=True,
        env=_env(TAGURU_API_TOKENS="sekrit-pasted-alone"),
        timeout=60,
    )
    assert done.returncode == 2
    assert "entry #1 is not name:token" in done.stderr and "sekrit" not in done.stderr


def test_serve_is_a_verb_of_the_console_script() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "taguru_ray", "--help"], capture_output=True, text=True, env=_env()
    )
    assert re.search(r"^  serve +", done.stdout, re.MULTILINE)
