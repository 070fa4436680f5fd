#!/usr/bin/env bash
# One call on a GPU node whose Python has the CUDA stack (torch, cuda-python, NVRTC) but no network:
# install xDSL from .whl/ (`make wheelhouse WHEEL_REQS=xdsl==0.74.0`) and fuser in place, run the
# GPU tests, then the benchmarks. Logs go to $OUT (default ./gpu-out).
#   bash benchmarks/gpu_check.sh [pytest args...]      # e.g. -k pointwise; BENCH=0 skips benchmarks
# TESTS=0 skips the tests; EXTRA="matmul streams welford host_breakdown cold_start" runs those scripts
# too (each writes to $OUT/<name>/).
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
SITE=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --target "$SITE" .whl/*.whl || exit 1
export PYTHONPATH=$SITE PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
if [ "${TESTS:-1}" = "1" ]; then
  python3 -m pytest -q -p no:cacheprovider -m gpu --durations=10 tests "$@" 2>&1 \
    | tee "$OUT/gpu_tests.log" | tail -30
fi
for name in ${EXTRA:-}; do
  mkdir -p "$OUT/$name"
  if [ "$name" = host_breakdown ]; then
    python3 benchmarks/host_breakdown.py 2>&1 | tee "$OUT/$name/host_breakdown.md" | tail -20
  else
    python3 "benchmarks/$name.py" --out "$OUT/$name" 2>&1 | tee "$OUT/$name/log.txt" | tail -20
  fi
done
if [ "${BENCH:-1}" = "1" ]; then
  python3 benchmarks/run.py --out "$OUT" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log" | tail -40
fi
