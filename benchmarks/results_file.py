"""Where a benchmark's result goes: ``results/<name>-<stamp>.json`` and, as the file the
repository keeps, ``results/<name>-latest.json`` (pretty JSON, UTF-8)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any


def write_result(results_dir: Path, name: str, result: dict[str, Any], latest: bool = True) -> str:
    """Write both files (the stamped one only, with `latest` False); the JSON text."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    results_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    (results_dir / f"{name}-{stamp}.json").write_text(text, encoding="utf-8")
    if latest:
        (results_dir / f"{name}-latest.json").write_text(text, encoding="utf-8")
    return text
