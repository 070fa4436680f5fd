"""The dispatch path without a GPU (fakes of tests/test_host_evaluator.py): one signature cache
for one-kernel and program signatures, `execute` a real method, the generated fast path visible
in tracebacks and under `FUSER_DUMP=fast_path`, and the signature layout's one definition."""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np
import pytest
from test_host_evaluator import SUM_DIV, FakeGpu, FakeTorchTensor, _fusion, chain3

from fuser import dump
from fuser.compiler import FusionCompiler
from fuser.runtime import frontends
from fuser.runtime.calls import InputLayout, read_inputs
from fuser.runtime.dispatch import SignatureCache, fast_path_source
from fuser.runtime.executor import Entry
from fuser.runtime.generated import define
from fuser.runtime.host_evaluator import Specialization
from fuser.runtime.signature import (
    NAMESPACE,
    SCALAR_PART,
    TENSOR_PART,
    decode_signature,
    scalar_part,
    tensor_part,
)

__all__ = ["gpu"]  # the fixture, imported for pytest
from test_host_evaluator import gpu


def test_execute_is_a_method_and_one_cache_holds_both_kinds(gpu: FakeGpu) -> None:
    compiler = FusionCompiler(_fusion(SUM_DIV))
    assert compiler.execute.__func__ is FusionCompiler.execute  # type: ignore[attr-defined]
    small = [FakeTorchTensor(1 << 20, (3, 127)), FakeTorchTensor(1 << 21, (3, 127))]
    big = [FakeTorchTensor(1 << 30, (3, 70000)), FakeTorchTensor(1 << 31, (3, 70000))]
    gpu.params = {"fuser_sum_div_persistent_0": 3}
    gpu.params |= {"fuser_sum_div_p0_s0_reduction": 2, "fuser_sum_div_p0_s1_pointwise": 3}
    compiler.execute(small)
    compiler.execute(big)
    runnables = list(compiler._signatures.entries.values())
    assert [type(r) for r in runnables] == [Entry, Specialization]
    assert [r.one_launch for r in runnables] == [True, False]
    for inputs, runnable in ((small, runnables[0]), (big, runnables[1]), (small, runnables[0])):
        compiler.execute(inputs)
        assert compiler._signatures.last is runnable
    assert (compiler.hits, compiler.misses) == (3, 2)


def test_generated_fast_path_shows_in_tracebacks(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiler = FusionCompiler(chain3().fusion)
    gpu.params = {f"fuser_chain3_p0_s{k}_pointwise": n for k, n in enumerate((3, 3, 2))}
    inputs = [FakeTorchTensor(1 << 20, (256,)), FakeTorchTensor(1 << 21, (256,))]
    compiler.execute(inputs)  # the signature is known: the next call takes the fast path

    def broken(device: int) -> int:
        raise RuntimeError("stream query failed")

    monkeypatch.setattr(frontends.TORCH_FRONTEND, "raw_stream", broken)
    with pytest.raises(RuntimeError) as info:
        compiler.execute(inputs)
    text = "".join(traceback.format_exception(info.value))
    assert "<fuser generated #" in text and "execute of @chain3>" in text
    assert "stream = FE.raw_stream(device)" in text  # the generated line itself


def test_fuser_dump_fast_path_prints_the_generated_code(capsys: pytest.CaptureFixture[str]) -> None:
    dump.configure("fast_path")
    try:
        cache = SignatureCache(InputLayout("f", ["input #0"], [True]), lambda call: None)  # type: ignore[arg-type,return-value]
    finally:
        dump.configure("")
    err = capsys.readouterr().err
    assert "===== FUSER_DUMP fast_path: execute of @f =====" in err
    assert cache.fast_path_source.strip() in err


def test_define_registers_source_for_linecache() -> None:
    fn = define("def f(x):\n    return 1 // x\n", "f", {}, "a test")
    with pytest.raises(ZeroDivisionError) as info:
        fn(0)
    assert "return 1 // x" in "".join(traceback.format_exception(info.value))


def test_signature_templates_are_the_encoders_and_the_fast_path_uses_them() -> None:
    shape, strides, ptr = (3, 5), (1, 3), 0x1008
    assert tensor_part(shape, strides, 3, ptr) == (2, 3, 5, 1, 3, 3, 8)
    assert tensor_part(shape, strides, 3, 8) == tensor_part(shape, strides, 3, ptr)  # alignment
    assert scalar_part(2.5) == (-1, 3) and scalar_part(np.int32(1)) == (-1, 2)
    key = (*tensor_part(shape, strides, 3, ptr), *scalar_part(True), 0)
    metas, kinds, device = decode_signature(key, (True, False))
    assert metas[0] is not None and metas[0].shape == shape and metas[0].strides == strides
    assert (metas[0].dtype_code, metas[0].alignment, kinds, device) == (3, 8, (1,), 0)
    filled = TENSOR_PART.format(shape="s", strides="st", code="3", ptr="p")
    assert eval(f"({filled},)", {**NAMESPACE, "s": shape, "st": strides, "p": ptr}) == key[:7]
    source = fast_path_source(InputLayout("f", ["a", "b"], [True, False]))
    assert SCALAR_PART.format(value="x1") in source
    assert TENSOR_PART.format(
        shape="s0", strides="x0.stride()", code="CODES[x0.dtype]", ptr="p0"
    ) in (source)


def test_general_path_signature_matches_the_encoder(rng: np.random.Generator) -> None:
    x = rng.standard_normal((4, 6)).astype(np.float32)[:, ::2]  # a strided view
    layout = InputLayout("f", ["x", "s"], [True, False])
    call = read_inputs([x, 2.0], layout, with_stream=False)
    contiguous = tuple(int(n) for n in np.cumprod((1, *x.shape[::-1]))[:-1][::-1])
    expected: tuple[Any, ...] = (*tensor_part(x.shape, contiguous, 3, 0), *scalar_part(2.0))
    assert call.key[:-1] == expected  # numpy: the contiguous, aligned device copy it becomes
