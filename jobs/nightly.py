"""The nightly run over a living corpus: ``extract --prune``, then ``import`` of its --out.

    ray job submit --address http://HEAD:8265 --runtime-env jobs/runtime_env.yaml \\
        -- python jobs/nightly.py --import-url http://taguru:8248 \\
           --context ID --out s3://bucket/taguru/sources/ … s3://bucket/taguru/docs/

Every argument but ``--import-url URL`` / ``--import-store DIR`` (and ``--import-context
NAME`` with a store) is ``taguru-ray extract``'s, passed through unchanged, with
``--prune`` added when it is not there: segments the corpus no longer holds are retired
(ADR 0083). Then ``taguru-ray import OUT`` loads the written source files into the
context and retracts the retired ones — a Taguru server (``--import-url``, bearer
``TAGURU_API_TOKEN``) or an embedded store (``--import-store``).

The import runs when the extract exited 0 or 1 (some segments failed: the rest were
written, the folder imports whole); not after a usage error (2) or a stop (130). The
exit code is the extract's when it is not 0, else the import's. Like `jobs/extract.py`
it says which code ran (first line) and how it ended (last line), and refuses a relative
``--out`` inside a Ray job.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
IMPORTS_AFTER = (0, 1)  # extract's exits after which the folder is worth importing


def _extract_entrypoint() -> ModuleType:
    """jobs/extract.py, loaded by path (jobs/ is no package): its guard and runner."""
    spec = importlib.util.spec_from_file_location("jobs_extract", HERE / "extract.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def split(argv: list[str]) -> tuple[list[str], list[str]] | str:
    """(extract's arguments with --prune, import's target arguments), or the usage line."""
    extract: list[str] = []
    target: list[str] = []
    context: list[str] = []
    at = 0
    while at < len(argv):
        arg = argv[at]
        name, eq, value = arg.partition("=")
        if name in ("--import-url", "--import-store", "--import-context"):
            if not eq:
                if at + 1 >= len(argv):
                    return f"{name} needs a value"
                value, at = argv[at + 1], at + 1
            if name == "--import-context":
                context = ["--context", value]
            else:
                if target:
                    return "give one of --import-url and --import-store, once"
                target = ["--url" if name == "--import-url" else "--store", value]
        else:
            extract.append(arg)
        at += 1
    if not target:
        return "name the context to import into: --import-url URL or --import-store DIR"
    if context and target[0] == "--url":
        return "--import-context names a local context; with --import-url the header's is used"
    if "--prune" not in extract:
        extract.insert(0, "--prune")
    return extract, [*target, *context]


def main(argv: list[str]) -> int:
    entry = _extract_entrypoint()
    sys.path.insert(0, str(entry.WORKING_DIR))

    import taguru_ray
    from taguru_ray.cli import main as verb
    from taguru_ray.errors import EXIT_USAGE, MESSAGE_PREFIX

    package = Path(taguru_ray.__file__).resolve().parent
    print(f"taguru-ray {taguru_ray.__version__} from {package}", file=sys.stderr, flush=True)
    parts = split(argv)
    if isinstance(parts, str):
        print(f"jobs/nightly.py: {parts}", file=sys.stderr, flush=True)
        return _ended(EXIT_USAGE, "usage")
    extract, target = parts
    refusal = entry.relative_out_refusal(extract, os.environ)
    if refusal is not None:
        print(f"{MESSAGE_PREFIX}{refusal}", file=sys.stderr, flush=True)
        return _ended(EXIT_USAGE, "extract")
    outs = list(entry.out_values(extract))
    if len(outs) != 1:
        print("jobs/nightly.py: give extract one --out (the folder to import)", file=sys.stderr)
        return _ended(EXIT_USAGE, "usage")
    code = entry.run(verb, ["extract", *extract])
    if code not in IMPORTS_AFTER:
        return _ended(code, "extract")
    imported = entry.run(verb, ["import", outs[0], *target])
    return _ended(code or imported, "extract" if code else "import")


def _ended(code: int, step: str) -> int:
    print(f"taguru-ray nightly exited {code} ({step})", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
