"""The README's "From Python" examples run as written: each ```python block of the section,
in order, in one fresh interpreter, against the simulator (TAGURU_EXTRACT_URL and
TAGURU_EXTRACT_MODEL), the session's Ray (RAY_ADDRESS) and an S3 API on loopback (for the
``s3://bucket/run`` of the Ray Data example), from a folder holding ``docs/``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from taguru_ray.simulate.harness import SimulatorProcess
from tests import s3 as server
from tests.support import REPO

pytestmark = pytest.mark.slow

s3 = server.s3

SECTION = "## From Python"

# Run after the blocks, in their namespace: what each example left, as JSON.
CHECK = """
import json as _json
print("README-CHECK " + _json.dumps({
    "exit_code": result.exit_code,
    "statuses": sorted(s.status for s in result.segments),
    "attempts": attempts.num_rows,
    "summary": tables.summary.num_rows,
    "rows": sorted(row["status"] for row in results.take_all()),
}))
"""


def python_blocks(readme: str) -> list[str]:
    """The ```python blocks of the "From Python" section, in order."""
    start = readme.index(f"\n{SECTION}\n")
    end = readme.find("\n## ", start + len(SECTION) + 2)
    section = readme[start : end if end != -1 else None]
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


def test_the_readme_python_examples_run_as_written(
    simulator: SimulatorProcess, ray_address: str, s3: server.S3, tmp_path: Path
) -> None:
    blocks = python_blocks((REPO / "README.md").read_text())
    assert len(blocks) >= 3 and "max_inflight=64" in blocks[0]
    import s3fs

    with pytest.MonkeyPatch.context() as patch:
        for key, value in s3.env.items():
            patch.setenv(key, value)
        s3fs.S3FileSystem.clear_instance_cache()
        s3fs.S3FileSystem().mkdir("bucket", exist_ok=True)  # the README's s3://bucket/run
        s3fs.S3FileSystem.clear_instance_cache()

    here = tmp_path / "here"
    (here / "docs").mkdir(parents=True)
    for name in ("01-ray-overview.md", "03-sake-brewing.md"):
        shutil.copy(REPO / "examples" / "corpus" / name, here / "docs" / name)
    script = here / "readme_examples.py"
    script.write_text("\n".join(blocks) + CHECK)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TAGURU_")},
        "PYTHONPATH": str(REPO),
        "TAGURU_EXTRACT_URL": simulator.chat_url,
        "TAGURU_EXTRACT_MODEL": "taguru-sim",
        "RAY_ADDRESS": ray_address,
        **s3.env,
    }
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=here,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    [line] = [line for line in done.stdout.splitlines() if line.startswith("README-CHECK ")]
    found = json.loads(line.removeprefix("README-CHECK "))
    assert found["exit_code"] == 0
    assert found["statuses"] == ["written", "written"]
    assert found["attempts"] > 0 and found["summary"] > 0
    assert found["rows"] == ["written"]
