#!/usr/bin/env bash
# A short GPU check after a change (about 5 minutes): the real-GPU tests at the default settings,
# then an A/B of one CUDA setting (default: FJAX_CUDA_SKINNY=1, small-output GEMMs as fjax's own
# kernel) on the MLP step, the RNN gradient and per-example gradients beside JAX, alternating
# default/setting runs, the corpus on the GPU with the setting on, and per-kernel device times.
# Logs go to ${OUT:-/tmp/gpu_ab}. Usage: AB="FJAX_CUDA_SKINNY=1" bash bench/gpu_ab.sh
set -u
OUT=${OUT:-/tmp/gpu_ab}
AB=${AB:-FJAX_CUDA_SKINNY=1}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 FJAX_CACHE_DIR=/tmp/fjax_cache XLA_PYTHON_CLIENT_PREALLOCATE=false
PY=${PY:-python3}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log --oneline -1 2>/dev/null; } | tee "$OUT/env.txt"
timeout 200 $PY -m pytest -q -p no:cacheprovider -n 8 tests/test_cuda_gpu.py tests/test_devices_gpu.py tests/test_cuda_precision.py \
  -k "not fake and not emulated" 2>&1 | tee "$OUT/tests_gpu.txt" | tail -12
for i in $(seq 1 ${PAIRS:-2}); do
  timeout 60 $PY bench/bench_gpu.py --quick --only mlp,rnn,per --rounds 15 2>&1 | grep "^| [a-z]" | sed "s/^/default $i: /" \
    | tee -a "$OUT/ab.txt"
  env $AB timeout 60 $PY bench/bench_gpu.py --quick --only mlp,rnn,per --rounds 15 2>&1 | grep "^| [a-z]" \
    | sed "s/^/$AB $i: /" | tee -a "$OUT/ab.txt"
done
env $AB timeout 120 $PY -m pytest -q -p no:cacheprovider -n 8 tests/test_cuda_gpu.py tests/test_cuda_precision.py \
  -k "not fake and not emulated" 2>&1 | tee "$OUT/tests_ab.txt" | tail -8
timeout 50 $PY bench/gpu_kernels.py --only mlp,rnn 2>&1 | grep -v -i warn | tee "$OUT/kernels.txt" | grep -E "==|device:"
env $AB timeout 50 $PY bench/gpu_kernels.py --only mlp,rnn 2>&1 | grep -v -i warn | sed "s/^/$AB: /" \
  | tee -a "$OUT/kernels.txt" | grep -E "==|device:"
