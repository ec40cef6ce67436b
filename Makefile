# The two commands a new machine needs: `make demo` and `make test`.
# Each builds the virtual environment it runs in when it is missing or stale.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LINT := taguru_ray tests $(wildcard benchmarks/*.py) $(wildcard jobs/*.py)

.PHONY: fuzz demo bench-demo bench-matrix bench-ab bench-guard bench-saturation bench-context bench-sessions bench-vocabulary test test-serial lint venv clean

# The venv is most of a fresh clone's first `make demo`. uv, when it is on PATH, built it
# in 12 s (download cache empty); pip in 122 s and 242 s (cache off), the second as the
# machine's load rose: fresh clones on this shared 2-core VM, 4 December 2026. `make UV=`
# takes pip's way with uv installed. --seed puts pip in the venv either way: the bench
# targets below install their extra with it.
UV ?= $(shell command -v uv 2>/dev/null)

venv: $(STAMP)

$(STAMP): pyproject.toml
ifneq ($(UV),)
	$(UV) venv --quiet --seed --allow-existing --python $(PYTHON) $(VENV)
	$(UV) pip install --quiet --python $(BIN)/python -e '.[test]'
else
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
endif
	touch $(STAMP)

demo: $(STAMP)
	PY=$(BIN)/python sh examples/demo.sh

bench-demo: $(STAMP)
	PY=$(BIN)/python sh examples/bench-demo.sh

# The suite on two workers (pytest-xdist, a file per worker at a time, each worker with
# its own local Ray): 1 228 and 1 401 s in two runs on this 2-core VM (1 536 s before
# runs started only the actors they need and the smoke bench lost its 20 s stalls),
# 2 095 s serial in CI. Four workers took as long (1 558 s): the suite is CPU-bound,
# mostly starting Ray workers.
# The one failure -n 4 found (a frozen-worker test restarting a worker that was only
# slow to start) is fixed in the watchdog. `make test-serial` for a single process.
test: $(STAMP)
	$(BIN)/ruff check $(LINT)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

# The property tests over every input reader with 2 000 examples each, not 40 (ADR 0050).
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q -n 2 -m fuzz

test-serial: $(STAMP)
	$(BIN)/ruff check $(LINT)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check $(LINT)
	$(BIN)/ruff format --check $(LINT)

clean:
	rm -rf $(VENV) out .pytest_cache

# The benchmark suite (benchmarks/README.md): about 5 minutes on 2 cores;
# BENCH_ARGS=--quick for a shorter run. Writes benchmarks/results/.
.PHONY: bench
bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python -m benchmarks.run $(BENCH_ARGS)

bench-matrix: $(STAMP)
	$(BIN)/python -m benchmarks.matrix $(BENCH_ARGS)

# Two builds' saturation runs interleaved on this machine: BASE (a git revision, default
# the commit before HEAD) against the working tree; about 4 minutes on 2 cores.
BASE ?= HEAD~1
bench-ab: $(STAMP)
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python -m benchmarks.ab --base $(BASE) $(BENCH_ARGS)

# The embedded context at 10 000, 100 000 and 1 000 000 paragraphs: import throughput,
# search latency (wall and CPU) and how each grows per ×10 (benchmarks/README.md);
# 13 to 18 minutes on 2 cores, most of it the million (BENCH_ARGS='--paragraphs 10000
# 100000' for the two smaller).
bench-context: $(STAMP)
	$(BIN)/python -m benchmarks.context $(BENCH_ARGS)

# The session index at 100 000 turns: import, search (Japanese, English, short words)
# and show latency (benchmarks/README.md); about a minute and a half on 2 cores.
bench-sessions: $(STAMP)
	$(BIN)/python -m benchmarks.sessions $(BENCH_ARGS)

# What a full label vocabulary costs a segment's job on its way to a worker
# (benchmarks/README.md); a few seconds.
bench-vocabulary: $(STAMP)
	$(BIN)/python -m benchmarks.vocabulary_wire

# Driver memory reading a 200 MB batch output file, streamed against read whole
# (benchmarks/batch_results.py, issue 49); about a minute and a half on 2 cores.
.PHONY: bench-batch
bench-batch: $(STAMP)
	$(BIN)/python -m benchmarks.batch_results $(BENCH_ARGS)

# Issue 51: the working tree against the last commit `benchmarks/results/history.jsonl`
# recorded (every `make bench` appends a line), alternated: each figure's change.
bench-guard: $(STAMP)
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python -m benchmarks.guard $(BENCH_ARGS)

# The saturation step alone (the bare client, opened up, default flags: about 2 minutes),
# appended to the history like a bench. Its rates mean something on a quiet host only.
bench-saturation: $(STAMP)
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python -m benchmarks.saturation $(BENCH_ARGS)
