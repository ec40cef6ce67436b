"""`taguru-ray benchmark search` (seed 003, BENCHMARK.md §3–4): one corpus context per
model from a `benchmark extract` results directory, the same eval.jsonl questions
against each, and `RESULTS_DIR/retrieval.json` saying how their results differ —
never which is better.

Module map: `results` reads the directory; `corpora` names, owns, builds or probes a
model's corpus; `queries` runs a case against every corpus and compares the pairs,
with `recall` for cases that expect something; `report` assembles retrieval.json
and defines its metrics; `embedded` serves ``--store DIR`` in-process; `run` is the
flow and its exit codes.
"""

from taguru_ray.benchmark.search.run import Outcome, Request, SearchFailed, run_search

__all__ = ["Outcome", "Request", "SearchFailed", "run_search"]
