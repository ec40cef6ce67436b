"""The ``ray job submit`` entrypoint: ``taguru-ray`` run from the job's working dir.

    ray job submit --address http://HEAD:8265 --runtime-env jobs/runtime_env.yaml \\
        -- python jobs/extract.py extract --context ID --out URL PATH...

The arguments after ``jobs/extract.py`` go to ``taguru-ray`` unchanged, and the
process exits with its exit code (extract: 0 / 1 / 2 / 130); ``ray job
submit`` reports 0 as SUCCEEDED and anything else as FAILED.

What it adds to a bare ``python -m taguru_ray``:

- The package is imported from the working dir Ray unpacked on the head node,
  ahead of any ``taguru-ray`` installed on the node, so the job runs the commit
  that was submitted and needs no pip install. Ray already puts the working
  dir first on ``PYTHONPATH`` for the job and every actor it starts; the path
  is put first here too, so the script behaves the same run by hand from a
  checkout.
- The job's log says which code ran (its first line: version and the folder
  the package was imported from) and how it ended (its last line: the exit
  code). Ray records an exit code only for a job that ends by itself; one ended
  by ``ray job stop`` is just STOPPED, and this line tells whether extract
  reached its cooperative stop (130).
- A relative ``--out`` is refused (exit 2, one line) when this runs as a Ray
  job's entrypoint: it would resolve inside the job's working dir, the copy of
  the repository Ray unpacks into its temporary folder and deletes, so the run
  would write its source files where nobody finds them again.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

# jobs/extract.py -> the working dir (the repository root), which holds taguru_ray/.
WORKING_DIR = Path(__file__).resolve().parents[1]

# What Ray's job supervisor (Ray 2.60: dashboard/modules/job/job_supervisor.py) sets in
# the environment of a job's entrypoint, and nowhere else: the job's runtime env and
# metadata, which the entrypoint's ray.init() picks up. (RAY_JOB_ID is not set there:
# it is one of the internal flags the supervisor strips.)
RAY_JOB_MARKER = "RAY_JOB_CONFIG_JSON_ENV_VAR"


def out_values(argv: Sequence[str]) -> Iterator[str]:
    """Every ``--out`` value of `argv` (``--out DIR`` and ``--out=DIR``), as the verbs'
    parsers read them (no abbreviations)."""
    for index, arg in enumerate(argv):
        if arg == "--out" and index + 1 < len(argv):
            yield argv[index + 1]
        elif arg.startswith("--out="):
            yield arg.removeprefix("--out=")


def relative_out_refusal(argv: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The line refusing a relative ``--out`` inside a Ray job, or None when there is none
    (or this is not a Ray job: run by hand, a relative path means the current folder)."""
    if RAY_JOB_MARKER not in environ:
        return None
    for out in out_values(argv):
        if "://" not in out and not os.path.isabs(os.path.expanduser(out)):
            return (
                f"--out {out}: a relative path inside a Ray job lands in the job's working "
                "dir, a temporary copy Ray deletes — give an s3:// URL (or another object "
                "store's), or an absolute path on a filesystem every node mounts at the same path"
            )
    return None


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(WORKING_DIR))

    import taguru_ray
    from taguru_ray.cli import main as taguru_ray_main
    from taguru_ray.errors import EXIT_USAGE, MESSAGE_PREFIX

    package = Path(taguru_ray.__file__).resolve().parent
    print(f"taguru-ray {taguru_ray.__version__} from {package}", file=sys.stderr, flush=True)
    refusal = relative_out_refusal(argv, os.environ)
    if refusal is not None:
        print(f"{MESSAGE_PREFIX}{refusal}", file=sys.stderr, flush=True)
        code = EXIT_USAGE
    else:
        code = run(taguru_ray_main, argv)
    print(f"taguru-ray exited {code}", file=sys.stderr, flush=True)
    return code


def run(taguru_ray_main: Callable[[list[str]], int], argv: list[str]) -> int:
    """taguru-ray's exit code, a SystemExit's included."""
    try:
        return taguru_ray_main(argv)
    except SystemExit as exit_:
        # argparse ends a usage error (2) this way, and ray.init()'s SIGTERM handler (15).
        return exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
