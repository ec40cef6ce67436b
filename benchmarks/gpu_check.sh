#!/bin/sh
# Issue 48's check on a host with one NVIDIA GPU (an H100): vLLM installed beside
# taguru-ray, one replica of a small public model started by taguru-ray itself
# (`--engine vllm`), the anchor corpus extracted through it with structured output,
# and the throughput, the GPU's memory and what bounded the run written to
# benchmarks/results/gpu-check-<stamp>.json and gpu-check-latest.json
# (benchmarks/gpu_check.py).
#
#   sh benchmarks/gpu_check.sh                                 # Qwen/Qwen2.5-0.5B-Instruct
#   MODEL=Qwen/Qwen2.5-7B-Instruct sh benchmarks/gpu_check.sh
#   sh benchmarks/gpu_check.sh --engine-args '--max-model-len 8192'
#
# Needs the NVIDIA driver (nvidia-smi), Python 3.11 or later, and network access to
# PyPI and Hugging Face. It builds a venv of its own (.venv-gpu; VENV= to choose
# another) so the project's .venv never holds CUDA wheels; a second run reuses it
# (GPU_CHECK_INSTALL=0 skips the install into a venv that has vLLM already).
set -eu
cd "$(dirname "$0")/.."
MODEL="${MODEL:-Qwen/Qwen2.5-0.5B-Instruct}"
VENV="${VENV:-.venv-gpu}"
if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu_check: nvidia-smi is not on PATH — run this on a host with an NVIDIA GPU and its driver" >&2
    exit 2
fi
if [ "${GPU_CHECK_INSTALL:-1}" = 0 ]; then
    :  # a venv that already holds taguru-ray and vLLM
elif command -v uv >/dev/null 2>&1; then
    [ -x "$VENV/bin/python" ] || uv venv --seed --python 3.11 "$VENV"
    uv pip install --python "$VENV/bin/python" -e . vllm
else
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -e . vllm
fi
# The replica runs `vllm serve` from the venv: its bin first on the PATH the run's own
# local Ray (and so the replica's actor) inherits.
PATH="$PWD/$VENV/bin:$PATH"
export PATH
exec "$VENV/bin/python" -m benchmarks.gpu_check --model "$MODEL" "$@"
