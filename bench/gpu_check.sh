#!/usr/bin/env bash
# The GPU checks, run on a machine with an NVIDIA GPU, cupy and (optionally) JAX with CUDA:
# the real-GPU tests, then bench/bench_gpu.py. Logs go to ${OUT:-/tmp/gpu_check}.
# Usage: bash bench/gpu_check.sh [--quick]
set -u
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 FJAX_CACHE_DIR=/tmp/fjax_cache XLA_PYTHON_CLIENT_PREALLOCATE=false
PY=${PY:-python3}
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  $PY -c "import sys, numpy, numba, cupy; print(sys.version); print('numpy', numpy.__version__, 'numba', numba.__version__, 'cupy', cupy.__version__)"
  $PY -c "import jax; print('jax', jax.__version__, jax.devices())" 2>&1 | tail -1
  $PY -c "import fjax; print('fjax devices', fjax.devices(), fjax.default_backend())"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
timeout 150 $PY -m pytest -q -p no:cacheprovider tests/test_cuda_gpu.py tests/test_devices_gpu.py -k "not fake and not emulated" \
  --maxfail=40 2>&1 | tee "$OUT/tests_gpu.txt" | tail -40
timeout 180 $PY bench/bench_gpu.py "$@" --json "$OUT/bench_gpu.json" 2>&1 | tee "$OUT/bench_gpu.txt" | tail -30
# small plans as CUDA graphs too (per-example gradients: 3 steps, under the default threshold of 4)
FJAX_CUDA_GRAPH_MIN_STEPS=2 timeout 60 $PY bench/bench_gpu.py --quick --only per-example --rounds 5 \
  --json "$OUT/bench_gpu_graph2.json" 2>&1 | tee "$OUT/bench_gpu_graph2.txt" | tail -6
# the same MLP step with one launch per elementwise nest (no horizontal fusion), for the A/B
FJAX_CUDA_HFUSE=0 timeout 60 $PY bench/bench_gpu.py --quick --only mlp --rounds 5 \
  --json "$OUT/bench_gpu_nohfuse.json" 2>&1 | tee "$OUT/bench_gpu_nohfuse.txt" | tail -4
# the main example, trained on the GPU (--device gpu)
timeout 150 $PY examples/digits_mlp.py --device gpu --epochs 10 --no-plot 2>&1 | tee "$OUT/digits_gpu.txt" | tail -12
timeout 60 $PY bench/gpu_profile.py 2>&1 | tee "$OUT/profile.txt" | head -40
