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
"""

from __future__ import annotations

import sys
from pathlib import Path

# jobs/extract.py -> the working dir (the repository root), which holds taguru_ray/.
WORKING_DIR = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(WORKING_DIR))

    import taguru_ray
    from taguru_ray.cli import main as taguru_ray_main

    package = Path(taguru_ray.__file__).resolve().parent
    print(f"taguru-ray {taguru_ray.__version__} from {package}", file=sys.stderr, flush=True)
    try:
        code = taguru_ray_main(argv)
    except SystemExit as exit_:
        # argparse ends a usage error (2) this way, and ray.init()'s SIGTERM handler (15).
        code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
    print(f"taguru-ray exited {code}", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
