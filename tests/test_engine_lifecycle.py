"""A replica's life on the session's Ray (`--engine-gpus 0`): one that cannot start, one
whose server dies, a Ctrl+C and a SIGKILLed driver — and no server left after any of them.

Several drivers run at once (each its own replicas, found by the model name their
argv carries), so the suite pays for one wait, not one per case.
"""

from __future__ import annotations

import random
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from taguru_ray.engine.replicas.guard import main as guard_main
from tests.support import CONTEXT, REPO, Cli

pytestmark = pytest.mark.slow


class Driver:
    """`taguru-ray extract` running, its output lines gathered as they come."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(stream, lines), daemon=True)
            for stream, lines in ((self.process.stdout, self.out), (self.process.stderr, self.err))
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: object, lines: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.append(line.rstrip("\n"))

    def wait_for(self, found: Callable[[], bool], what: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while not found():
            assert self.process.poll() is None or found(), f"{what}: exited\n" + self.text()
            assert time.monotonic() < deadline, f"{what}: not within {timeout} s\n" + self.text()
            time.sleep(0.1)

    def finish(self, timeout: float = 180) -> int:
        code = self.process.wait(timeout)
        for reader in self._readers:
            reader.join(10)
        return code

    def text(self) -> str:
        return "\n".join(self.err[-40:])


def servers(model: str) -> list[psutil.Process]:
    """The replicas' guards and servers of `model`: their argv ends in `--served-model` it."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        words = process.info["cmdline"] or []
        if "--served-model" in words and model in words:
            found.append(process)
    return found


def gone(model: str, timeout: float) -> float:
    """Seconds until no server of `model` is left (fails after `timeout`)."""
    began = time.monotonic()
    while servers(model):
        assert time.monotonic() - began < timeout, [p.info["cmdline"] for p in servers(model)]
        time.sleep(0.2)
    return time.monotonic() - began


def corpus(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"{i:03d}.md").write_text(f"Gate{i} opens Valve{i}, which feeds Tank{i}.\n")
    return folder


def start(cli: Cli, out: Path, docs: Path, model: str, *flags: str, **env: str) -> Driver:
    environ = cli.env(TAGURU_EXTRACT_MODEL=model, **env)
    del environ["TAGURU_EXTRACT_URL"]
    argv = cli.command("--context", CONTEXT, "--out", str(out), *flags, str(docs))
    return Driver(argv, environ)


def test_a_replica_that_cannot_start_is_one_line_with_its_logs_tail(
    cli: Cli, tmp_path: Path
) -> None:
    docs = corpus(tmp_path / "docs", 2)
    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        taken = held.getsockname()[1]
        engine = ["--engine-gpus", "0"]
        runs = {
            # A server that is not there.
            "missing": start(
                cli, tmp_path / "a", docs, "start-a", "--engine", "command",
                "--engine-command", "no-such-server --port {port} -m {model}", *engine,
            ),
            # A server told a port another process holds (the last --port wins).
            "port": start(
                cli, tmp_path / "b", docs, "start-b", "--engine", "simulate",
                f"--engine-args=--host 0.0.0.0 --port {taken}", *engine,
            ),
            # A server still loading when the start deadline passes.
            "deadline": start(
                cli, tmp_path / "c", docs, "start-c", "--engine", "command", "--engine-command",
                "sh -c 'echo loading the weights; exec sleep 600' {port}", *engine,
                TAGURU_RAY_ENGINE_START_SECS="3",
            ),
        }  # fmt: skip
        codes = {name: run.finish() for name, run in runs.items()}
    assert codes == {"missing": 1, "port": 1, "deadline": 1}
    said = {
        name: [line for line in run.err if "could not start" in line] for name, run in runs.items()
    }
    assert all(len(lines) == 1 for lines in said.values()), said
    [missing], [port], [deadline] = said["missing"], said["port"], said["deadline"]
    assert missing.startswith("taguru: extract: --engine command: replica 0 could not start: ")
    assert "exited with 127" in missing and "cannot start 'no-such-server'" in missing
    assert "simulate exited with 1 before /health answered" in port
    assert "Address already in use" in port
    assert "/v1/models did not answer within 3 s" in deadline and "loading the weights" in deadline
    for name in ("a", "b", "c"):
        assert not (tmp_path / name).exists()  # refused before the first request: nothing left
    assert not [p for p in psutil.process_iter(["cmdline"]) if "600" in (p.info["cmdline"] or [])
                and "sleep" in (p.info["cmdline"] or [])]  # fmt: skip


def test_a_dead_server_is_replaced_and_ctrl_c_or_sigkill_leave_no_server(
    cli: Cli, tmp_path: Path
) -> None:
    docs = corpus(tmp_path / "docs", 60)  # more than either run reaches before it is stopped
    slow = ["--engine", "simulate", "--engine-gpus", "0", "--max-inflight", "2"]
    slow += ["--engine-args=--latency-ms 1000 --slots 1"]
    interrupted = start(
        cli, tmp_path / "int", docs, "ctrl-c-model", *slow, "--engine-replicas", "2"
    )
    killed = start(cli, tmp_path / "kill", docs, "sigkill-model", *slow)
    for driver in (interrupted, killed):
        driver.wait_for(lambda d=driver: bool(d.out), "a first segment written")
    # A server dies under the run: its replica is replaced, the run goes on.
    victim = next(p for p in servers("ctrl-c-model") if "taguru_ray.engine.replicas.guard"
                  not in p.info["cmdline"])  # fmt: skip
    victim.kill()
    killed.process.kill()  # a driver SIGKILLed: Ray reaps its actors, their guards the servers
    reaped = gone("sigkill-model", 60)
    interrupted.wait_for(
        lambda: any("replica" in line and "up again" in line for line in interrupted.err),
        "the replacement",
    )
    assert any("lost (simulate exited with 137)" in line for line in interrupted.err)
    interrupted.process.send_signal(signal.SIGINT)
    assert interrupted.finish() == 130, interrupted.text()
    assert servers("ctrl-c-model") == []  # stopped before the driver exits
    assert reaped < 60


def test_the_guard_ends_the_servers_group_when_its_parent_goes(tmp_path: Path) -> None:
    """Its parent gone, the guard ends the server and the server's own children."""
    # Sleeps of durations no other process on this shared machine has: another suite
    # running this very test at once must not be counted as this one's server.
    first, second = (f"{300 + n + random.random():.6f}" for n in (0, 1))
    script = tmp_path / "server.sh"
    script.write_text(f"sleep {first} & sleep {second}\n")
    parent = subprocess.Popen(
        [
            "python3", "-c",
            "import subprocess, sys, time; subprocess.Popen([sys.executable, '-m', "
            "'taguru_ray.engine.replicas.guard', str(__import__('os').getpid()), '5', '--', "
            f"'sh', '{script}']); time.sleep(60)",
        ],
        cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip

    def sleepers() -> list[psutil.Process]:
        return [
            p for p in psutil.process_iter(["cmdline"])
            if (p.info["cmdline"] or [])[:2] in (["sleep", first], ["sleep", second])
        ]  # fmt: skip

    deadline = time.monotonic() + 30
    while len(sleepers()) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 60  # a poll of 0.2 s and a grace of 5 s, on a busy machine
    while sleepers():
        assert time.monotonic() < deadline, "the server's group outlived its guard's parent"
        time.sleep(0.1)


def test_the_guard_refuses_a_command_line_without_its_server() -> None:
    assert guard_main(["1", "5"]) == 2 and guard_main(["1", "5", "--"]) == 2
