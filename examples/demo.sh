#!/bin/sh
# The quick start: the sample corpus through the bundled simulator, on a local Ray.
# The simulator is a rule-based stand-in for a model server, not a model: it
# answers valid, deterministic JSON built from the names in each paragraph.
set -eu
PY=${PY:-.venv/bin/python}
OUT=${OUT:-out/demo}
CONTEXT=${CONTEXT:-5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f}
DIAGNOSTICS=${DIAGNOSTICS:-$OUT-diagnostics.jsonl}

urlfile=$(mktemp)
$PY -m taguru_ray simulate --port 0 --latency-ms 40 >"$urlfile" &
sim=$!
trap 'kill $sim 2>/dev/null || true; rm -f "$urlfile"' EXIT INT TERM
tries=0
until [ -s "$urlfile" ]; do
    tries=$((tries + 1))
    if [ "$tries" -gt 100 ]; then echo "demo: the simulator did not start" >&2; exit 1; fi
    sleep 0.1
done
base=$(head -n 1 "$urlfile")
echo "demo: simulator at $base (a stand-in for a model server, not a model)" >&2

TAGURU_EXTRACT_URL="$base/chat/completions" TAGURU_EXTRACT_MODEL=taguru-sim \
    $PY -m taguru_ray extract --context "$CONTEXT" --name demo \
    --description "taguru-ray sample corpus" --chunk-bytes 1024 \
    --diagnostics-out "$DIAGNOSTICS" --out "$OUT" examples/corpus
echo "demo: source files, manifest and records are in $OUT (records under $OUT/.extract-trace)" >&2
echo "demo: checking $OUT as \`taguru import\` of the whole folder would read it" >&2
$PY -m taguru_ray verify "$OUT"
echo "demo: one page of the run's figures (README \"A report to look at\")" >&2
$PY -m taguru_ray report "$OUT" --diagnostics "$DIAGNOSTICS" --html "$OUT-report.html"
STORE=${STORE:-$OUT-context}
echo "demo: importing $OUT into an embedded Taguru context at $STORE, then one search" >&2
rm -rf "$STORE"
$PY -m taguru_ray import "$OUT" --store "$STORE"
$PY -m taguru_ray search --store "$STORE" --limit 3 "日本酒の仕込み"
echo "demo: \`taguru-ray serve --store $STORE\` answers Taguru's HTTP API over it" >&2
