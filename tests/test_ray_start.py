"""Starting or joining Ray: a local Ray unless an address is given, and a join that
cannot happen is one line, never a hang or a traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.engine import driver
from taguru_ray.errors import StartupError
from tests.support import CONTEXT, REPO


def test_with_no_address_a_new_local_ray_is_started_never_the_current_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(driver.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(driver.ray, "init", lambda **kwargs: seen.update(kwargs))
    assert driver.start_ray(None) is True
    # "local": Ray's own default would join whatever ray_current_cluster names.
    assert seen["address"] == "local"


def test_a_head_that_refuses_the_driver_is_one_startup_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(**kwargs: Any) -> None:
        raise ConnectionError("Authentication failed: a token is required\n  at …")

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    monkeypatch.setattr(driver.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(driver.ray, "init", refuse)
    # The bare listener stands in for a head: it answers the gRPC greeting as one would.
    monkeypatch.setattr(driver, "_answers_http2", lambda connection: True)
    try:
        with pytest.raises(StartupError) as refused:
            driver.start_ray(f"127.0.0.1:{port}")
    finally:
        listener.close()
    message = str(refused.value)
    assert "Ray did not start (ConnectionError: Authentication failed" in message
    assert "\n" not in message and "RAY_AUTH_TOKEN" in message


def test_an_address_nobody_answers_fails_fast_with_one_line(tmp_path: Path) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Ray runs on Kubernetes.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TAGURU_", "RAY_"))}
    env.update(
        TAGURU_EXTRACT_URL="http://127.0.0.1:9/v1",
        TAGURU_EXTRACT_MODEL="m",
        PYTHONPATH=str(REPO),
    )
    command = [sys.executable, "-m", "taguru_ray", "extract", "--address", f"127.0.0.1:{port}"]
    started = time.monotonic()
    result = subprocess.run(
        [*command, "--context", CONTEXT, "--out", str(tmp_path / "out"), str(docs)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"taguru: extract: --address 127.0.0.1:{port}: no Ray head answers")
    assert time.monotonic() - started < 60
    assert not list((tmp_path / "out").glob("*.jsonl"))


def test_a_local_ray_keeps_no_task_events_unless_the_environment_asks() -> None:
    from taguru_ray.engine.local_ray import QUIET, local_system_config

    assert local_system_config({}) == QUIET
    assert local_system_config({}) == {"task_events_report_interval_ms": 0, "event_stats": False}
    wanted = local_system_config({"RAY_task_events_report_interval_ms": "1000"})
    assert wanted == {"event_stats": False}  # Ray reads the variable itself
