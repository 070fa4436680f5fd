#!/usr/bin/env bash
# One call on a GPU node whose Python has the CUDA stack (torch, cuda-python, NVRTC) but no network:
# install xDSL and the pinned NVRTC from .whl/ (`make wheelhouse WHEEL_REQS="xdsl==0.74.0
# cuda-toolkit[nvrtc,cudart,crt]==13.5.0"`) and fuser in place, run the
# GPU tests, then the benchmarks. Logs go to $OUT (default ./gpu-out).
#   bash benchmarks/gpu_check.sh [pytest args...]      # e.g. -k pointwise; BENCH=0 skips benchmarks
# TESTS=0 skips the tests; EXTRA="matmul streams welford host_breakdown cold_start new_shape" runs
# those scripts too (each writes to $OUT/<name>/; new_shape times nvFuser beside fuser where
# nvfuser_direct imports, see benchmarks/new_shape.py). EXTRA_PYTHONPATH is put after the
# installed wheels on PYTHONPATH (a folder nvFuser was installed into with --target, say).
# FUZZ=N runs N programs of the differential fuzzer on the GPU in FUZZ_JOBS processes (default 16;
# FUZZ_SEED picks the seed, default a fresh one) after the tests: $OUT/fuzz.log.
# SANITIZE=1 then reruns the GPU tests (SANITIZE_TESTS, default all of tests/, less those marked
# `timing` or `pool_accounting`: compute-sanitizer serializes launches and changes the pool's
# count) and a GPU fuzz of SANITIZE_FUZZ programs (default 50) under compute-sanitizer's memcheck,
# racecheck, synccheck and initcheck side by side (SANITIZE_TOOLS narrows them; SANITIZE_SHARDS
# deals the test files to that many processes per tool), torch's caching allocator off, on the
# cubins the plain test run compiled (a kernel cache of this run's own, or FUSER_CACHE_DIR with
# FUSER_TEST_KERNEL_CACHE=1 in an earlier call): $OUT/sanitize/<tool>-*.log, one summary line each.
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
if [ "${SANITIZE:-0}" = "1" ]; then  # FUSER_CACHE_DIR given: an earlier call's plain run filled it
  export FUSER_TEST_KERNEL_CACHE=1 FUSER_CACHE_DIR=${FUSER_CACHE_DIR:-$(mktemp -d)}
fi
SITE=$(mktemp -d)
mapfile -t wheels < <(ls .whl/*.whl | grep -v '/nvidia_cuda_')
python3 -m pip install -q --no-index --no-deps --target "$SITE" "${wheels[@]}" || exit 1
# the NVRTC fuser pins, where .whl has it (older ones miscompile, see runtime/compiled_kernel.py):
# into the site-packages, where cuda.pathfinder looks
if ls .whl/nvidia_cuda_nvrtc-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps .whl/nvidia_cuda_*.whl || exit 1
fi
export PYTHONPATH=$SITE${EXTRA_PYTHONPATH:+:$EXTRA_PYTHONPATH} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null || exit 1
# byte-compiled, as installing a wheel leaves it (a process that must compile fuser's and xDSL's
# sources first pays about a third of a second more, and a read-only or PYTHONDONTWRITEBYTECODE
# tree pays it in every process, cold-start timings included)
python3 -m compileall -q -j 0 "$SITE" . >/dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
if [ "${TESTS:-1}" = "1" ]; then
  python3 -m pytest -q -p no:cacheprovider -m gpu --durations=10 tests "$@" 2>&1 \
    | tee "$OUT/gpu_tests.log" | tail -30
fi
FUZZ_SEED=${FUZZ_SEED:-$((RANDOM * 32768 + RANDOM))}
if [ -n "${FUZZ:-}" ]; then
  python3 -m fuser.fuzz.differential --gpu --count "$FUZZ" --seed "$FUZZ_SEED" \
    --jobs "${FUZZ_JOBS:-16}" 2>&1 | tee "$OUT/fuzz.log" | tail -15
fi
if [ "${SANITIZE:-0}" = "1" ]; then
  mkdir -p "$OUT/sanitize"
  tools=${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}
  shards=${SANITIZE_SHARDS:-1}  # test files dealt round-robin to this many processes per tool
  selected="gpu and not timing and not pool_accounting"
  mapfile -t files < <(python3 -m pytest -q -p no:cacheprovider --collect-only -m "$selected" \
    ${SANITIZE_TESTS:-tests} 2>/dev/null | grep '::' | sed 's/::.*//' | uniq)
  export PYTORCH_NO_CUDA_MEMORY_CACHING=1
  for tool in $tools; do
    san=(timeout "${SANITIZE_TIMEOUT:-1200}" compute-sanitizer --tool "$tool" --report-api-errors no
      --print-limit 20)
    for ((i = 0; i < shards; i++)); do
      mine=()
      for ((j = i; j < ${#files[@]}; j += shards)); do mine+=("${files[j]}"); done
      log="$OUT/sanitize/$tool-tests-$i.log"
      ("${san[@]}" python3 -m pytest -v -p no:cacheprovider -m "$selected" "${mine[@]}" \
        >"$log" 2>&1; echo "exit status $?" >>"$log") &
    done
    log="$OUT/sanitize/$tool-fuzz.log"
    ("${san[@]}" python3 -m fuser.fuzz.differential --gpu --count "${SANITIZE_FUZZ:-50}" \
      --seed "$FUZZ_SEED" --jobs 2 >"$log" 2>&1; echo "exit status $?" >>"$log") &
  done
  wait
  for log in "$OUT"/sanitize/*.log; do
    printf '%-22s %s | %s | %s\n' "$(basename "$log" .log)" \
      "$(grep -aE '(passed|failed|fuzz:)' "$log" | tail -1)" \
      "$(grep -aE 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)" \
      "$(grep -a 'exit status' "$log" | tail -1)"
  done | tee "$OUT/sanitize/summary.txt"
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
