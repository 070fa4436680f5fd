"""fuser's own fuzzers: random inputs that hunt for wrong results and crashes across the pipeline.

- `fuser.fuzz.differential` (with `programs` and `oracle`): a differential fuzzer of the whole
  pipeline. `programs` generates random fusions over every op and dtype of the Python frontend,
  with size classes and input layouts; `oracle` evaluates such a program again, written from
  torch's documented semantics in float64 numpy without any of fuser's code; `differential`
  checks fuser's reference interpreter against the oracle, every fusion-level pass
  (translate-welford, split-k, fuser-segment, fuser-lower-host) against the reference, compiles
  every kernel with NVRTC and, with `--gpu`, runs `fd.execute` on torch tensors against the
  reference. Failures are shrunk and printed as standalone Python scripts.
  Run `python -m fuser.fuzz.differential --seed S --count N [--gpu] [--sizes small|large]
  [--jobs J]`; `tests/test_fuzz_differential.py` runs a fixed seed in `make test`.
- `fuser.fuzz.mutate_opt`: a mutation fuzzer of `fuser-opt` over the lit tests (see its
  docstring): a mutated input must end in a located error, never an internal one.
"""
