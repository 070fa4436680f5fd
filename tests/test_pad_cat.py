"""`pad` and `cat` on the CPU: the frontend's IR and messages, the reference against numpy, and
what the compiler makes of them (NVRTC, no GPU): a resize op fuses into the pointwise kernel,
which reads each operand shifted under a predicate (`iteration_space.Shifted`), with vector
loads where the offsets and extents divide by the width. The GPU results are in
tests/gpu/test_pad_cat_gpu.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from definitions import permuted_beside_source, rotate

from fuser import DataType, FusionDefinition
from fuser.dialects.common import op_text
from fuser.errors import DefinitionError
from fuser.transforms.pipeline import Compilation, run_pipeline
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta

F32 = DataType.Float


def _torch_pad(a: np.ndarray, widths: list[int], value: float) -> np.ndarray:
    """torch's `constant_pad_nd` in numpy: (before, after) pairs from the innermost dim, a
    negative width cropping."""
    out = a
    for pair in range(len(widths) // 2):
        d = a.ndim - 1 - pair
        before, after = widths[2 * pair], widths[2 * pair + 1]
        n = out.shape[d]
        keep = [slice(None)] * a.ndim
        keep[d] = slice(max(-before, 0), n - max(-after, 0))
        out = out[tuple(keep)]
        spec = [(0, 0)] * a.ndim
        spec[d] = (max(before, 0), max(after, 0))
        out = np.pad(out, spec, constant_values=value)
    return out


def test_pad_in_the_ir_and_the_reference(rng: np.random.Generator) -> None:
    with FusionDefinition("pads") as fd:
        x = fd.define_tensor([-1, 6], F32)
        fd.add_output(fd.ops.pad(x, [2, 3], 1.5))
        fd.add_output(fd.ops.pad(x, [-1, 2, 0, 0]))  # crops one element before
        assert fd.ops.pad(x, [0, 0]) is x
    ir = fd.fusion_ir()
    assert "fusion.pad %t0 low [0, 2] high [0, 3] value %" in ir
    assert ": tensor<?x6xf32> -> tensor<?x11xf32>" in ir
    for rows in (0, 1, 3):
        a = rng.standard_normal((rows, 6)).astype(np.float32)
        first, second = fd.reference([a])
        np.testing.assert_array_equal(first, _torch_pad(a, [2, 3], 1.5))
        np.testing.assert_array_equal(second, _torch_pad(a, [-1, 2], 0.0))


def test_cat_in_the_ir_and_the_reference(rng: np.random.Generator) -> None:
    """Operands of mixed extents (0 included), one of them twice, promoted as torch does."""
    with FusionDefinition("cats") as fd:
        x = fd.define_tensor([-1, 3], F32)
        y = fd.define_tensor([-1, 5], DataType.Half)
        z = fd.define_tensor([-1, 0], F32)
        fd.add_output(fd.ops.cat([x, y, z, x], dim=-1, manual_padding=0))
        assert fd.ops.cat([x], 0) is x
    assert "fusion.cat %t0, %" in fd.fusion_ir() and "dim 1 :" in fd.fusion_ir()
    for rows in (0, 1, 4):
        a = rng.standard_normal((rows, 3)).astype(np.float32)
        b = rng.standard_normal((rows, 5)).astype(np.float16)
        c = np.zeros((rows, 0), np.float32)
        (got,) = fd.reference([a, b, c])
        np.testing.assert_array_equal(got, np.concatenate([a, b.astype(np.float32), c, a], 1))


def test_cat_checks_run_time_extents() -> None:
    with FusionDefinition("cat_dynamic") as fd:
        x = fd.define_tensor([-1, 3], F32)
        y = fd.define_tensor([-1, 2], F32)
        fd.add_output(fd.ops.cat([x, y], 1))
    with pytest.raises(Exception, match=r"'fusion.cat'.*differ in dim 0"):
        fd.reference([np.ones((4, 3), np.float32), np.ones((5, 2), np.float32)])


Bad = Callable[[FusionDefinition, Any], Any]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd, x: fd.ops.pad(x, [1]), "'pad_widths' has 1 entries; it needs (before, after)"),
        (lambda fd, x: fd.ops.pad(x, [1, 1] * 3), "'pad_widths' has 6 entries"),
        (lambda fd, x: fd.ops.pad(x, [0, 0, 1, 1]), "pads dim 0, whose extent is dynamic"),
        (lambda fd, x: fd.ops.pad(x, [-4, -3]), "widths -4 and -3 leave dim 1 of extent 6 below 0"),
        (lambda fd, x: fd.ops.pad(x, [0.5, 1]), "'pad_widths' entry 0 must be an int"),
        (lambda fd, x: fd.ops.pad(x, [1, 1], x), "argument 'value' must be a Scalar or a Python"),
        (lambda fd, x: fd.ops.cat([x, x], 0), "tensors[0] has a dynamic extent in dim 0"),
        (lambda fd, x: fd.ops.cat([], 0), "'tensors' must be a non-empty list of Tensors"),
        (lambda fd, x: fd.ops.cat([x, x], 2), "argument 'dim'"),
        (lambda fd, x: fd.ops.cat([x, x], 1, manual_padding=True), "manual_padding=True"),
        (
            lambda fd, x: fd.ops.cat([x, fd.define_tensor([6], F32)], 1),
            "tensors[1] has rank 1, tensors[0] rank 2",
        ),
        (
            lambda fd, x: fd.ops.cat(
                [x, fd.define_tensor([3, 6], F32), fd.define_tensor([4, 6], F32)], 1
            ),
            "tensors[2] has shape [4, 6], tensors[1] [3, 6]: only dim 1 may differ",
        ),
        (lambda fd, x: fd.ops.pad(x, [2**62, 2**62]), "longer than int64 counts"),
        (
            lambda fd, x: fd.ops.cat(
                [fd.define_tensor([2, 6], F32), fd.define_tensor([3, 6], F32)], 1
            ),
            "tensors[1] has shape [3, 6], tensors[0] [2, 6]: only dim 1 may differ",
        ),
    ],
)
def test_pad_and_cat_mistakes_name_the_op_and_argument(call: Bad, message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        call(fd, fd.define_tensor([-1, 6], F32))
    assert message in str(e.value)
    assert str(e.value).startswith(("fd.ops.pad", "fd.ops.cat"))


def _kernels(fd: FusionDefinition, shapes: list[tuple[int, ...]]) -> list[str]:
    metas = tuple(TensorMeta.contiguous(s) for s in shapes)
    lowering = run_pipeline(Compilation(fd.fusion.clone(), FusionInfo(metas, DeviceInfo())))
    return [s.scheduler.name for s in lowering.segments]


@pytest.mark.parametrize(("d", "width"), [(64, 8), (12, 2), (10, 1)])
def test_a_rotation_is_one_kernel_with_vectors_where_the_halves_allow(
    rng: np.random.Generator, d: int, width: int
) -> None:
    """bf16 halves of 32 elements take 8-wide vectors; of 6, 2-wide; of 5, none."""
    fd = rotate(DataType.BFloat16, d)
    shapes = [(3, 5, d), (5, d), (5, d)]
    arrays = [rng.standard_normal(shape).astype(ml_dtypes.bfloat16) for shape in shapes]
    compiled = fd.compile(arrays, arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["pointwise"]
    code = fd.last_cuda_code()
    assert (f"Vec<__nv_bfloat16, {width}>" in code) == (width > 1)
    assert "(unsigned)" in code  # the shifted reads' predicates


def test_a_pad_of_a_reduction_is_a_second_kernel(rng: np.random.Generator) -> None:
    """A reduction kernel reads no resize op: the pad of its result is a pointwise kernel."""
    with FusionDefinition("pad_sum") as fd:
        x = fd.define_tensor([-1, 5], F32)
        fd.add_output(fd.ops.exp(fd.ops.pad(fd.ops.sum(x, [0]), [1, 2], -1.0)))
    assert _kernels(fd, [(7, 5)]) == ["reduction", "pointwise"]
    a = rng.standard_normal((7, 5)).astype(np.float32)
    np.testing.assert_allclose(
        fd.reference([a])[0], np.exp(np.pad(a.sum(0), (1, 2), constant_values=-1)), rtol=1e-6
    )


def test_a_cat_read_by_a_reduction_is_a_kernel_before_it() -> None:
    with FusionDefinition("cat_sum") as fd:
        x = fd.define_tensor([4, 3], F32)
        y = fd.define_tensor([4, 5], F32)
        fd.add_output(fd.ops.sum(fd.ops.cat([x, y], 1), [1]))
    assert _kernels(fd, [(4, 3), (4, 5)]) == ["pointwise", "reduction"]


def test_an_output_read_shifted_is_written_by_its_own_kernel(rng: np.random.Generator) -> None:
    """`y` is an output and a cat's operand: the cat's kernel reads it shifted, so another
    kernel writes it (a kernel writes only outputs the iteration space indexes as they are)."""
    with FusionDefinition("shared") as fd:
        x = fd.define_tensor([3, 4], F32)
        y = fd.ops.exp(x)
        fd.add_output(y)
        fd.add_output(fd.ops.cat([y, x], 1))
    assert sorted(_kernels(fd, [(3, 4)])) == ["pointwise", "pointwise"]
    a = rng.standard_normal((3, 4)).astype(np.float32)
    _, second = fd.reference([a])
    np.testing.assert_allclose(second, np.concatenate([np.exp(a), a], 1), rtol=1e-6)
    fd.compile([a], arch="sm_90")


@pytest.mark.parametrize("cat_first", [True, False])
def test_an_output_the_size_of_a_cat_of_it_is_one_kernel_in_either_order(
    rng: np.random.Generator, cat_first: bool
) -> None:
    """The differential fuzzer's find: `cat([y, empty])` and `y` are outputs of one shape. The
    pointwise kernel iterates over `y` (the cat's result is `y` as it is), whichever output comes
    first; iterating over the cat's would read `y` shifted, which an output may not be."""
    with FusionDefinition("cat_of_output") as fd:
        x = fd.define_tensor([2, -1], F32)
        e = fd.define_tensor([0, -1], F32)
        y = fd.ops.exp(x)
        outputs = [fd.ops.cat([y, e], 0), y]
        for t in outputs if cat_first else outputs[::-1]:
            fd.add_output(t)
    assert _kernels(fd, [(2, 5), (0, 5)]) == ["pointwise"]
    a, b = rng.standard_normal((2, 5)).astype(np.float32), np.zeros((0, 5), np.float32)
    for out in fd.reference([a, b]):
        np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)
    fd.compile([a, b], arch="sm_90")


def test_a_rotation_loads_both_halves_with_one_load(rng: np.random.Generator) -> None:
    """The cat's operands lie at disjoint halves of the row: one `kernel.select_load` reads the
    half the point lies in, unpredicated, as the halves cover the row."""
    fd = rotate(DataType.BFloat16, 64)
    shapes = [(3, 5, 64), (5, 64), (5, 64)]
    arrays = [rng.standard_normal(s).astype(ml_dtypes.bfloat16) for s in shapes]
    fd.compile(arrays, arch="sm_90")
    code = fd.last_cuda_code()
    assert code.count("select_load0 = ") == 1
    assert "Vec<__nv_bfloat16, 8> load" in code  # x itself, unshifted
    assert "if (cmpi" not in code and "||" not in code


def test_a_cat_beside_a_pad_loads_under_either_predicate() -> None:
    """cat(x, pad(y)): x's and y's intervals leave the pad's fill between them, so the one load
    is predicated on either and the array is zeroed first."""
    with FusionDefinition("cat_pad") as fd:
        x = fd.define_tensor([3, 8], F32)
        y = fd.define_tensor([3, 4], F32)
        fd.add_output(fd.ops.cat([x, fd.ops.pad(y, [4, 4], 1.0)], 1))
    fd.compile([np.ones((3, 8), np.float32), np.ones((3, 4), np.float32)], arch="sm_90")
    code = fd.last_cuda_code()
    assert "bool ori0 = cmpi0 || cmpi1;" in code and "if (ori0) {" in code
    assert "cmpi0 ? &t0.data[t0_off] : &t1.data[t1_off]" in code


@pytest.mark.parametrize(
    "dtype", [DataType.Half, DataType.BFloat16, F32, DataType.Int, DataType.Bool], ids=str
)
def test_nested_resizes_compile_in_every_dtype(rng: np.random.Generator, dtype: DataType) -> None:
    """pad(cat(x, pad(y))) along two dims, with a broadcast operand: one kernel, NVRTC accepts
    it, and the reference agrees with numpy."""
    with FusionDefinition("nested") as fd:
        x = fd.define_tensor([3, 4], dtype)
        y = fd.define_tensor([3, 2], dtype)
        r = fd.define_tensor([1, 8], dtype)
        inner = fd.ops.cat([x, fd.ops.pad(y, [1, 1, 0, 0], 1)], 1)
        both = fd.ops.where(fd.ops.gt(fd.ops.cast(r, F32), 0.0), inner, inner)
        fd.add_output(fd.ops.pad(both, [0, 1, 2, 0], 0))
    arrays = [
        rng.standard_normal(s) > 0 if dtype == DataType.Bool else rng.standard_normal(s)
        for s in [(3, 4), (3, 2), (1, 8)]
    ]
    from fuser.runtime.dtypes import numpy_dtype

    arrays = [np.asarray(a).astype(numpy_dtype(dtype.element_type)) for a in arrays]
    compiled = fd.compile(arrays, arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["pointwise"]
    a, b, _ = arrays
    inner_np = np.concatenate([a, np.pad(b, ((0, 0), (1, 1)), constant_values=1)], 1)
    expected = np.pad(inner_np, ((2, 0), (0, 1)), constant_values=0)
    np.testing.assert_array_equal(np.asarray(fd.reference(arrays)[0]), expected)


def _hoisted(fd: FusionDefinition) -> Any:
    """The fusion after `fuser-hoist-views`."""
    from fuser.transforms.hoist_views import hoist_views

    fusion = fd.fusion.clone()
    hoist_views(fusion)
    return fusion


def test_a_slice_moves_through_a_broadcast_only_where_no_run_time_broadcast_is_cut(
    rng: np.random.Generator,
) -> None:
    """slice(broadcast(w)) is broadcast(slice(w)) for w's static dims; a `?` dim of x made a
    static dim may be 1 at run time (broadcast), which the slice's bounds must not cut: that
    slice stays where it is."""
    with FusionDefinition("through_broadcast") as fd:
        x = fd.define_tensor([-1], F32)
        w = fd.define_tensor([8], F32)
        y = fd.define_tensor([4, 4], F32)
        for t in (x, w):
            b = fd.ops.broadcast_in_dim(t, [4, 8], [1])
            fd.add_output(fd.ops.add(fd.ops.slice(b, [0, 2], [4, 6]), y))
    hoisted = op_text(_hoisted(fd))
    assert "fusion.slice %t1 [2:6]" in hoisted and "fusion.slice %t0" not in hoisted
    w_values = np.arange(8, dtype=np.float32)
    for n in (1, 8):
        a = rng.standard_normal(n).astype(np.float32)
        c = rng.standard_normal((4, 4)).astype(np.float32)
        first, second = fd.reference([a, w_values, c])
        np.testing.assert_allclose(first, (a if n == 1 else a[2:6])[None, :] + c, rtol=1e-6)
        np.testing.assert_allclose(second, w_values[2:6][None, :] + c, rtol=1e-6)
        fd.compile([a, w_values, c], arch="sm_90")


def test_a_permuted_output_beside_its_source_is_not_stored_at_the_flat_index() -> None:
    """Both outputs have the space's shape; only the unpermuted one is stored at the flat
    index."""
    fd = permuted_beside_source()
    fd.compile([np.ones((4, 4), np.float32)], arch="sm_90")
    stores = [
        line.split("] =")[0].split(".data[")[1]
        for line in fd.last_cuda_code().splitlines()
        if ".data[" in line and "] =" in line
    ]
    assert len(stores) == 2 and stores[0] != stores[1], stores
