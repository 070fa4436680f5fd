"""nvFuser's spellings of the Python API, as Thunder and nvFuser's own tests call them: every
`define_tensor` form, every `DataType` member (those fuser does not compute fail at definition,
naming the type), `define_scalar(DataType)`, reductions without dims, and `execute`'s keywords
(checked before anything runs, so these run without a GPU)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from definitions import cpu_scalar_scale, running_mean_update

from fuser import DataType, FusionDefinition
from fuser.errors import DefinitionError, InputError
from fuser.runtime.dtypes import BFLOAT16


def _types(fd: FusionDefinition) -> list[str]:
    return [str(t._value.type) for t in fd.inputs]  # type: ignore[union-attr]


def test_every_define_tensor_form() -> None:
    with FusionDefinition("forms") as fd:
        fd.define_tensor(
            shape=[-1, -1],
            contiguity=[True, True],
            dtype=DataType.BFloat16,
            is_cpu=False,
            stride_order=[1, 0],
        )
        fd.define_tensor([-1, -1], [None, True], DataType.Float)  # None: a broadcast dim
        fd.define_tensor([3, -1], contiguity=False, dtype=DataType.Half)
        fd.define_tensor(sizes=[4, 1, 8], strides=[8, 8, 1], dtype=DataType.Int32)
        fd.define_tensor(sizes=[4, 1, 8], strides=[1, 4, 4], static_sizes=True)
        fd.define_tensor([-1], DataType.Bool)  # fuser's short form: dtype second
        fd.add_output(fd.ops.neg(fd.inputs[1]))
    assert _types(fd) == [
        "tensor<?x?xbf16>",
        "tensor<1x?xf32>",
        "tensor<3x?xf16>",
        "tensor<?x1x?xi32>",
        "tensor<4x1x8xf32>",
        "tensor<?xi1>",
    ]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd: fd.define_tensor(), "needs 'shape' (or nvFuser's legacy 'sizes' and"),
        (lambda fd: fd.define_tensor([5, -1], [None, True]), "None at dim 0 (a broadcast dim"),
        (lambda fd: fd.define_tensor([-1], [True, True]), "'contiguity' has 2 entries for rank"),
        (lambda fd: fd.define_tensor([-1], contiguity="yes"), "a bool or a list of True/False"),
        (lambda fd: fd.define_tensor([-1, -1], stride_order=[0, 0]), "a permutation of the 2"),
        (lambda fd: fd.define_tensor(sizes=[2], strides=[1, 1]), "'sizes' has 1 entries but"),
        (lambda fd: fd.define_tensor([-1], sizes=[2], strides=[1]), "not both"),
        (lambda fd: fd.define_tensor([-1], is_cpu=True), "is_cpu=True is for 0-d CPU scalar"),
        (lambda fd: fd.define_tensor([], is_cpu=1), "'is_cpu' must be True or False, got 1"),
        (lambda fd: fd.define_tensor([-1], bogus=1), "unexpected keyword argument 'bogus'"),
        (lambda fd: fd.from_pytorch([1, 2]), "must be a torch tensor of a fuser dtype, got list"),
    ],
)
def test_define_tensor_mistakes(call: Any, message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        call(fd)
    assert message in str(e.value)


UNSUPPORTED = [
    DataType.UInt64,
    DataType.Float8_e4m3fn,
    DataType.Float8_e5m2,
    DataType.Float8_e8m0fnu,
    DataType.Float4_e2m1fn,
    DataType.ComplexFloat,
    DataType.ComplexDouble,
]


@pytest.mark.parametrize("dtype", UNSUPPORTED, ids=lambda d: d.name)
@pytest.mark.parametrize(
    "use",
    [
        lambda fd, d: fd.define_tensor([-1], dtype=d),
        lambda fd, d: fd.define_scalar(d),
        lambda fd, d: fd.ops.cast(fd.define_tensor([-1]), d),
        lambda fd, d: fd.ops.sum(fd.define_tensor([-1]), dtype=d),
    ],
    ids=["define_tensor", "define_scalar", "cast", "sum"],
)
def test_a_data_type_fuser_cannot_compute_fails_where_it_is_named(
    use: Any, dtype: DataType
) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        use(fd, dtype)
    assert f"DataType.{dtype.name} is not supported by fuser yet; it computes Float" in str(e.value)


def test_null_means_no_dtype(rng: np.random.Generator) -> None:
    """Null is "none" for an optional dtype (a reduction's), and no type anywhere else."""
    with FusionDefinition("null") as fd:
        x = fd.define_tensor([-1, -1], DataType.Half)
        fd.add_output(fd.ops.sum(fd.ops.cast(x, DataType.Float), [0], dtype=DataType.Null))
    a = rng.standard_normal((3, 4)).astype(np.float16)
    (out,) = fd.reference([a])
    assert out.dtype == np.float32
    with (
        pytest.raises(DefinitionError, match=r"DataType\.Null is no type"),
        FusionDefinition("n") as f,
    ):
        f.define_tensor([-1], DataType.Null)


def test_define_scalar_of_a_data_type_is_an_input() -> None:
    with FusionDefinition("scalar") as fd:
        x = fd.define_tensor([-1])
        s = fd.define_scalar(DataType.Float)
        fd.add_output(fd.ops.mul(x, s))
    assert str(fd.inputs[1]._value.type) == "f32"  # type: ignore[union-attr]
    (out,) = fd.reference([np.arange(3, dtype=np.float32), np.float32(2.0)])
    np.testing.assert_array_equal(out, [0, 2, 4])
    with pytest.raises(DefinitionError, match="pass one"), FusionDefinition("both") as fd:
        fd.define_scalar(DataType.Float, DataType.Int)


def test_reductions_without_dims_reduce_every_dim(rng: np.random.Generator) -> None:
    with FusionDefinition("all") as fd:
        x = fd.define_tensor([-1, -1])
        z = fd.define_tensor([], DataType.Half)
        fd.add_output(fd.ops.sum(x))
        fd.add_output(fd.ops.sum(x, DataType.Double))
        fd.add_output(fd.ops.max(x, keepdim=True))
        fd.add_output(fd.ops.min(x))
        fd.add_output(fd.ops.var_mean(x)[0])
        fd.add_output(fd.ops.sum(z))
        fd.add_output(fd.ops.prod(x))
    a = rng.standard_normal((5, 7)).astype(np.float32)
    total, total64, biggest, smallest, var, same, product = fd.reference(
        [a, np.array(1.5, np.float16)]
    )
    np.testing.assert_allclose(total, a.sum(), rtol=1e-5)
    assert total64.dtype == np.float64 and biggest.shape == (1, 1)
    np.testing.assert_allclose(total64, a.astype(np.float64).sum(), rtol=1e-6)
    np.testing.assert_array_equal(biggest, a.max(keepdims=True))
    np.testing.assert_array_equal(smallest, a.min())
    np.testing.assert_allclose(var, a.astype(np.float64).var(ddof=1), rtol=1e-5)
    assert same.dtype == np.float16 and float(same) == 1.5
    np.testing.assert_allclose(product, a.astype(np.float64).prod(), rtol=1e-5)


def test_integer_sums_and_products_are_int_and_a_dtype_casts_first() -> None:
    """nvFuser's and torch's rules: a Bool or integer sum or product is Int (an Int32 one no
    longer wraps at 32 bits); `dtype=Bool` casts the input to Bool first (0.5 is true)."""
    with FusionDefinition("int_reductions") as fd:
        i = fd.define_tensor([-1], DataType.Int32)
        f = fd.define_tensor([-1], DataType.Float)
        fd.add_output(fd.ops.sum(i))
        fd.add_output(fd.ops.prod(i))
        fd.add_output(fd.ops.prod(f, dtype=DataType.Bool))
        fd.add_output(fd.ops.sum(i, dtype=DataType.Bool))
    assert [o.dtype for o in fd.outputs] == [
        DataType.Int,
        DataType.Int,
        DataType.Bool,
        DataType.Bool,
    ]
    big = np.array([65536, 65536, 3], np.int32)
    total, product, f_all, any_set = fd.reference([big, np.array([0.5, 2.0], np.float32)])
    assert total == 131075 and product == 3 * 2**32 and total.dtype == np.int64
    assert bool(f_all) is True and bool(any_set) is True


def _negate() -> FusionDefinition:
    with FusionDefinition("neg") as fd:
        fd.add_output(fd.ops.neg(fd.define_tensor([-1])))
    return fd


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bogus": 1}, "got an unknown keyword argument 'bogus'; it takes inputs, device"),
        ({"profile": 1}, "profile must be True or False, got 1"),
        ({"print_repro": True}, "print_repro is not supported by fuser yet"),
        ({"device": "cpu"}, "device must be a CUDA device (an ordinal or 'cuda:N'), got 'cpu'"),
        ({"_enable_options": "fuse_matmul"}, "_enable_options must be a list of option names"),
    ],
)
def test_execute_keywords_are_checked_before_anything_runs(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError) as e:
        _negate().execute([np.ones(3, np.float32)], **kwargs)
    assert message in str(e.value)


def test_profile_before_a_profiled_run_says_how_to_get_one() -> None:
    with pytest.raises(DefinitionError, match=r"fd.profile: nothing was profiled yet; run "):
        _negate().profile()


def test_a_device_that_looks_equal_is_told_apart() -> None:
    """False == 0 and 1.0 == 1 in Python: a bad device argument must not make a good one that
    compares equal to it fail later (nor the other way round)."""
    fd, x = _negate(), np.ones(3, np.float32)
    for bad in (False, 0.0, True):
        with pytest.raises(InputError, match=f"device must be a CUDA device.*got {bad!r}"):
            fd.execute([x], device=bad)
    from fuser.runtime import driver

    if driver.gpu_available():
        np.testing.assert_array_equal(fd.execute([x], device=0)[0], -x)
    else:  # past the device check, the call stops where any call does
        with pytest.raises(Exception, match="no CUDA device is available"):
            fd.execute([x], device=0)


def test_sum_of_a_0_dim_tensor_takes_no_dims() -> None:
    with pytest.raises(DefinitionError, match="'dims' is array"), FusionDefinition("s") as fd:
        fd.ops.sum(fd.define_tensor([]), np.array([0]))


def test_execute_takes_nvfuser_option_lists() -> None:
    """nvFuser's `_enable_options`/`_disable_options` pass the keyword check (without a GPU
    the call then stops where any call does: no device)."""
    from fuser.runtime import driver

    fd = _negate()
    x = np.ones(3, np.float32)
    opts = {"device": 0, "_enable_options": ["fuse_matmul"], "_disable_options": []}
    if driver.gpu_available():
        np.testing.assert_array_equal(fd.execute([x], **opts)[0], -x)
    else:
        with pytest.raises(Exception, match="no CUDA device is available"):
            fd.execute([x], **opts)


def test_validate_checks_every_output_against_the_reference(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`validate` runs `execute` (here the reference stands in for the GPU, then a copy with
    one element off) and names the first output that differs."""
    from fuser import ValidationError

    with FusionDefinition("twice") as fd:
        x = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.mul(x, 2.0))
        fd.add_output(fd.ops.sum(x, [1]))
    a = rng.standard_normal((4, 5)).astype(np.float32)
    outputs = fd.reference([a])
    monkeypatch.setattr(fd, "execute", lambda inputs, **kw: [o.copy() for o in outputs])
    fd.validate([a])
    fd.validate([a], [2 * a, a.sum(1)], atol=1e-5, rtol=1e-5)
    outputs[1][3] += 1e-3
    with pytest.raises(ValidationError) as e:
        fd.validate([a])
    assert "fd.validate: @twice: output #1: 1 of 4 elements differ from the reference" in str(
        e.value
    )
    assert "first at (3,)" in str(e.value)
    fd.validate([a], atol=1e-2)  # a looser atol takes it (rtol stays f32's)
    with pytest.raises(ValidationError):
        fd.validate([a], rtol=1e-6)  # atol stays f32's 2e-5: the 1e-3 still differs
    with pytest.raises(ValidationError, match="output #0: 20 of 20 elements differ"):
        fd.validate([a], [3 * a, a.sum(1)])  # a given reference is the one compared with
    with pytest.raises(InputError, match=r"reference must be a list of 2 array.*list of 1"):
        fd.validate([a], [2 * a])
    with pytest.raises(InputError, match=r"must be a list of 2 array.*got ndarray"):
        fd.validate([a], 2 * a)
    with pytest.raises(InputError, match="atol must be a number, got 'a'"):
        fd.validate([a], atol="a")


def test_last_cuda_code_with_the_headers_inlined() -> None:
    fd = _negate()
    fd.compile([np.ones(3, np.float32)], arch="sm_90")
    plain, full = fd.last_cuda_code(), fd.last_cuda_code(intrinsic_code=True)
    assert '#include "fuser/core.cuh"' in plain and '#include "fuser/' not in full
    assert "// ---- fuser/core.cuh" in full and full.count("// ---- fuser/core.cuh") == 1
    kernel = plain[plain.index("__global__") :].rstrip()  # the kernel itself, unchanged
    assert kernel in full and full.index(kernel) > full.index("// ---- fuser/core.cuh")
    with pytest.raises(DefinitionError, match="'intrinsic_code' must be True or False"):
        fd.last_cuda_code(intrinsic_code=1)


def test_expand_adds_leading_dims_and_takes_no_scalars(rng: np.random.Generator) -> None:
    """torch's expand: more entries than dims add leading dims; -1 keeps a dim. A Scalar is no
    extent: a clear error, and no stray op in the fusion (it is not compared with -1)."""
    with FusionDefinition("expand_lead") as fd:
        v = fd.define_tensor([-1, 1])
        fd.add_output(fd.ops.expand(v, [4, -1, 5]))
    a = rng.standard_normal((3, 1)).astype(np.float32)
    (out,) = fd.reference([a])
    np.testing.assert_array_equal(out, np.broadcast_to(a, (4, 3, 5)))
    emitted: list[str] = []
    with pytest.raises(DefinitionError) as e, FusionDefinition("expand_scalar") as f:
        x = f.define_tensor([-1])
        s = f.define_scalar(DataType.Int)
        emit = f._emit
        f._emit = lambda op: emitted.append(op.name) or emit(op)  # type: ignore[method-assign]
        f.ops.expand(x, [s])
    assert "fd.ops.expand: argument 'shape' entry 0 must be an int or an extent" in str(e.value)
    assert emitted == []  # no fusion.constant/fusion.eq from comparing the Scalar with -1
    with (
        pytest.raises(DefinitionError, match="has rank 1, below the operand's rank 2"),
        FusionDefinition("expand_rank") as f2,
    ):
        f2.ops.expand(f2.define_tensor([-1, 1]), [3])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd: fd.define_scalar(DataType.Null), "DataType.Null is no type"),
        (lambda fd: fd.define_tensor([-1], DataType.Half, dtype=DataType.Float), "'contiguity'"),
        (lambda fd: fd.define_tensor([-1, -1], stride_order=[0, "a"]), "a permutation of the 2"),
        (
            lambda fd: fd.ops.stride_order(fd.define_tensor([-1, -1]), [1, 1]),
            "fd.ops.stride_order: argument 'stride_order' must be empty or a permutation of the 2",
        ),
        (
            lambda fd: fd.add_output(fd.define_tensor([-1]), stride_order=[1]),
            "fd.add_output: argument 'stride_order' must be empty or a permutation of the 1",
        ),
    ],
)
def test_more_definition_mistakes(call: Any, message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        call(fd)
    assert message in str(e.value)


def test_stride_order_as_thunder_emits_it(rng: np.random.Generator) -> None:
    """`fd.ops.stride_order(t, [n-1, ..., 0])` after a permute (Thunder's spelling of "make
    it contiguous") and `add_output(t, stride_order=)` in row-major order: the values are
    `t`'s; an order inside the fusion only matters where it becomes an output's, and an empty
    one asks for none."""
    with FusionDefinition("heads") as fd:
        x = fd.define_tensor([-1, -1, -1], stride_order=[2, 1, 0])
        p = fd.ops.stride_order(fd.ops.permute(x, [1, 0, 2]), stride_order=[2, 1, 0])
        r = fd.ops.reshape(p, new_shape=[-1])
        inner = fd.ops.stride_order(fd.ops.exp(x), [0, 1, 2])  # not an output: only values count
        fd.add_output(r, stride_order=[0])
        fd.add_output(fd.ops.add(inner, x), stride_order=[])
    assert fd.fusion.output_op.layouts() == [(0,), None]
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    got = fd.reference([a])
    np.testing.assert_array_equal(got[0], a.transpose(1, 0, 2).reshape(-1))
    np.testing.assert_allclose(got[1], np.exp(a) + a, rtol=1e-6)
    text = fd.python_definition()
    assert "fd.ops.reshape(fd.ops.stride_order(T1, [2, 1, 0]), new_shape=[-1])" in text


def test_an_output_in_another_stride_order_is_written_permuted() -> None:
    """An output asked for another order (by `fd.ops.stride_order` or `add_output`) is a
    `fusion.output` stride order; the kernels write its row-major permutation (outermost dim
    first) and a run hands back the inverse permutation (`FusionCompiler.output_permutes`).
    The same tensor added again without an order stays row-major, and the printed definition
    keeps the two apart."""
    with FusionDefinition("layouts") as fd:
        x = fd.define_tensor([-1, -1, -1])
        y = fd.ops.exp(x)
        fd.add_output(fd.ops.stride_order(y, [0, 2, 1]))
        fd.add_output(fd.ops.sum(x, [1]), stride_order=[0, 1])
        fd.add_output(y)
    output = fd.fusion.output_op
    assert output.layouts() == [(0, 2, 1), (0, 1), None]
    with FusionDefinition("reordered") as f2:  # a later order replaces an earlier one
        y = f2.ops.stride_order(f2.ops.neg(f2.define_tensor([-1, -1])), [0, 1])
        f2.add_output(f2.ops.stride_order(y, [1, 0]))
        f2.add_output(f2.ops.stride_order(y, []))
        f2.add_output(y, stride_order=[])
    assert f2.fusion.output_op.layouts() == [(1, 0), None, (0, 1)]
    compiler = fd._fusion_compiler()
    assert compiler.output_permutes == ((0, (2, 0, 1)), (1, (1, 0)))
    assert compiler.fusion.output_op.stride_orders is None
    assert "fusion.permute %t1 [1, 2, 0]" in str(compiler.fusion)
    assert "fusion.permute %t2 [1, 0]" in str(compiler.fusion)
    text = fd.python_definition()
    assert "fd.add_output(fd.ops.stride_order(T1, [0, 2, 1]))" in text
    assert text.rstrip().endswith("fd.add_output(T1)")
    a = np.ones((3, 4, 5), np.float32)
    assert fd.compile([a], arch="sm_90").kernels  # NVRTC takes every kernel


def test_an_aliased_output_takes_no_other_stride_order() -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("alias_order") as fd:
        x = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.neg(x), alias_input=x, stride_order=[0, 1])
    assert "fd.add_output: output t1 is written into 'alias_input' and asked for" in str(e.value)
    assert "stride_order [0, 1]" in str(e.value)


def test_welford_without_dims_reduces_every_dim(rng: np.random.Generator) -> None:
    with FusionDefinition("welford_all") as fd:
        avg, _, n = fd.ops.welford(fd.define_tensor([-1, -1]))
        fd.add_output(avg)
        fd.add_output(n)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    mean, count = fd.reference([a])
    np.testing.assert_allclose(mean, a.mean(), rtol=1e-5)
    assert int(count) == 15


def test_static_sizes_goes_with_the_legacy_sizes() -> None:
    message = "'static_sizes' goes with nvFuser's legacy 'sizes' and 'strides'"
    with pytest.raises(DefinitionError, match=message), FusionDefinition("s") as fd:
        fd.define_tensor([-1], static_sizes=True)


def test_full_zeros_and_ones_broadcast_a_scalar(rng: np.random.Generator) -> None:
    """nvFuser's `full(shape, fill_value, dtype)`, and `zeros`/`ones`: a `broadcast_in_dim` of
    a scalar (cast to dtype), sized by ints or extents; one kernel with what reads them."""
    with FusionDefinition("full") as fd:
        x = fd.define_tensor([-1, -1])
        s = fd.define_scalar(DataType.Double)
        fd.add_output(fd.ops.add(x, fd.ops.full(x.shape(), s, DataType.Float)))
        fd.add_output(fd.ops.zeros([3, 4], DataType.BFloat16))
        fd.add_output(fd.ops.where(fd.ops.ones([x.size(0), 4], DataType.Bool), 1.0, 2.0))
    assert "fusion.broadcast_in_dim %s2 [] : bf16 -> tensor<3x4xbf16>" in fd.fusion_ir()
    a = rng.standard_normal((3, 4)).astype(np.float32)
    added, zeros, picked = fd.reference([a, 2.5])
    np.testing.assert_array_equal(added, a + np.float32(2.5))
    assert zeros.dtype == BFLOAT16 and zeros.shape == (3, 4) and not zeros.astype(bool).any()
    np.testing.assert_array_equal(picked, np.ones((3, 4), np.float32))
    assert [k.scheduler for k in fd.compile([a, 2.5], arch="sm_90").kernels] == ["pointwise"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd, x: fd.ops.full([2], x, DataType.Float), "'fill_value' must be a Scalar"),
        (lambda fd, x: fd.ops.full([-1], 1, DataType.Float), "'shape' entry 0 is -1"),
        (lambda fd, x: fd.ops.zeros([2], "f"), "fd.ops.zeros: argument 'dtype' must be a"),
        (lambda fd, x: fd.ops.full([2], 1.5, DataType.Int), "(1.5) is not an integer"),
        (lambda fd, x: fd.ops.ones([2], DataType.Null), "fd.ops.ones: argument 'dtype'"),
    ],
)
def test_full_mistakes_name_the_op_and_argument(call: Any, message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        call(fd, fd.define_tensor([-1]))
    assert message in str(e.value)


def test_define_vector_size_and_shape_as_nvfuser_spells_them(rng: np.random.Generator) -> None:
    """A definition in the form nvFuser's tests and Thunder write: scalars for iota's bounds,
    fd.ops.size of a tensor, a vector of them as expand's shape."""
    with FusionDefinition("vector") as fd:
        x = fd.define_tensor([-1, -1])
        s0 = fd.define_scalar(129, dtype=DataType.Int)
        zero, one = fd.define_scalar(0, dtype=DataType.Int), fd.define_scalar(1, dtype=DataType.Int)
        t3 = fd.ops.iota(s0, zero, one, dtype=DataType.Int)
        t4 = fd.ops.broadcast(t3, is_broadcast_dim=[True, False])
        v = fd.define_vector([fd.define_scalar(4, dtype=DataType.Int), fd.ops.size(t3, dim=0)])
        assert v[0] == 4 and v[1].static == 129  # ints and extents, as shapes take them
        fd.add_output(fd.ops.expand(t4, shape=v))
        fd.add_output(fd.ops.broadcast_in_dim(fd.ops.sum(x, [1]), fd.ops.shape(x), [0]))
    a = rng.standard_normal((3, 5)).astype(np.float32)
    expanded, rows = fd.reference([a])
    np.testing.assert_array_equal(expanded, np.broadcast_to(np.arange(129), (4, 129)))
    np.testing.assert_allclose(rows, np.broadcast_to(a.sum(1, keepdims=True), (3, 5)), rtol=1e-6)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd, x: fd.define_vector([1.5]), "'values' entry 0 must be an int"),
        (lambda fd, x: fd.define_vector(3), "'values' must be a list"),
        (lambda fd, x: fd.define_vector([1], DataType.Float), "'dtype' must be DataType.Int"),
        (lambda fd, x: fd.ops.size(x, 2), "out of range for rank 1"),
        (lambda fd, x: fd.ops.shape(1.0), "fd.ops.shape: argument 'arg'"),
    ],
)
def test_vector_mistakes_name_the_argument(call: Any, message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        call(fd, fd.define_tensor([-1]))
    assert message in str(e.value)


def test_a_cpu_scalar_tensor_is_a_scalar_argument_read_on_the_host() -> None:
    import ml_dtypes

    fd = cpu_scalar_scale()
    ir = fd.fusion_ir()
    assert "%s0: f32" in ir and "fusion.broadcast_in_dim %s0 [] : f32 -> tensor<f32>" in ir
    # torch's promotion: a 0-d tensor ranks below tensors with dims (bf16 * f32[] is bf16)
    assert "-> (tensor<?x?xbf16>, tensor<f32>)" in ir
    a = np.arange(6, dtype=np.float32).reshape(2, 3).astype(ml_dtypes.bfloat16)
    for scale in (np.array(2.5, np.float32), np.float32(2.5), 2.5):
        got, plus_one = fd.reference([a, scale])
        np.testing.assert_array_equal(got, (a.astype(np.float32) * 2.5).astype(ml_dtypes.bfloat16))
        assert plus_one.shape == () and plus_one == 3.5
    assert len(fd.compile([a, np.array(2.5, np.float32)], arch="sm_90").kernels) >= 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (np.ones(3, np.float32), "input #1 (a CPU scalar tensor, is_cpu=True) must be 0-d, got"),
        ("2.5", "must be a 0-d CPU tensor or a number, got str"),
    ],
)
def test_a_cpu_scalar_input_that_is_not_one_is_an_input_error(value: Any, message: str) -> None:
    fd = cpu_scalar_scale()
    with pytest.raises(InputError, match=re.escape(message)):
        fd.reference([np.ones((2, 3), np.float32), value])


def test_alias_input_writes_the_input_and_is_not_returned(rng: np.random.Generator) -> None:
    """nvFuser's in-place update: the output goes into the input after the run (here the
    reference's), and only the other outputs are returned."""
    fd = running_mean_update()
    assert "aliases [1, -1]" in fd.fusion_ir()
    assert len(fd.outputs) == 1
    x = rng.standard_normal((33, 7)).astype(np.float32)
    running = rng.standard_normal(7).astype(np.float32)
    expected = (running.astype(np.float64) * 0.9 + x.astype(np.float64).mean(0) * 0.1).astype(
        np.float32
    )
    (mean,) = fd.reference([x, running])
    np.testing.assert_allclose(mean, x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(running, expected, rtol=1e-6, atol=1e-6)  # f32 rounding near 0


def test_an_aliased_output_of_another_shape_than_its_input_is_an_input_error() -> None:
    with FusionDefinition("alias_shape") as fd:
        x = fd.define_tensor([-1], DataType.Float)
        y = fd.define_tensor([-1], DataType.Float)
        fd.add_output(fd.ops.add(y, 1.0), alias_input=x)
        fd.add_output(y)
    x, y = np.zeros(3, np.float32), np.zeros(4, np.float32)
    with pytest.raises(InputError, match=r"output #0 has shape \[4\] but is written into"):
        fd.reference([x, y])
    assert not x.any()  # nothing written


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd, x, y: fd.add_output(x * 2.0, alias_input=x * 2.0), "must be an input of the"),
        (
            lambda fd, x, y: fd.add_output(fd.ops.cast(x, DataType.Double), alias_input=x),
            "(Double [?, 8]) cannot be written into 'alias_input' (Float [?, 8])",
        ),
        (
            lambda fd, x, y: fd.add_output(fd.ops.sum(x, [0]), alias_input=x),
            "(Float [8]) cannot be written into 'alias_input' (Float [?, 8])",
        ),
        (
            lambda fd, x, y: [fd.add_output(x + y, alias_input=x) for _ in range(2)],
            "is already written by another output",
        ),
        (
            lambda fd, x, y: fd.add_output(
                x, alias_input=fd.define_tensor([], dtype=DataType.Float, is_cpu=True)
            ),
            "is a CPU scalar tensor",
        ),
    ],
)
def test_alias_input_mistakes(call: Any, message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        x = fd.define_tensor([-1, 8], DataType.Float)
        y = fd.define_tensor([-1, 8], DataType.Float)
        call(fd, x, y)
    assert "fd.add_output" in str(e.value) and message in str(e.value)


def test_an_input_an_output_cannot_be_written_into_is_an_input_error() -> None:
    fd = running_mean_update()
    x, running = np.ones((3, 4), np.float32), np.ones(4, np.float32)
    running.flags.writeable = False
    with pytest.raises(InputError, match="is read-only: an output is written into it"):
        fd.reference([x, running])


def test_var_is_var_means_variance(rng: np.random.Generator) -> None:
    """nvFuser's `var(t, dims, correction, keepdim)`; no dims: every dim."""
    with FusionDefinition("var") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.var(x))
        fd.add_output(fd.ops.var(x, [1], 0, True))
    a = rng.standard_normal((5, 7)).astype(np.float32)
    whole, rows = fd.reference([a])
    np.testing.assert_allclose(whole, a.var(ddof=1), rtol=1e-5)
    np.testing.assert_allclose(rows, a.var(1, ddof=0, keepdims=True), rtol=1e-5)
    message = r"fd\.ops\.var: argument 'correction' must be"
    with pytest.raises(DefinitionError, match=message), FusionDefinition("bad") as bad:
        bad.ops.var(bad.define_tensor([-1], DataType.Float), None, -1)
