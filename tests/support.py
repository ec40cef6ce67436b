"""Helpers the integration tests share: the context id and the CLI runner."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taguru_ray.simulate.harness import SimulatorProcess

REPO = Path(__file__).resolve().parents[1]
CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"


@dataclass
class Cli:
    """Runs ``taguru-ray extract`` as a user would, against the simulator."""

    address: str
    simulator: SimulatorProcess

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TAGURU_")}
        env.update(
            TAGURU_EXTRACT_URL=self.simulator.chat_url,
            TAGURU_EXTRACT_MODEL="taguru-sim",
            PYTHONPATH=str(REPO),
        )
        env.update(extra)
        return env

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "taguru_ray", "extract", "--address", self.address, *args]

    def extract(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 180
    ) -> subprocess.CompletedProcess[str]:
        """Run extract; then the out folder it left must import whole (`verify`)."""
        result = subprocess.run(
            self.command(*args),
            env=env or self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO,
        )
        if "--out" in args and "--dry-run" not in args:
            assert_imports_whole(args[args.index("--out") + 1], env or self.env())
        return result


def verify(out: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    """``taguru-ray verify OUT``, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "taguru_ray", "verify", str(out), *args],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def assert_imports_whole(out: str, env: dict[str, str] | None = None) -> None:
    """Every end-to-end out folder a test leaves is checked as `taguru import` of the whole
    folder reads it: a local one in process, any other (s3://) by the CLI with the run's
    storage environment."""
    if "://" not in out:
        if not Path(out).is_dir():
            return
        from taguru_ray.tools.records import source_files
        from taguru_ray.tools.verify import render_text, verify_files

        files = source_files(out)
        if files:
            result = verify_files(files)
            assert result.ok, f"{out} would not import whole:\n{render_text(result)}"
        return
    checked = subprocess.run(
        [sys.executable, "-m", "taguru_ray", "verify", out],
        env={**(env or os.environ), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    nothing = "no source file" in checked.stderr or "no such folder" in checked.stderr
    assert checked.returncode == 0 or nothing, checked.stdout + checked.stderr


def quiesce(simulator: SimulatorProcess) -> None:
    """Wait until nothing is in flight and no request arrived for a while: a killed run's
    last requests have landed before the rerun is counted."""
    last, still = -1, 0
    while still < 4:
        time.sleep(0.5)
        stats = simulator.stats()
        if stats["requests"] == last and stats["in_flight"] == 0:
            still += 1
        else:
            last, still = stats["requests"], 0


def checkpointed(out: Path | str, source: str) -> dict[str, Any]:
    """A segment's checkpoint as it stands in --out (a path or an fsspec URL): the
    `checkpoint` records of its attempts log since the last `settled` one (ADR 0049), over
    the checkpoint file a run with the attempts log off (or an earlier build) wrote —
    ``{"units": {piece: unit}, "splits": {piece: cap}}``, whatever the fingerprint."""
    import json

    from taguru_ray.contract.names import TRACE, attempts_name
    from taguru_ray.store.checkpoints import checkpoint_path
    from taguru_ray.store.outdir import OutDir

    store = OutDir(str(out))
    found: dict[str, Any] = {"units": {}, "splits": {}}
    document = store.read(checkpoint_path(source))
    if document is not None:
        with contextlib.suppress(ValueError):  # a file being replaced: read again next time
            loaded = json.loads(document)
            found = {"units": dict(loaded["units"]), "splits": dict(loaded.get("splits", {}))}
    log = store.read(f"{TRACE}/{attempts_name(source)}") or b""
    for line in log.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line being appended
        if record.get("type") != "checkpoint":
            continue
        if record.get("settled"):
            found = {"units": {}, "splits": {}}
        elif "unit" in record:
            found["units"][record["piece_id"]] = record["unit"]
        elif "split_cap" in record:
            found["splits"][record["piece_id"]] = record["split_cap"]
    return found


def checkpoint_units(out: Path | str, source: str) -> int:
    """How many units a segment has checkpointed (`checkpointed`)."""
    return len(checkpointed(out, source)["units"])
