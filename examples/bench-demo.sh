#!/bin/sh
# `make bench-demo`: a 2-model x 2-GPU x 2-run benchmark matrix against four simulator
# instances of different capacities, then `benchmark compare` and its figure.
# The simulators stand in for two models each served on two GPU types: the
# "h200" instances have more generation slots and a faster first token than the
# "l40s" ones, and each model's answers vary from run to run (--vary, seeded),
# so throughput, latency and stability all differ — measured, never ranked.
# llama-h200 keeps at most 2 requests in flight (max_inflight) on an 8-slot server:
# its cells are bound by the client's limit, not the GPU, and say so (ADR 0048) —
# `bound: limit` in the measurements and a hollow marker on the figure; the other
# cells, with the default `auto`, are bound by their endpoint.
set -eu
PY=${PY:-.venv/bin/python}
OUT=${OUT:-out/bench-demo}
CONTEXT=${CONTEXT:-5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f}

scratch=$(mktemp -d)
pids=""
trap 'kill $pids 2>/dev/null || true; rm -rf "$scratch"' EXIT INT TERM

# start NAME SLOTS LATENCY_MS TOKENS_PER_S VARY: one simulator, its base URL in $scratch/NAME
start() {
    $PY -m taguru_ray simulate --port 0 --slots "$2" --latency-ms "$3" --tokens-per-s "$4" \
        --vary "$5" --vary-seed 7 --vary-run seen >"$scratch/$1" &
    pids="$pids $!"
}
# Few slots and slow answers, so each cell's endpoint (not this machine) sets its pace.
start qwen-h200 8 300 4000 0.15
start qwen-l40s 2 600 1500 0.15
start llama-h200 8 400 3000 0.35
start llama-l40s 2 900 1000 0.35
for name in qwen-h200 qwen-l40s llama-h200 llama-l40s; do
    tries=0
    until [ -s "$scratch/$name" ]; do
        tries=$((tries + 1))
        if [ "$tries" -gt 100 ]; then echo "bench-demo: a simulator did not start" >&2; exit 1; fi
        sleep 0.1
    done
done
url() { echo "$(head -n 1 "$scratch/$1")/chat/completions"; }

cat >"$scratch/models.json" <<JSON
{"taguru_benchmark_models": 1,
 "models": [
  {"id": "qwen-h200", "model": "qwen-sim", "url": "$(url qwen-h200)", "gpu": "h200-sim",
   "gpu_count": 1, "price_per_gpu_hour": 3.8},
  {"id": "qwen-l40s", "model": "qwen-sim", "url": "$(url qwen-l40s)", "gpu": "l40s-sim",
   "gpu_count": 1, "price_per_gpu_hour": 1.1},
  {"id": "llama-h200", "model": "llama-sim", "url": "$(url llama-h200)", "gpu": "h200-sim",
   "gpu_count": 1, "price_per_gpu_hour": 3.8, "max_inflight": 2},
  {"id": "llama-l40s", "model": "llama-sim", "url": "$(url llama-l40s)", "gpu": "l40s-sim",
   "gpu_count": 1, "price_per_gpu_hour": 1.1}
 ]}
JSON

# 60 one-chunk segments: enough completions for each cell's steady state to be measured.
mkdir "$scratch/corpus"
i=0
while [ "$i" -lt 60 ]; do
    printf '# Part %s\n\nAlpha%s works with Beta%s at Gamma%s.\n\nDelta%s depends on Epsilon%s.\n' \
        "$i" "$i" "$i" "$i" "$i" "$i" >"$scratch/corpus/part-$(printf %02d "$i").md"
    i=$((i + 1))
done

rm -rf "$OUT"
echo "bench-demo: 4 cells at a time (disjoint endpoints), 2 runs each, into $OUT" >&2
$PY -m taguru_ray benchmark extract --models "$scratch/models.json" --context "$CONTEXT" \
    --out "$OUT" --runs 2 "$scratch/corpus"
$PY -m taguru_ray benchmark compare "$OUT"
echo "bench-demo: measurements in $OUT/measurements.json (.csv, .parquet), the figure in $OUT/measurements.png" >&2
