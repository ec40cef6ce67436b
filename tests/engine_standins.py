"""Stand-ins for vLLM and SGLang, invoked as the real ones are, for the engine's tests.

`vllm` is an executable on PATH, as vLLM's console script is; `sglang` a package
on PYTHONPATH whose `launch_server` module runs under ``python -m``, as SGLang's
launcher does (a stand-in `python` would stand in for nothing: the replica runs
its own interpreter). Each checks the argv it was given as the real CLI's parser
would — its subcommand or module, the flags it knows with values of their
types, a tensor-parallel size equal to the GPUs Ray gave the replica — writes it
to STANDIN_ARGV_DIR, and then becomes the bundled simulator on the host and port
it was told. A word it does not know is exit 2, as argparse's.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

CHECK = r"""
import json, os, sys

def refuse(why):
    print(f"{NAME} stand-in: {why}: {sys.argv[1:]}", file=sys.stderr, flush=True)
    sys.exit(2)

def flags(words, known, switches=()):
    found, i = {}, 0
    while i < len(words):
        word = words[i]
        if word in switches:
            found[word], i = True, i + 1
            continue
        if word not in known or i + 1 >= len(words):
            refuse(f"unrecognized arguments: {word}")
        try:
            known[word](words[i + 1])
        except ValueError:
            refuse(f"{word}: invalid value {words[i + 1]!r}")
        found[word], i = words[i + 1], i + 2
    return found

def serve(argv, model, found, tp_flag):
    for need in ("--host", "--port"):
        if need not in found:
            refuse(f"{need} is missing")
    gpus = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g]
    if int(found.get(tp_flag, "0")) != len(gpus):
        refuse(f"{tp_flag} {found.get(tp_flag)} but Ray gave {len(gpus)} GPU(s)")
    folder = os.environ.get("STANDIN_ARGV_DIR")
    if folder:
        with open(os.path.join(folder, f"{NAME}-{found['--port']}.json"), "w") as out:
            json.dump({"argv": argv, "gpus": gpus}, out)
    simulator = [sys.executable, "-m", "taguru_ray", "simulate", "--host", found["--host"],
                 "--port", found["--port"], "--served-model", model]
    os.execv(sys.executable, simulator)
"""

VLLM = r"""
NAME = "vllm"
words = sys.argv[1:]
if len(words) < 2 or words[0] != "serve" or words[1].startswith("-"):
    refuse("expected: vllm serve MODEL [flags]")
found = flags(words[2:], {"--host": str, "--port": int, "--tensor-parallel-size": int,
                          "--max-model-len": int}, ("--enforce-eager",))
serve([os.path.basename(sys.argv[0]), *words], words[1], found, "--tensor-parallel-size")
"""

SGLANG = r"""
NAME = "sglang"
if __name__ != "__main__" or not sys.argv[0].endswith(os.path.join("sglang", "launch_server.py")):
    refuse("expected: python -m sglang.launch_server [flags]")
found = flags(sys.argv[1:], {"--model-path": str, "--host": str, "--port": int, "--tp-size": int,
                             "--mem-fraction-static": float})
if "--model-path" not in found:
    refuse("--model-path is missing")
serve([sys.executable, "-m", "sglang.launch_server", *sys.argv[1:]], found["--model-path"],
      found, "--tp-size")
"""


def write_standins(folder: Path) -> Path:
    """`folder/bin/vllm`, `folder/py/sglang/`, `folder/argv/`; the folder."""
    (folder / "bin").mkdir(parents=True)
    (folder / "py" / "sglang").mkdir(parents=True)
    (folder / "argv").mkdir()
    vllm = folder / "bin" / "vllm"
    vllm.write_text(f"#!{sys.executable}\n{CHECK}\n{VLLM}")
    vllm.chmod(0o755)
    (folder / "py" / "sglang" / "__init__.py").write_text('__version__ = "0.0.0-standin"\n')
    (folder / "py" / "sglang" / "launch_server.py").write_text(f"{CHECK}\n{SGLANG}")
    return folder


def standin_environment(folder: Path, repo: Path) -> dict[str, str]:
    """What a Ray node needs to find the stand-ins as a GPU host finds the real ones."""
    return {
        "PATH": f"{folder / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": f"{folder / 'py'}{os.pathsep}{repo}",
        "STANDIN_ARGV_DIR": str(folder / "argv"),
    }


def invocations(folder: Path, name: str) -> list[dict[str, Any]]:
    """What each stand-in `name` was started with, in no particular order."""
    return [json.loads(path.read_text()) for path in sorted((folder / "argv").glob(f"{name}-*"))]
