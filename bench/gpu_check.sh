#!/usr/bin/env bash
# The GPU checks, run on a machine with an NVIDIA GPU, cupy and (optionally) JAX with CUDA, in 2-3
# minutes (132 s on an H200 before the cuBLASLt A/B was added): the real-GPU tests, bench/bench_gpu.py against JAX (TF32 default, then both libraries
# at float32), per-kernel device times beside JAX (bench/gpu_kernels.py), the main example on the
# GPU, and a host profile. Logs go to ${OUT:-/tmp/gpu_check}: 8 files (the device tool returns at most 8).
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
timeout 180 $PY -m pytest -o addopts="" -q -p no:cacheprovider -n 8 tests/test_cuda_gpu.py tests/test_devices_gpu.py tests/test_cuda_precision.py \
  -k "not fake and not emulated" --maxfail=40 2>&1 | tee "$OUT/tests_gpu.txt" | tail -20
timeout 150 $PY bench/bench_gpu.py "$@" --json "$OUT/bench_gpu.json" 2>&1 | tee "$OUT/bench_gpu.txt" | tail -12
# both libraries at full float32 matmul precision (the default above is TF32 on both)
timeout 60 $PY bench/bench_gpu.py --quick --only mlp,rnn,per --precision float32 --json "$OUT/bench_gpu_f32.json" \
  2>&1 | tail -5
# A/B: row fusion off (the MLP loss and its gradient as 7 launches instead of 2), appended above
FJAX_CUDA_ROWS=0 timeout 60 $PY bench/bench_gpu.py --quick --only mlp 2>&1 | tail -3 | sed 's/^/rows off: /' \
  | tee -a "$OUT/bench_gpu.txt"
# A/B: per-example gradients (host-bound, 1.05-1.17x JAX on the H100 as a gemv + 2 launches in a
# graph) with the product back on cuBLAS (session 16 made them one row kernel, matvec_rows.py)
FJAX_CUDA_MATVEC_ROWS=0 timeout 60 $PY bench/bench_gpu.py --quick --only per --rounds 15 2>&1 | tail -2 \
  | sed 's/^/matvec on cuBLAS: /' | tee -a "$OUT/bench_gpu.txt"
# A/B: the rfft spectrum (2.1x JAX with cupy.fft launch by launch) without its CUDA graph (session 16:
# fjax's own cuFFT plans, fft_exec.py, captured)
FJAX_CUDA_FFT_GRAPHS=0 timeout 60 $PY bench/bench_gpu.py --only rfft --rounds 15 2>&1 | tail -2 \
  | sed 's/^/fft not in graphs: /' | tee -a "$OUT/bench_gpu.txt"
# A/B: GEMMs through cuBLASLt with measured algorithms (off by default until this shows a gain):
# correctness first (the corpus and the precision tests), then the speed, appended above
FJAX_CUDA_CUBLASLT=1 timeout 90 $PY -m pytest -q -p no:cacheprovider -n 6 tests/test_cuda_gpu.py \
  tests/test_cuda_precision.py -k "not fake and not emulated" --maxfail=10 2>&1 | tail -4 | sed 's/^/cublasLt tests: /' \
  | tee -a "$OUT/tests_gpu.txt"
FJAX_CUDA_CUBLASLT=1 timeout 60 $PY bench/bench_gpu.py --quick --only mlp,rnn,per 2>&1 | tail -5 \
  | sed 's/^/cublasLt: /' | tee -a "$OUT/bench_gpu.txt"
timeout 90 $PY bench/gpu_kernels.py --only mlp,rnn,per-example,rfft 2>&1 | grep -v -i warn | tee "$OUT/kernels.txt" | head -80
FJAX_CUDA_CUBLASLT=1 timeout 60 $PY bench/gpu_kernels.py --only mlp 2>&1 | grep -v -i warn | sed 's/^/cublasLt: /' \
  | head -40 | tee -a "$OUT/kernels.txt"
timeout 60 $PY examples/digits_mlp.py --device gpu --no-plot 2>&1 | tee "$OUT/digits_gpu.txt" | tail -4
timeout 40 $PY bench/gpu_profile.py --calls 1000 2>&1 | tee "$OUT/profile.txt" | head -30
# one launch and one allocation a call: what cupy's own operations cost on this machine
timeout 40 $PY bench/gpu_profile.py --calls 1000 --workload "chain 4M" 2>&1 | tee -a "$OUT/profile.txt" | head -30
